"""sessions.db and history.db as earlier Co left them, opened by this one.

Before migrations, each file's schema was one script that set ``user_version`` to 1 in the
transaction that made the tables: so such a file is at migration 1 and opens as it is. The
statements below are that code's, copied as they were: the code's own may change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from co_kernel.exceptions import DatabaseTooNew
from co_kernel.store import CellHistory, SessionStore, TurnRow

from ..support.histories import synthetic_turn
from ..support.sqlite_support import made_by, shape, user_version

# co_kernel/store/_sessions.py before migrations.
SESSIONS = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    notebook TEXT,
    workspace TEXT NOT NULL,
    kernel_id TEXT,
    model TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0,
    messages INTEGER NOT NULL DEFAULT 0,
    first_prompt TEXT,
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions (updated);
CREATE INDEX IF NOT EXISTS sessions_by_notebook ON sessions (notebook, updated);
CREATE INDEX IF NOT EXISTS sessions_by_workspace ON sessions (workspace, updated);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    n INTEGER NOT NULL,
    start INTEGER,
    cell_id TEXT,
    prompt TEXT NOT NULL,
    model TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    requests INTEGER NOT NULL DEFAULT 0,
    at REAL NOT NULL,
    PRIMARY KEY (session_id, n)
) WITHOUT ROWID;
"""

SESSION_ROWS = """
INSERT INTO sessions (id, notebook, workspace, kernel_id, model, created, updated, turns,
    messages, first_prompt)
VALUES ('0ld5e55i0n', '/w/a.ipynb', '/w', 'k', 'test:model', 1, 2, 1, 0, 'What is 6*7?');
INSERT INTO turns (session_id, n, start, prompt, at) VALUES ('0ld5e55i0n', 0, 0, 'What is 6*7?', 2);
"""

# The cell history's schema (co_kernel/store/_cell_history.py) before migrations.
HISTORY = """
CREATE TABLE IF NOT EXISTS sessions (
    session INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    kernel_id TEXT,
    started REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_scope ON sessions (scope, session);
CREATE TABLE IF NOT EXISTS cells (
    session INTEGER NOT NULL REFERENCES sessions (session) ON DELETE CASCADE,
    line INTEGER NOT NULL,
    source TEXT NOT NULL,
    PRIMARY KEY (session, line)
) WITHOUT ROWID;
"""

HISTORY_ROWS = """
INSERT INTO sessions (session, scope, kernel_id, started) VALUES (1, '/w/a.ipynb', 'k', 1);
INSERT INTO cells (session, line, source) VALUES (1, 1, 'What is 6*7?');
"""


def test_a_sessions_file_of_earlier_co_keeps_its_conversations(tmp_path: Path) -> None:
    path = made_by(tmp_path / "sessions.db", SESSIONS, user_version=1, rows=SESSION_ROWS)
    before = shape(path)
    store = SessionStore(path)
    (info,) = store.recent(10)
    assert (info.id, info.first_prompt, info.turns) == ("0ld5e55i0n", "What is 6*7?", 1)
    assert [t.prompt for t in store.load("0ld5e55i0n").turns] == ["What is 6*7?"]
    store.save("new", synthetic_turn(0), [TurnRow(prompt="next", start=0)], workspace="/w")
    store.close()
    assert shape(path) == before
    assert user_version(path) == 1


def test_a_fresh_sessions_file_has_the_schema_earlier_co_made(tmp_path: Path) -> None:
    SessionStore(tmp_path / "fresh.db").recent(1)
    earlier = made_by(tmp_path / "earlier.db", SESSIONS, user_version=1)
    assert shape(tmp_path / "fresh.db") == shape(earlier)
    assert user_version(tmp_path / "fresh.db") == 1


def test_a_sessions_file_from_a_newer_co_is_refused(tmp_path: Path) -> None:
    path = made_by(tmp_path / "sessions.db", SESSIONS, user_version=2, rows=SESSION_ROWS)
    store = SessionStore(path)
    with pytest.raises(DatabaseTooNew) as caught:
        store.recent(10)
    assert str(path) in str(caught.value) and "version 2" in str(caught.value)
    assert "up to 1" in store.failure(caught.value)
    assert store.take_notice() is None, "a newer file is not damaged: it is not set aside"
    assert path.exists() and user_version(path) == 2


def test_a_history_file_of_earlier_co_keeps_its_cells(tmp_path: Path) -> None:
    path = made_by(tmp_path / "history.db", HISTORY, user_version=1, rows=HISTORY_ROWS)
    before = shape(path)
    history = CellHistory(path, "/w/a.ipynb")
    history.record(1, "%status")
    assert history.request("tail", n=10) == [(1, 1, "What is 6*7?"), (2, 1, "%status")]
    history.close()
    assert shape(path) == before
    assert user_version(path) == 1


def test_a_fresh_history_file_has_the_schema_earlier_co_made(tmp_path: Path) -> None:
    CellHistory(tmp_path / "fresh.db", "/w/a.ipynb").record(1, "%status")
    earlier = made_by(tmp_path / "earlier.db", HISTORY, user_version=1)
    assert shape(tmp_path / "fresh.db") == shape(earlier)
    assert user_version(tmp_path / "fresh.db") == 1


def test_a_history_file_from_a_newer_co_is_left_alone(tmp_path: Path) -> None:
    """The history never fails a cell: a newer file is neither read, written nor set aside."""
    path = made_by(tmp_path / "history.db", HISTORY, user_version=2, rows=HISTORY_ROWS)
    before = shape(path)
    history = CellHistory(path, "/w/a.ipynb")
    history.record(1, "%status")
    assert history.request("tail", n=10) == []
    history.close()
    assert sorted(p.name for p in tmp_path.iterdir() if "corrupt" in p.name) == []
    assert shape(path) == before and user_version(path) == 2
