"""Show the model in use, or switch to another for the rest of the session.

`%model` shows provider:model; `%model ollama:llama3.2` switches. Providers: gemini,
ollama, openai, anthropic, compat (any OpenAI-compatible `CO_BASE_URL`) and replay
(`replay:path/to/script.jsonl`, a recorded conversation served locally).
"""

from __future__ import annotations

from ..exceptions import ConfigError
from . import MagicContext, MagicError

USAGE = "%model [provider:model]"


async def run(ctx: MagicContext, args: str) -> str:
    session = ctx.session
    if not args:
        current = session.model_string
        return f"Model: `{current}`" if current else "No model is configured. Use `%model provider:model`."
    try:
        label = session.set_model(args.split()[0])
    except ConfigError as exc:
        raise MagicError(str(exc)) from exc
    return f"Model: `{label}` (for the rest of this session)"


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    from ..turn import PROVIDERS

    return [f"{p}:" for p in PROVIDERS if p.startswith(arg_text.strip())]
