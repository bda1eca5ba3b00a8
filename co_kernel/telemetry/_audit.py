"""The audit log of agent actions, in SQLite (WAL): what the agent did and who let it.

One row per decision about a tool call or a guarded access: who (session, turn), what
(tool, target such as a path, URL, channel or command), how it was decided (auto,
approved, denied, yolo, safe-prefix, scope-refused, ...), and what came of it (status,
result size, duration). Several kernels may write at once.

Targets and details pass through the session's redactor before they are written, and
each row is also handed to the listeners (the tracing adds it to the current span as a
``co.audit`` event), so the audit log and the traces tell the same story.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._database import connect

__all__ = ["DECISIONS", "AuditEvent", "AuditLog", "audit_target"]

log = logging.getLogger(__name__)

DECISIONS = (
    "waiting",
    "auto",
    "approved",
    "denied",
    "yolo",
    "safe-prefix",
    "scope-refused",
    "policy-denied",
    "interrupted",
    "timed-out",
    "rate-limited",
)


@dataclass
class AuditEvent:
    """One audited action."""

    session_id: str
    """The Co session the action belongs to."""
    tool: str
    """Tool (or guarded operation) name."""
    decision: str
    """How it was allowed or refused; one of DECISIONS."""
    turn: int = 0
    """Turn number within the session."""
    action: str = "call"
    """call, read, write, create, delete, fetch, ..."""
    target: str | None = None
    """Path, URL, channel or command the action is about (never a secret)."""
    status: str = "ok"
    """ok, error, denied, refused, interrupted."""
    result_size: int | None = None
    """Characters returned to the model."""
    duration_ms: float | None = None
    """How long the action ran."""
    detail: str | None = None
    """A short reason (why refused, what failed)."""
    agent: str | None = None
    """The subagent whose call it was; None for Co itself."""
    call_id: str | None = None
    """The model's id of the tool call: ties its question, decision and result together."""
    ts: float = field(default_factory=time.time)
    """Unix time of the decision."""


class AuditLog:
    """Append and query audit rows; one connection per thread, WAL for concurrent kernels."""

    def __init__(self, path: Path, *, redact: Callable[[str], str] | None = None) -> None:
        self.path = path
        self.redact = redact
        """Applied to target and detail before a row is written."""
        self.listeners: list[Callable[[AuditEvent], None]] = []
        """Called with every recorded event (after redaction)."""
        self._local = threading.local()
        with self._connect():  # the file made 0600 and its schema brought up to date
            pass

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = connect(self.path)
            self._local.db = db
        yield db

    def record(self, event: AuditEvent) -> int:
        """Append one row; returns its id."""
        if self.redact is not None:
            event.target = self.redact(event.target) if event.target else event.target
            event.detail = self.redact(event.detail) if event.detail else event.detail
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:  # a broken listener must not lose the row or the turn
                log.warning("audit listener failed", exc_info=True)
        row = asdict(event)
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._connect() as db:
            cur = db.execute(
                f"INSERT INTO agent_actions ({columns}) VALUES ({marks})", list(row.values())
            )
            return int(cur.lastrowid or 0)

    def record_turn(self, session_id: str, turn: int, ts: float | None = None) -> None:
        """Note that a turn started, tools or not (a re-run cell's turn keeps its number)."""
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO agent_turns (session_id, turn, ts) VALUES (?, ?, ?)",
                (session_id, turn, time.time() if ts is None else ts),
            )

    def record_session(self, session_id: str, notebook: str | None, pid: int) -> None:
        """Name the session's notebook (as the server named it) and its kernel's process."""
        if notebook and self.redact is not None:
            notebook = self.redact(notebook)
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO agent_sessions (session_id, notebook, pid, ts) "
                "VALUES (?, ?, ?, ?)",
                (session_id, notebook, pid, time.time()),
            )

    def sessions(self) -> dict[str, dict[str, Any]]:
        """Each named session's notebook and kernel process id, by session id."""
        with self._connect() as db:
            rows = db.execute("SELECT session_id, notebook, pid FROM agent_sessions").fetchall()
        return {r["session_id"]: dict(r) for r in rows}

    def turns(self, *, since: float | None = None) -> list[dict[str, Any]]:
        """Turns started (session_id, turn, ts), newest first."""
        where, params = ("WHERE ts >= ?", [since]) if since is not None else ("", [])
        with self._connect() as db:
            rows = db.execute(
                f"SELECT session_id, turn, ts FROM agent_turns {where} ORDER BY ts DESC", params
            ).fetchall()
        return [dict(r) for r in rows]

    def query(
        self,
        *,
        session_id: str | None = None,
        tool: str | None = None,
        decision: str | None = None,
        since: float | None = None,
        limit: int = 500,
    ) -> list[dict[str, Any]]:
        """Rows newest first, filtered by any of the arguments."""
        clauses, params = [], []
        for column, value in (("session_id", session_id), ("tool", tool), ("decision", decision)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            clauses.append("ts >= ?")
            params.append(since)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._connect() as db:
            rows = db.execute(
                f"SELECT * FROM agent_actions {where} ORDER BY ts DESC, id DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
        return [dict(r) for r in rows]

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


_TARGET_KEYS = (
    "path",
    "url",
    "channel",
    "cmd",
    "command",
    "file_id",
    "to",
    "query",
    "name",
    "code",
    "cell_id",
)


def audit_target(args: dict[str, Any]) -> str | None:
    """The thing a tool call is about, from its arguments (first known key wins)."""
    for key in _TARGET_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value[:500]
    return None
