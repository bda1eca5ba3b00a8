"""The activity panel's data: audit rows with filters, and a summary per session."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ActivityQuery", "parse_query", "read_activity"]

_MAX_LIMIT = 2000
_SUMMARY_ROWS = 5000


@dataclass
class ActivityQuery:
    """Filters of one activity request; None means "any"."""

    session_id: str | None = None
    """Only this Co session."""
    tool: str | None = None
    """Only this tool (or guarded operation)."""
    decision: str | None = None
    """Only this decision (approved, denied, yolo, ...)."""
    since: float | None = None
    """Only rows at or after this Unix time."""
    limit: int = 200
    """At most this many rows, newest first."""


def parse_query(args: Mapping[str, str]) -> ActivityQuery:
    """Query arguments to filters; ValueError names the argument and what it accepts."""
    known = {"session", "tool", "decision", "since", "limit"}
    unknown = sorted(set(args) - known)
    if unknown:
        raise ValueError(
            f"unknown filter {', '.join(unknown)}; use session, tool, decision, since or limit"
        )
    query = ActivityQuery(
        session_id=args.get("session") or None,
        tool=args.get("tool") or None,
        decision=args.get("decision") or None,
    )
    if args.get("since"):
        try:
            since = float(args["since"])
        except ValueError:
            since = math.nan
        if not math.isfinite(since) or since < 0:
            raise ValueError(f"since must be a Unix time in seconds, not {args['since']!r}")
        query.since = since
    if args.get("limit"):
        try:
            limit = int(args["limit"])
        except ValueError:
            limit = 0
        if not 1 <= limit <= _MAX_LIMIT:
            raise ValueError(f"limit must be a whole number from 1 to {_MAX_LIMIT}")
        query.limit = limit
    return query


def _summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per session, most recent activity first."""
    sessions: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = sessions.setdefault(
            row["session_id"],
            {
                "session_id": row["session_id"],
                "first": row["ts"],
                "last": row["ts"],
                "calls": 0,
                "refused": 0,
                "turns": set(),
            },
        )
        entry["first"] = min(entry["first"], row["ts"])
        entry["last"] = max(entry["last"], row["ts"])
        entry["calls"] += 1
        entry["turns"].add(row["turn"])
        if row["status"] in ("denied", "refused") or row["decision"] in ("denied",):
            entry["refused"] += 1
    summary = [{**e, "turns": len(e["turns"])} for e in sessions.values()]
    summary.sort(key=lambda e: e["last"], reverse=True)
    return summary


def read_activity(db_path: Path, query: ActivityQuery) -> dict[str, Any]:
    """Rows matching the query, sessions and the filter choices, as JSON-ready data.

    A missing database is an empty log: reading never creates the file.
    """
    from ..telemetry import DECISIONS, AuditLog

    empty: dict[str, Any] = {
        "db": str(db_path),
        "rows": [],
        "sessions": [],
        "tools": [],
        "decisions": list(DECISIONS),
    }
    if not db_path.exists():
        return empty
    log = AuditLog(db_path)
    try:
        rows = log.query(
            session_id=query.session_id,
            tool=query.tool,
            decision=query.decision,
            since=query.since,
            limit=query.limit,
        )
        # The session list and the filter choices ignore the other filters, so a person
        # can switch from one session or tool to another without clearing them first.
        recent = log.query(since=query.since, limit=_SUMMARY_ROWS)
    finally:
        log.close()
    decisions = list(DECISIONS) + sorted({r["decision"] for r in recent} - set(DECISIONS))
    return {
        **empty,
        "rows": rows,
        "sessions": _summarise(recent),
        "tools": sorted({r["tool"] for r in recent}),
        "decisions": decisions,
    }
