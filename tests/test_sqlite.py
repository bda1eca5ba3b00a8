"""Migrations on real SQLite files: in order, once, atomic, refused when the file is newer,
and several processes opening each of Co's databases at once."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from co_kernel.exceptions import DatabaseTooNew, RunError
from co_kernel.sqlite import Migration, connect

from .support.sqlite_support import made_by, shape, user_version

ROOT = Path(__file__).resolve().parents[1]

# Neither statement may run twice: a migration run again would fail.
NOTES = (
    Migration(1, "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"),
    Migration(2, "ALTER TABLE notes ADD COLUMN tag TEXT;\nCREATE INDEX notes_tag ON notes(tag);"),
)


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def test_a_fresh_file_runs_every_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    with contextlib.closing(connect(path, NOTES)) as db:
        assert _columns(db, "notes") == ["id", "text", "tag"]
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        db.execute("INSERT INTO notes (text, tag) VALUES ('kept', 'a')")
    with contextlib.closing(connect(path, NOTES)) as db:  # nothing left to run
        assert db.execute("SELECT text, tag FROM notes").fetchall() == [("kept", "a")]
    assert user_version(path) == 2
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_file_at_an_earlier_version_runs_only_the_later_migrations(tmp_path: Path) -> None:
    path = made_by(
        tmp_path / "notes.db",
        NOTES[0].sql,
        user_version=1,
        rows="INSERT INTO notes (text) VALUES ('from version 1');",
    )
    with contextlib.closing(connect(path, NOTES)) as db:
        assert db.execute("SELECT text, tag FROM notes").fetchall() == [("from version 1", None)]
        indexes = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")]
    assert indexes == ["notes_tag"]
    assert user_version(path) == 2


def test_a_file_newer_than_the_code_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = made_by(tmp_path / "notes.db", "CREATE TABLE later (x);", user_version=3)
    before = shape(path)
    with pytest.raises(DatabaseTooNew) as caught:
        connect(path, NOTES)
    assert isinstance(caught.value, RunError)
    message = str(caught.value)
    assert str(path) in message
    assert "version 3" in message and "up to 2" in message
    assert (caught.value.version, caught.value.known) == (3, 2)
    assert shape(path) == before and user_version(path) == 3


def test_a_failing_migration_leaves_the_file_at_its_version(tmp_path: Path) -> None:
    path = made_by(tmp_path / "notes.db", NOTES[0].sql, user_version=1)
    broken = (NOTES[0], Migration(2, "ALTER TABLE notes ADD COLUMN tag TEXT;\nNOT SQL;"))
    with pytest.raises(sqlite3.OperationalError):
        connect(path, broken)
    assert user_version(path) == 1
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert _columns(db, "notes") == ["id", "text"]  # the first statement rolled back too


def test_migrations_out_of_order_are_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="numbered 1 to 2"):
        connect(tmp_path / "notes.db", (NOTES[1], NOTES[0]))


def test_a_file_made_before_versions_is_placed_by_its_tables(tmp_path: Path) -> None:
    seen: list[int] = []

    def unversioned(db: sqlite3.Connection) -> int:
        seen.append(len(_columns(db, "notes")))
        return 2 if "tag" in _columns(db, "notes") else 1

    old = made_by(tmp_path / "old.db", NOTES[0].sql, user_version=0)
    connect(old, NOTES, unversioned=unversioned).close()
    current = made_by(
        tmp_path / "current.db",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, tag TEXT);",
        user_version=0,
    )
    connect(current, NOTES, unversioned=unversioned).close()
    connect(tmp_path / "fresh.db", NOTES, unversioned=unversioned).close()
    assert seen == [2, 3], "asked for the two files with tables, not for the empty one"
    assert user_version(old) == user_version(current) == 2
    with contextlib.closing(sqlite3.connect(current)) as db:
        assert _columns(db, "notes") == ["id", "text", "tag"]
        assert db.execute("SELECT name FROM sqlite_master WHERE type='index'").fetchall() == []


# -- several processes at once, on each of Co's databases ----------------------------------

_OPENER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path

    kind, path, n, start = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    if kind == "sessions":
        from co_kernel.store import SessionStore, TurnRow
        from tests.support.histories import synthetic_turn
        opened = SessionStore(path)
        act = lambda: opened.save(
            f"s{n}", synthetic_turn(n), [TurnRow(prompt="p", start=0)], workspace="/w"
        )
    elif kind == "history":
        from co_kernel.store import CellHistory
        opened = CellHistory(path, "/work/a.ipynb")
        act = lambda: opened.record(1, f"cell of process {n}")
    elif kind == "memory":
        from co_kernel.memory import MemoryStore
        opened = MemoryStore(path, redact=str)
        act = lambda: opened.add(f"fact of process {n}")
    else:
        from co_kernel.telemetry import AuditEvent, AuditLog
        act = lambda: AuditLog(path).record(
            AuditEvent(session_id=f"s{n}", tool="read_file", decision="auto", agent="a")
        )
    while time.time() < start:  # every process opens the file at the same moment
        time.sleep(0.001)
    act()
    """
)

# What each database counts one row per process in, and its latest version.
_DATABASES = {
    "sessions": ("SELECT COUNT(*) FROM sessions", 1),
    "history": ("SELECT COUNT(*) FROM sessions", 1),
    "memory": ("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'process'", 1),
    "telemetry": ("SELECT COUNT(*) FROM agent_actions WHERE agent = 'a'", 3),
}


def _open_at_once(kind: str, path: Path, processes: int) -> None:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    start = time.time() + 4  # past every process's imports
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPENER, kind, str(path), str(n), str(start)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(processes)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err


@pytest.mark.parametrize("kind", sorted(_DATABASES))
def test_processes_opening_a_fresh_database_at_once_make_one_schema(
    kind: str, tmp_path: Path
) -> None:
    count, latest = _DATABASES[kind]
    _open_at_once(kind, tmp_path / "alone.db", 1)
    _open_at_once(kind, tmp_path / "shared.db", 4)
    assert shape(tmp_path / "shared.db") == shape(tmp_path / "alone.db")
    assert user_version(tmp_path / "shared.db") == latest
    with contextlib.closing(sqlite3.connect(tmp_path / "shared.db")) as db:
        assert db.execute(count).fetchone()[0] == 4


def test_processes_upgrading_an_old_telemetry_file_at_once_add_its_column_once(
    tmp_path: Path,
) -> None:
    """Migration 2 (ALTER TABLE) cannot run twice: the lock makes the later ones see it done."""
    from .telemetry.test_migrations import AUDIT_BEFORE_SUBAGENTS

    path = made_by(tmp_path / "telemetry.db", AUDIT_BEFORE_SUBAGENTS, user_version=0)
    _open_at_once("telemetry", path, 4)
    assert user_version(path) == 3
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert {"agent", "call_id"} <= set(_columns(db, "agent_actions"))
        assert db.execute("SELECT COUNT(*) FROM agent_actions WHERE agent = 'a'").fetchone() == (4,)
