"""Show tokens, model requests and what they cost, in total and turn by turn.

Counts come from the provider's usage reports (the scripted and local servers estimate
them); costs from genai-prices, or your own `model_prices` for a model it has no price for
("price unknown" otherwise). Summaries written by `%compact` are counted on their own line,
and so is each subagent run, under the turn that includes it.
"""

from __future__ import annotations

from ..telemetry import CostSum
from . import MagicContext, MagicError
from ._render import Md, code, table

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
    total = CostSum()
    for n, turn in enumerate(turns, start=1):
        cost = CostSum.of(turn.cost, turn.cost_unknown)
        total += cost
        rows.append(
            (
                n,
                turn.prompt,
                turn.model or "",
                turn.requests,
                f"{turn.input_tokens:,}",
                f"{turn.output_tokens:,}",
                str(cost),
            )
        )
        for sub in turn.subagents:
            rows.append(
                (
                    "",
                    Md(f"↳ *subagent* {code(sub.name)}"),
                    sub.model,
                    sub.requests,
                    f"{sub.input_tokens:,}",
                    f"{sub.output_tokens:,}",
                    str(CostSum.of(sub.cost)),
                )
            )
    if extra.requests:
        total += extra.cost
        rows.append(
            (
                "",
                Md("*compaction summaries*"),
                "",
                extra.requests,
                f"{extra.input_tokens:,}",
                f"{extra.output_tokens:,}",
                str(extra.cost),
            )
        )
    requests = sum(t.requests for t in turns) + extra.requests
    tokens_in = sum(t.input_tokens for t in turns) + extra.input_tokens
    tokens_out = sum(t.output_tokens for t in turns) + extra.output_tokens
    rows.append(
        ("", Md("**total**"), "", requests, f"{tokens_in:,}", f"{tokens_out:,}", str(total))
    )
    head = (
        f"**Usage** of conversation `{session.session_id[:8]}`: {requests} request(s), "
        f"{tokens_in:,} input and {tokens_out:,} output tokens, {total}."
    )
    headers = ["#", "prompt", "model", "requests", "input", "output", "cost"]
    return head + "\n\n" + table(headers, rows)
