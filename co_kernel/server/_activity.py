"""The activity panel's data: one row per tool call with filters, and a summary per session."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
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


_OWN_ROWS = ("call", "request")
"""Actions that are rows of their own: tool calls, and model requests a limit refused.
Any other action (read, write, create, fetch, ...) is a guard's check made during a call,
but for the steps of a call that has no result yet (``_STEPS``)."""
_STEPS = ("ask", "decide")
"""A call's question and its decision, written before the call runs; its ``call`` row, written
when it ends, takes their place."""
_REFUSED = ("denied", "refused")
_UNFINISHED = ("waiting", "running")
"""Statuses of a call whose result has not been written yet."""


def _fold_checks(
    rows: list[dict[str, Any]], alive: Callable[[str], bool] | None = None
) -> list[dict[str, Any]]:
    """One row per tool call, newest first, its guard checks in ``checks``.

    A guard records its check while the call runs, and the call's own row is written when
    it ends: each check belongs to the next call row of the same session, turn and tool.
    The call's decision is the final one: a refusing check's (``scope-refused``, ...)
    over the approval that came before it. A check whose call has no row (the turn was
    stopped mid-call) stays a row of its own, so no refusal goes unseen.

    A call that has no result yet is its latest step: ``waiting`` while it asks, then its
    decision, ``running`` if it lets the call run. ``alive`` says whether a session's kernel
    is still there; a call left unfinished by a kernel that is gone says so.
    """
    finished = {r.get("call_id") for r in rows if r["action"] == "call" and r.get("call_id")}
    steps: dict[str, dict[str, Any]] = {}
    calls: list[dict[str, Any]] = []
    waiting: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: (r["ts"], r["id"])):
        key = (row["session_id"], row["turn"], row["tool"])
        if row["action"] in _STEPS:
            if row.get("call_id") and row["call_id"] not in finished:
                # The latest step is where the call stands; it is listed at its question's time.
                first = steps.get(row["call_id"], row)
                steps[row["call_id"]] = {**row, "ts": first["ts"], "id": first["id"]}
            continue
        if row["action"] not in _OWN_ROWS:
            waiting.setdefault(key, []).append(row)
            continue
        checks = waiting.pop(key, []) if row["action"] == "call" else []
        calls.append(_with_checks(row, checks))
    for row in steps.values():
        key = (row["session_id"], row["turn"], row["tool"])
        call = _with_checks({**row, "action": "call"}, waiting.pop(key, []))
        if call["status"] in _UNFINISHED and alive is not None and not alive(row["session_id"]):
            call["detail"] = (
                "The kernel ended before this call was decided"
                if call["status"] == "waiting"
                else "The kernel ended while this call ran"
            )
            call["status"] = "kernel ended"
        calls.append(call)
    calls.extend({**c, "checks": []} for group in waiting.values() for c in group)
    calls.sort(key=lambda r: (r["ts"], r["id"]), reverse=True)
    return calls


def _with_checks(row: dict[str, Any], checks: list[dict[str, Any]]) -> dict[str, Any]:
    """``row`` with its guard checks; a refusing check's decision is the call's."""
    # The guard checks a path when the call asks for approval and again when it runs.
    unique = {tuple(_check(c).items()): _check(c) for c in checks}
    call = {**row, "checks": list(unique.values())}
    refusal = next((c for c in checks if c["status"] in _REFUSED), None)
    if refusal is not None:
        call.update(decision=refusal["decision"], status=refusal["status"])
        call["detail"] = refusal["detail"] or call["detail"]
    elif checks and not call["detail"]:
        call["detail"] = "; ".join(f"{c['action']} {c['target']}" for c in call["checks"])
    return call


def _check(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("action", "target", "decision", "status", "detail")}


def _matches(row: dict[str, Any], query: ActivityQuery) -> bool:
    return all(
        wanted is None or row[column] == wanted
        for column, wanted in (
            ("session_id", query.session_id),
            ("tool", query.tool),
            ("decision", query.decision),
        )
    )


def _summarise(
    calls: list[dict[str, Any]],
    turns: list[dict[str, Any]],
    names: Mapping[str, str | None] | None = None,
) -> list[dict[str, Any]]:
    """One entry per session, most recent activity first; turns with or without tool calls.

    ``names``: each session's notebook as the panel shows it; a session missing from it
    ran before Co named notebooks (``notebook`` None), one named None is a console's.
    """
    names = names or {}
    sessions: dict[str, dict[str, Any]] = {}

    def entry(session_id: str, ts: float, turn: int) -> dict[str, Any]:
        found = sessions.setdefault(
            session_id,
            {"session_id": session_id, "first": ts, "last": ts, "calls": 0, "refused": 0, "turns": set()},
        )  # fmt: skip
        found["first"] = min(found["first"], ts)
        found["last"] = max(found["last"], ts)
        found["turns"].add(turn)
        return found

    for turn in turns:
        entry(turn["session_id"], turn["ts"], turn["turn"])
    for row in calls:
        found = entry(row["session_id"], row["ts"], row["turn"])
        found["calls"] += 1
        if row["status"] in _REFUSED or row["decision"] == "denied":
            found["refused"] += 1
    summary = [
        {
            **e,
            "turns": len(e["turns"]),
            "notebook": names.get(e["session_id"]),
            "console": e["session_id"] in names and names[e["session_id"]] is None,
        }
        for e in sessions.values()
    ]
    summary.sort(key=lambda e: e["last"], reverse=True)
    return summary


def notebook_name(path: str | None, root: Path | None) -> str | None:
    """A session's notebook as the panel names it: relative to the server's root when it
    lies below it, else as the kernel was told (another server's, a console's path)."""
    if not path:
        return None
    if root is not None and os.path.isabs(path):
        try:
            return Path(path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return path


def _process_alive(pid: int | None) -> bool:
    """Whether a kernel process still runs; unknown (no pid) counts as running."""
    if not pid:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # somebody else's process by that number
        return True
    return True


def read_activity(db_path: Path, query: ActivityQuery, root: Path | None = None) -> dict[str, Any]:
    """Tool calls matching the query, sessions and the filter choices, as JSON-ready data.

    A missing database is an empty log: reading never creates the file. ``root``: the
    server's root folder, to name notebooks relative to it.
    """
    from ..telemetry import DECISIONS, AuditLog, session_costs

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
        named = log.sessions()

        def alive(session_id: str) -> bool:
            found = named.get(session_id)
            return found is None or _process_alive(found["pid"])

        # Folded before filtering: a filter on a decision must see each call's final one.
        recent = _fold_checks(log.query(since=query.since, limit=_SUMMARY_ROWS), alive)
        scoped = recent
        if query.session_id is not None:  # an older session may lie past the recent rows
            raw = log.query(session_id=query.session_id, since=query.since, limit=_SUMMARY_ROWS)
            scoped = _fold_checks(raw, alive)
        turns = log.turns(since=query.since)
    finally:
        log.close()
    rows = [r for r in scoped if _matches(r, query)][: query.limit]
    names = {sid: notebook_name(found["notebook"], root) for sid, found in named.items()}
    for row in rows:
        row["notebook"] = names.get(row["session_id"])
    sessions = _summarise(recent, turns, names)
    costs = session_costs(db_path, [e["session_id"] for e in sessions])
    for entry in sessions:
        # Formatted once, the way the footer and %usage write it; None: no priced turn.
        cost = costs.get(entry["session_id"])
        entry["cost"] = str(cost) if cost is not None else None
    # The session list and the filter choices ignore the other filters, so a person
    # can switch from one session or tool to another without clearing them first.
    decisions = list(DECISIONS) + sorted({r["decision"] for r in recent} - set(DECISIONS))
    return {
        **empty,
        "rows": rows,
        "sessions": sessions,
        "tools": sorted({r["tool"] for r in recent}),
        "decisions": decisions,
    }
