"""The spans table of the telemetry database, and reading it back for the viewers.

One row per finished span. Columns the viewers filter and sum on (kind, session, turn,
model, tool, tokens, timing) are lifted out of the attributes; everything else stays in
the ``attributes`` and ``events`` JSON, already redacted by the exporter. The audit
table (``agent_actions``, see ``_audit``) lives in the same file, so one Datasette
instance shows both.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from ._cost import CostSum
from ._database import connect

__all__ = ["SPAN_KINDS", "SpanRow", "cost_attributes", "max_span_id", "read_spans"]

SPAN_KINDS = ("turn", "agent", "model", "tool", "other")


@dataclass
class SpanRow:
    """One stored span, as the viewers use it."""

    id: int
    """Insertion order; `tail --follow` resumes after the last one seen."""
    span_id: str
    """16 hex digits."""
    trace_id: str
    """32 hex digits; one trace per turn."""
    parent_id: str | None
    """The enclosing span, None for a turn."""
    name: str
    """Span name: ``turn 3``, ``invoke_agent co``, ``chat gpt-4o``, ``execute_tool x``."""
    kind: str
    """turn, agent, model, tool or other."""
    session_id: str | None
    """The Co session the span belongs to."""
    turn: int | None
    """Turn number within the session."""
    start_time: str
    """ISO 8601, UTC."""
    start_ns: int
    """Start, nanoseconds since the epoch."""
    end_ns: int
    """End, nanoseconds since the epoch."""
    duration_ms: float
    """end - start."""
    status: str
    """UNSET, OK or ERROR."""
    status_message: str | None
    """Why it failed, when it did."""
    model: str | None
    """The model that answered (model, agent and turn spans)."""
    tool: str | None
    """The tool that ran (tool spans)."""
    input_tokens: int | None
    """Prompt tokens (request for model spans, totals for agent and turn spans)."""
    output_tokens: int | None
    """Completion tokens, likewise."""
    attributes: dict[str, Any] = field(default_factory=dict)
    """All attributes, redacted."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """Span events (exceptions, tool decisions), redacted."""

    @property
    def cost(self) -> CostSum | None:
        """What Co priced a turn span at; None for other spans and turns traced before
        Co priced them."""
        return cost_attributes(self.attributes)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> SpanRow:
        data = dict(row)
        data.pop("end_time", None)
        data["attributes"] = json.loads(data.get("attributes") or "{}")
        data["events"] = json.loads(data.get("events") or "[]")
        return cls(**data)


def cost_attributes(attributes: dict[str, Any]) -> CostSum | None:
    """A turn's cost from its span attributes (``co.cost``, ``co.cost.unknown``)."""
    unknown = attributes.get("co.cost.unknown")
    if not isinstance(unknown, bool):
        return None
    known = attributes.get("co.cost")
    if isinstance(known, int | float) and not isinstance(known, bool):
        # A float attribute: its shortest decimal form is the Decimal it was made from.
        return CostSum.of(Decimal(repr(float(known))), unknown)
    return CostSum.of(None)


def read_spans(
    path: Path,
    *,
    session_id: str | None = None,
    kind: str | None = None,
    after_id: int = 0,
    until_id: int | None = None,
    trace_ids: list[str] | None = None,
    limit: int | None = None,
    newest: bool = False,
) -> list[SpanRow]:
    """Spans in insertion order, filtered; ``newest`` takes the last ``limit`` of them."""
    if not path.exists():
        return []
    clauses: list[str] = ["id > ?"]
    params: list[object] = [after_id]
    if until_id is not None:
        clauses.append("id <= ?")
        params.append(until_id)
    if session_id:
        # A prefix is enough, as in git: tail and traces print shortened ids.
        clauses.append("session_id LIKE ?")
        params.append(f"{session_id}%")
    if kind:
        clauses.append("kind = ?")
        params.append(kind)
    if trace_ids is not None:
        if not trace_ids:
            return []
        clauses.append(f"trace_id IN ({', '.join('?' for _ in trace_ids)})")
        params.extend(trace_ids)
    order = "DESC" if newest else "ASC"
    sql = f"SELECT * FROM spans WHERE {' AND '.join(clauses)} ORDER BY id {order}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    db = connect(path, create=False)
    try:
        rows = [SpanRow.from_row(r) for r in db.execute(sql, params).fetchall()]
    finally:
        db.close()
    return rows[::-1] if newest else rows


def max_span_id(path: Path) -> int:
    """The id of the newest stored span (0 when there is none)."""
    if not path.exists():
        return 0
    db = connect(path, create=False)
    try:
        row = db.execute("SELECT COALESCE(MAX(id), 0) FROM spans").fetchone()
    finally:
        db.close()
    return int(row[0])
