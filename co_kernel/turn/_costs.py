"""What a turn's tokens cost, split by the model that spent them.

A subagent spends from the usage of the turn that delegated to it (one request budget for
the turn), and may run another model: its tokens are priced with its own model and taken
out of the turn's before the rest is priced with the turn's. A nested subagent's are taken
out of its parent subagent's the same way, so every token is priced once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..telemetry import CostSum, cost_of

if TYPE_CHECKING:
    from pydantic_ai.usage import RunUsage

    from ..config import Settings

__all__ = ["SubagentSpend", "own_usage", "priced", "tokens_cost"]


@dataclass
class SubagentSpend:
    """A subagent run's own tokens (its nested subagents' left out) and their cost."""

    name: str
    """The subagent's name."""
    model: str
    """provider:model it ran."""
    usage: RunUsage
    """Its requests and tokens."""
    cost: CostSum
    """What they cost."""


def priced(usage: RunUsage | None, model: str, settings: Settings) -> CostSum:
    """``usage`` of ``model`` as a cost sum; nothing spent costs nothing, priced or not."""
    if usage is None or not (usage.requests or usage.input_tokens or usage.output_tokens):
        return CostSum()
    return CostSum() + cost_of(usage, model, settings)


def tokens_cost(
    input_tokens: int, output_tokens: int, model: str | None, settings: Settings
) -> CostSum:
    """The cost of bare token counts (a turn read back from the session store, which keeps
    counts, not the usage's cache details: cache reads are priced as input there)."""
    if not (input_tokens or output_tokens):
        return CostSum()
    if not model:
        return CostSum() + None
    from pydantic_ai.usage import RequestUsage

    return CostSum() + cost_of(
        RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens), model, settings
    )


def own_usage(total: RunUsage, others: list[SubagentSpend]) -> RunUsage:
    """``total`` less the usage the subagents spent out of it."""
    rest = total
    for spend in others:
        rest = rest - spend.usage
    return rest
