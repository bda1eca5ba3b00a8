"""Show tokens and model requests of this conversation, in total and turn by turn.

Counts come from the provider's usage reports (the scripted and local servers estimate
them). Summaries written by `%compact` are counted on their own line.
"""

from __future__ import annotations

from . import MagicContext, MagicError
from ._render import Md, table

USAGE = "%usage"


async def run(ctx: MagicContext, args: str) -> str:
    if args:
        raise MagicError(f"%usage takes no arguments (got '{args}').")
    session = ctx.session
    turns = session.turns
    extra = session.compaction_usage
    if not turns and not extra.requests:
        return "No model requests yet in this conversation."
    rows: list[tuple[object, ...]] = []
    for n, turn in enumerate(turns, start=1):
        rows.append(
            (
                n,
                turn.prompt,
                turn.model or "",
                turn.requests,
                f"{turn.input_tokens:,}",
                f"{turn.output_tokens:,}",
            )
        )
    if extra.requests:
        rows.append(
            (
                "",
                Md("*compaction summaries*"),
                "",
                extra.requests,
                f"{extra.input_tokens:,}",
                f"{extra.output_tokens:,}",
            )
        )
    requests = sum(t.requests for t in turns) + extra.requests
    tokens_in = sum(t.input_tokens for t in turns) + extra.input_tokens
    tokens_out = sum(t.output_tokens for t in turns) + extra.output_tokens
    rows.append(("", Md("**total**"), "", requests, f"{tokens_in:,}", f"{tokens_out:,}"))
    head = (
        f"**Usage** of conversation `{session.session_id[:8]}`: {requests} request(s), "
        f"{tokens_in:,} input and {tokens_out:,} output tokens."
    )
    return head + "\n\n" + table(["#", "prompt", "model", "requests", "input", "output"], rows)
