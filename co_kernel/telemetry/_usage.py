"""A session's usage from its stored spans: tokens, cost, requests and tool calls.

`%usage` sums the live conversation from ``ChatSession.turns``; this reads the telemetry
database instead, so it also answers for sessions of other kernels and past runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ._cost import CostSum

__all__ = ["UsageTotals", "session_costs", "usage_from_spans"]


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
    from ._spans import read_spans

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


def session_costs(db_path: Path, session_ids: list[str]) -> dict[str, CostSum]:
    """What each session's turns cost, from their turn spans; a session none of whose
    turns were priced (traced before Co priced turns, or tracing off) is left out."""
    from ._database import connect
    from ._spans import cost_attributes

    if not session_ids or not db_path.exists():
        return {}
    costs: dict[str, CostSum] = {}
    marks = ", ".join("?" for _ in session_ids)
    db = connect(db_path, create=False)
    try:
        rows = db.execute(
            "SELECT session_id, json_extract(attributes, '$.\"co.cost\"'), "
            "json_extract(attributes, '$.\"co.cost.unknown\"') FROM spans "
            f"WHERE kind = 'turn' AND session_id IN ({marks})",
            session_ids,
        ).fetchall()
    finally:
        db.close()
    for session_id, known, unknown in rows:
        if unknown is None:
            continue
        attributes = {"co.cost.unknown": bool(unknown)}
        if known is not None:
            attributes["co.cost"] = known
        cost = cost_attributes(attributes)
        if cost is not None:
            costs[session_id] = costs.get(session_id, CostSum()) + cost
    return costs
