"""What sessions cost, from their stored spans.

`%usage` sums the live conversation from ``ChatSession.turns``; this reads the telemetry
database instead, so the activity panel also answers for sessions of other kernels and past
runs.
"""

from __future__ import annotations

from pathlib import Path

from ._cost import CostSum

__all__ = ["session_costs"]


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
