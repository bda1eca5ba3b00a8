"""Audit rows name the subagent that made a call; a log written before has the column added."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from co_kernel.telemetry import AuditEvent, AuditLog

OLD_SCHEMA = """
CREATE TABLE agent_actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, session_id TEXT NOT NULL,
    turn INTEGER NOT NULL DEFAULT 0, tool TEXT NOT NULL, action TEXT NOT NULL DEFAULT 'call',
    target TEXT, decision TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'ok',
    result_size INTEGER, duration_ms REAL, detail TEXT
);
INSERT INTO agent_actions (ts, session_id, tool, decision) VALUES (1, 's', 'old_tool', 'auto');
"""


def test_an_older_log_gains_the_agent_column_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.db"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    log = AuditLog(path)
    log.record(AuditEvent(session_id="s", tool="run_shell_command", decision="auto",
                          agent="researcher"))  # fmt: skip
    log.record(AuditEvent(session_id="s", tool="read_file", decision="auto"))
    log.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT tool, agent FROM agent_actions ORDER BY id").fetchall()
    assert rows == [("old_tool", None), ("run_shell_command", "researcher"), ("read_file", None)]
