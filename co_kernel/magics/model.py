"""Show the model, or switch to another one for the rest of the session.

`%model` shows the current model; `%model ollama:llama3.2` switches after checking that
the name is valid and the provider answers (a local server must list the model; a hosted
API needs its key; a `local:` model's file must be a GGUF). The conversation is kept.
Providers: gemini, ollama, openai, anthropic, compat (any OpenAI-compatible
`CO_BASE_URL`), replay (a scripted file) and local (`local:/path/to/model.gguf` or
`local:smollm2-135m`, run on this machine by llama.cpp). A model set by managed
settings (an administrator's) cannot be switched. A relative `replay:` path is looked for
in the kernel's folder, then beside the notebook (papermill's `--cwd` runs a kernel
elsewhere).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from ..inert import inert_text
from . import MagicContext, MagicError

if TYPE_CHECKING:
    from ..status import ProviderProbe
    from ..turn import SessionProtocol

USAGE = "%model [provider:model]"

# Co's provider names -> the prefixes pydantic-ai uses in its known model names.
_KNOWN_PREFIX = {"gemini": "google", "openai": "openai", "anthropic": "anthropic"}


def known_models(provider: str) -> list[str]:
    """Model names pydantic-ai lists for a hosted provider, as Co spells them."""
    from pydantic_ai.models import known_model_names

    prefix = _KNOWN_PREFIX.get(provider)
    if prefix is None:
        return []
    return [
        f"{provider}:{name.split(':', 1)[1]}"
        for name in known_model_names()
        if name.startswith(prefix + ":")
    ]


async def check_model(session: SessionProtocol, value: str) -> ProviderProbe:
    """Whether ``value`` can be switched to (key set, server answering, model listed).

    Raises ConfigError for a malformed name. Listed model ids are kept for completion.
    """
    from ..status import probe_provider

    probe = await asyncio.to_thread(
        probe_provider,
        session.settings,
        value,
        base_dir=session.workspace,
        replay_base=session.model.base_url if value == session.model.name else None,
    )
    if probe.models:
        session.model.provider_models[value.split(":", 1)[0].lower()] = probe.models
    return probe


def _beside_notebook(session: SessionProtocol, value: str) -> str:
    """``replay:PATH`` with a relative PATH the kernel's folder lacks, made absolute when
    the file is beside the kernel's notebook; any other value as it is.

    A notebook names its replay script relative to itself, as it names its data; the
    kernel runs in the notebook's folder in JupyterLab and nbval, but a client may start
    it elsewhere (papermill's ``--cwd``). Only a file inside the notebook's folder counts:
    ``..`` reaches no further than the kernel's folder would.
    """
    provider, _, name = value.partition(":")
    if provider.strip().lower() != "replay" or not name.strip():
        return value
    relative = Path(name.strip()).expanduser()
    notebook = session.notebook_path
    if relative.is_absolute() or (session.workspace / relative).exists() or not notebook:
        return value
    if not Path(notebook).is_absolute():  # a server's path below its root: no folder to use
        return value
    folder = Path(notebook).parent.resolve()
    found = (folder / relative).resolve()
    if found.is_file() and found.is_relative_to(folder):
        return f"replay:{found}"
    return value


async def run(ctx: MagicContext, args: str) -> str:
    from ..config import PROVIDERS
    from ..exceptions import ConfigError

    session = ctx.session
    current = session.model.name
    if not args:
        lines = [f"Model: **{inert_text(current)}**" if current else "No model is configured."]
        lines.append("")
        lines.append("Switch with `%model provider:model`. Providers:")
        lines += [f"- `{name}`: {what}" for name, what in PROVIDERS.items()]
        return "\n".join(lines)
    value = _beside_notebook(session, args.split()[0])
    origin = session.loaded.origins.get("model", "")
    if origin.startswith("managed") and value != current:
        # A deployer's model is a lock (a class's or a hub's endpoint), not a default.
        raise MagicError(f"The model is set by your administrator ({origin}); it stays {current}.")
    try:
        probe = await check_model(session, value)
    except ConfigError as exc:
        raise MagicError(str(exc)) from None
    unchanged = f"still {current}" if current else "no model is set"
    if not probe.ok:
        raise MagicError(f"{probe.detail.rstrip('.')}. The model is unchanged ({unchanged}).")
    label = session.model.switch(value)
    return f"Switched to **{inert_text(label)}**: {inert_text(probe.detail)}. The conversation is kept."


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    from ..config import PROVIDERS, parse_model_string

    word = arg_text.strip()
    session = ctx.session
    candidates = [f"{p}:" for p in PROVIDERS]
    providers = list(_KNOWN_PREFIX)
    current = session.model.name
    if current:
        try:
            provider, _ = parse_model_string(current)
        except Exception:
            provider = ""
        # The current provider's names first: they are the likely switch.
        if provider in providers:
            providers.remove(provider)
            providers.insert(0, provider)
        candidates.append(current)
    for provider in providers:
        candidates += known_models(provider)
    for provider, models in session.model.provider_models.items():
        candidates += [f"{provider}:{m.removesuffix(':latest')}" for m in models]
    from ..models import CATALOGUE

    candidates += [f"local:{name}" for name in CATALOGUE]
    seen: dict[str, None] = {}
    for c in candidates:
        if c.lower().startswith(word.lower()):
            seen.setdefault(c, None)
    return list(seen)
