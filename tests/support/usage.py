"""A session's usage summed from the spans it stored: tokens, cost, requests, tool calls.

Co itself sums usage from the live conversation (``%usage``) and costs from turn spans
(``co_kernel.telemetry.session_costs``); the tests sum the stored spans to check what the
kernel wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from co_kernel.telemetry import CostSum
from co_kernel.telemetry._spans import read_spans

__all__ = ["UsageTotals", "usage_from_spans"]


@dataclass
class UsageTotals:
    """Sums over a session's spans, overall and per model."""

    turns: int = 0
    """Turns recorded."""
    input_tokens: int = 0
    """Prompt tokens over all model requests."""
    output_tokens: int = 0
    """Completion tokens over all model requests."""
    requests: int = 0
    """Model requests."""
    tool_calls: int = 0
    """Tool calls that ran."""
    duration: float = 0.0
    """Seconds spent in turns."""
    cost: CostSum = field(default_factory=CostSum)
    """What the turns cost as Co priced them (a turn traced before that is unknown)."""
    by_model: dict[str, UsageTotals] | None = None
    """The request sums per model as the provider named it (None inside an entry)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def usage_from_spans(db_path: Path, session_id: str) -> UsageTotals:
    """Totals of a session (an id or a prefix of one) from its stored spans."""
    totals = UsageTotals(by_model={})
    assert totals.by_model is not None
    for span in read_spans(db_path, session_id=session_id):
        if span.kind == "turn":
            totals.turns += 1
            totals.duration += span.duration_ms / 1000
            cost = span.cost
            totals.cost += cost if cost is not None else None
        elif span.kind == "model":
            per = totals.by_model.setdefault(span.model or "unknown", UsageTotals())
            for sums in (totals, per):
                sums.input_tokens += span.input_tokens or 0
                sums.output_tokens += span.output_tokens or 0
                sums.requests += 1
        elif span.kind == "tool":
            totals.tool_calls += 1
    return totals
