"""The telemetry database's schema: the spans (``_spans``) and the audit log (``_audit``).

Both live in one file, so Datasette shows them side by side, and so share one list of
migrations: the file has one ``user_version``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..sqlite import Migration, run_script
from ..sqlite import connect as _connect

__all__ = ["MIGRATIONS", "connect"]

MIGRATIONS = (
    Migration(
        1,
        """
CREATE TABLE IF NOT EXISTS spans (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    span_id TEXT NOT NULL UNIQUE,
    trace_id TEXT NOT NULL,
    parent_id TEXT,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    session_id TEXT,
    turn INTEGER,
    start_time TEXT NOT NULL,
    end_time TEXT NOT NULL,
    start_ns INTEGER NOT NULL,
    end_ns INTEGER NOT NULL,
    duration_ms REAL NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    model TEXT,
    tool TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    attributes TEXT NOT NULL DEFAULT '{}',
    events TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS spans_session ON spans(session_id, start_ns);
CREATE INDEX IF NOT EXISTS spans_trace ON spans(trace_id);
CREATE INDEX IF NOT EXISTS spans_kind ON spans(kind, start_ns);
CREATE TABLE IF NOT EXISTS agent_actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    session_id TEXT NOT NULL,
    turn INTEGER NOT NULL DEFAULT 0,
    tool TEXT NOT NULL,
    action TEXT NOT NULL DEFAULT 'call',
    target TEXT,
    decision TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'ok',
    result_size INTEGER,
    duration_ms REAL,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS agent_actions_session ON agent_actions(session_id, ts);
CREATE INDEX IF NOT EXISTS agent_actions_tool ON agent_actions(tool, ts);
CREATE TABLE IF NOT EXISTS agent_turns (
    session_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    ts REAL NOT NULL,
    PRIMARY KEY (session_id, turn)
);
""",
    ),
    # Audit rows of a subagent's tool calls name the subagent (None for Co itself).
    Migration(2, "ALTER TABLE agent_actions ADD COLUMN agent TEXT;"),
    # The activity panel follows one call from its question to its result by the call's id,
    # and names each session's notebook and tells a live kernel from one that is gone.
    Migration(
        3,
        """
ALTER TABLE agent_actions ADD COLUMN call_id TEXT;
CREATE TABLE IF NOT EXISTS agent_sessions (
    session_id TEXT PRIMARY KEY,
    notebook TEXT,
    pid INTEGER,
    ts REAL NOT NULL
);
""",
    ),
)


def _unversioned(conn: sqlite3.Connection) -> int:
    """The version of a file made before the schema had versions.

    The span exporter and the audit log each made their own tables with the statements of
    migration 1, so the file may hold some of them only: the missing ones are made here
    (``IF NOT EXISTS`` leaves the others be). The audit table has migration 2's column
    when a Co since subagents opened it.
    """
    run_script(conn, MIGRATIONS[0].sql)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(agent_actions)")}
    return 2 if "agent" in columns else 1


def connect(path: Path, *, create: bool = True) -> sqlite3.Connection:
    """A connection to the telemetry database, migrated, with rows as ``sqlite3.Row``."""
    db = _connect(path, MIGRATIONS, create=create, unversioned=_unversioned)
    db.row_factory = sqlite3.Row
    return db
