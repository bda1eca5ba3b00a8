"""Show the size of the conversation: turns, messages, estimated tokens, what the model is sent.

The model is sent a governed view: past `max_history_messages` the oldest turns are left
out (cut back to half the window, so requests share their start), and older tool outputs
are cut to `tool_output_trim_chars`. The tokens of a request are counted by the model's own
tokenizer where its server counts them (a local model, once loaded); elsewhere they are
estimated and calibrated by the prompt tokens the provider reported for the last requests.
When the prompt passes `auto_compact_ratio` of `context_window_tokens`, Co compacts first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import MagicContext, MagicError
from ._render import table

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

USAGE = "%history"

_RECENT = 10

_HOW = {
    "tokenizer": "counted by the model's tokenizer (its llama.cpp server's chat template "
    "and /tokenize)",
    "calibrated": "calibrated by the prompt tokens the last requests were billed",
    "estimated": "four characters a token (no request has reported its count yet)",
}


def _tool_calls(messages: Sequence[ModelMessage]) -> int:
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    return sum(
        1
        for m in messages
        if isinstance(m, ModelResponse)
        for p in m.parts
        if isinstance(p, ToolCallPart)
    )


async def run(ctx: MagicContext, args: str) -> str:
    from ..turn import estimate_tokens, is_summary, token_calibration

    if args:
        raise MagicError(f"%history takes no arguments (got '{args}').")
    session = ctx.session
    settings = session.settings
    history = session.history
    if not history:
        return "The conversation is empty."
    live = session.live_turns
    folded = len(session.turns) - len(live)
    view = session.sent_view()
    calibration = token_calibration(history, settings)
    scale = 1.0 if calibration is None else calibration[0]
    full_tokens = round(estimate_tokens(history) * scale)
    sent = await session.prompt_tokens()
    sent_tokens = sent.tokens
    counted = _HOW[sent.how]
    window = session.model.context_window
    limit = int(settings.auto_compact_ratio * window)
    turns = f"{len(live)}"
    if is_summary(history[0]):
        turns += f" after a summary of {folded} earlier turn(s)" if folded else " after a summary"
    rows = [
        ("turns", turns),
        ("messages", f"{len(history)} ({len(view)} sent to the model)"),
        ("tool calls", str(_tool_calls(history))),
        (
            "estimated tokens",
            f"~{full_tokens:,} in the conversation; ~{sent_tokens:,} per request with the "
            "instructions",
        ),
        ("token counts", counted),
        (
            "governance",
            f"window {settings.max_history_messages} messages; old tool outputs cut to "
            f"{settings.tool_output_trim_chars:,} characters",
        ),
        (
            "auto-compaction",
            f"at ~{limit:,} tokens ({settings.auto_compact_ratio:.0%} of {window:,})",
        ),
    ]
    # The session names the table's columns: a Markdown table needs a header row, and an
    # empty one shows as a blank bar above the first row.
    out = [table(["Conversation", f"`{session.session_id[:8]}`"], rows)]
    if live:
        recent = []
        first = len(session.turns) - len(live)
        for n, turn in enumerate(live[-_RECENT:], start=first + max(0, len(live) - _RECENT) + 1):
            recent.append((n, turn.prompt, turn.requests, turn.input_tokens + turn.output_tokens))
        out.append("**Recent turns**")
        out.append(table(["#", "prompt", "requests", "tokens"], recent))
    return "\n\n".join(out)
