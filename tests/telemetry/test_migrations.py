"""telemetry.db as earlier Co left it, opened by this one: rows kept, tables completed.

The spans exporter and the audit log share the file. Before its schema had versions each
made its own tables (so a file may hold either set or both) and left ``user_version`` at 0;
the audit log added its ``agent`` column itself. The statements below are theirs, copied
as they were: the code's own may change, these must not.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from co_kernel.exceptions import DatabaseTooNew
from co_kernel.telemetry import AuditEvent, AuditLog
from co_kernel.telemetry._spans import max_span_id, read_spans

from ..support.sqlite_support import made_by, shape, user_version

# The spans exporter's statements (co_kernel/telemetry/_spans.py) before migrations.
SPANS = """
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
"""

# The audit log's statements (co_kernel/telemetry/_audit.py) before migrations.
AUDIT = """
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
    detail TEXT,
    agent TEXT
);
CREATE INDEX IF NOT EXISTS agent_actions_session ON agent_actions(session_id, ts);
CREATE INDEX IF NOT EXISTS agent_actions_tool ON agent_actions(tool, ts);
CREATE TABLE IF NOT EXISTS agent_turns (
    session_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    ts REAL NOT NULL,
    PRIMARY KEY (session_id, turn)
);
"""

# The audit log before subagents were named: no agent column.
AUDIT_BEFORE_SUBAGENTS = AUDIT.replace("    detail TEXT,\n    agent TEXT\n", "    detail TEXT\n")
assert "agent TEXT" not in AUDIT_BEFORE_SUBAGENTS

# Migration 3: the call id that ties a call's question, decision and result together, and
# the sessions' notebooks and kernel processes (the activity panel).
CALLS_AND_SESSIONS = """
ALTER TABLE agent_actions ADD COLUMN call_id TEXT;
CREATE TABLE IF NOT EXISTS agent_sessions (
    session_id TEXT PRIMARY KEY,
    notebook TEXT,
    pid INTEGER,
    ts REAL NOT NULL
);
"""

SPAN_ROW = """
INSERT INTO spans (span_id, trace_id, name, kind, session_id, turn, start_time, end_time,
    start_ns, end_ns, duration_ms, status)
VALUES ('00f067aa0ba902b7', '4bf92f3577b34da6a3ce929d0e0e4736', 'turn 1', 'turn', 'old', 1,
    '2026-01-01T00:00:00.000+00:00', '2026-01-01T00:00:01.000+00:00', 1, 2, 1000.0, 'OK');
"""
AUDIT_ROW = """
INSERT INTO agent_actions (ts, session_id, tool, decision) VALUES (1, 'old', 'read_file', 'auto');
INSERT INTO agent_turns (session_id, turn, ts) VALUES ('old', 1, 1);
"""
LATEST = 3


def _latest(tmp_path: Path) -> dict[str, object]:
    """The shape of a file this Co makes."""
    AuditLog(tmp_path / "fresh.db").close()
    return shape(tmp_path / "fresh.db")


def _columns(path: Path, table: str) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def test_a_fresh_file_has_the_tables_earlier_co_made(tmp_path: Path) -> None:
    earlier = made_by(tmp_path / "earlier.db", SPANS + AUDIT + CALLS_AND_SESSIONS, user_version=0)
    assert _latest(tmp_path) == shape(earlier)
    assert user_version(tmp_path / "fresh.db") == LATEST


def test_a_file_of_spans_and_audit_rows_keeps_them(tmp_path: Path) -> None:
    path = made_by(
        tmp_path / "telemetry.db",
        SPANS + AUDIT,
        user_version=0,
        rows=SPAN_ROW + AUDIT_ROW + "UPDATE agent_actions SET agent = 'researcher';",
    )
    log = AuditLog(path)
    (row,) = log.query()
    assert (row["session_id"], row["tool"], row["agent"]) == ("old", "read_file", "researcher")
    assert log.turns() == [{"session_id": "old", "turn": 1, "ts": 1.0}]
    log.record(AuditEvent(session_id="new", tool="write_file", decision="approved"))
    log.close()
    (span,) = read_spans(path)
    assert (span.name, span.session_id, span.duration_ms) == ("turn 1", "old", 1000.0)
    assert user_version(path) == LATEST
    assert shape(path) == _latest(tmp_path)


def test_a_file_of_spans_only_gains_the_audit_tables(tmp_path: Path) -> None:
    """Tracing on, no audit row yet: only the exporter had opened the file."""
    path = made_by(tmp_path / "telemetry.db", SPANS, user_version=0, rows=SPAN_ROW)
    assert max_span_id(path) == 1
    assert user_version(path) == LATEST
    assert _columns(path, "agent_actions")[-2:] == ["agent", "call_id"]
    assert shape(path) == _latest(tmp_path)
    AuditLog(path).close()
    assert [s.name for s in read_spans(path)] == ["turn 1"]


def test_an_audit_log_before_subagents_gains_the_agent_column(tmp_path: Path) -> None:
    path = made_by(
        tmp_path / "telemetry.db", AUDIT_BEFORE_SUBAGENTS, user_version=0, rows=AUDIT_ROW
    )
    log = AuditLog(path)
    log.record(AuditEvent(session_id="new", tool="write_file", decision="auto", agent="helper"))
    rows = [(r["session_id"], r["agent"]) for r in log.query()]
    log.close()
    assert sorted(rows, key=str) == [("new", "helper"), ("old", None)]
    assert user_version(path) == LATEST
    assert shape(path) == _latest(tmp_path)


def test_a_file_from_a_newer_co_is_refused(tmp_path: Path) -> None:
    path = made_by(tmp_path / "telemetry.db", SPANS + AUDIT, user_version=LATEST + 1, rows=SPAN_ROW)
    with pytest.raises(DatabaseTooNew, match=f"{path} is at schema version {LATEST + 1}"):
        AuditLog(path)
    with pytest.raises(DatabaseTooNew, match=f"up to {LATEST}"):
        read_spans(path)
    assert user_version(path) == LATEST + 1
