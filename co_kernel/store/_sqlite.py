"""SQLite connections for Co's stores: WAL, a busy timeout, a versioned schema.

Every kernel opens its own connection; WAL lets readers run beside a writer, and writes
take the lock up front (``BEGIN IMMEDIATE``) so two kernels queue instead of deadlocking
on a lock upgrade. A committed transaction survives the process being killed.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from ..config import private_file

__all__ = ["connect", "set_aside", "write"]

BUSY_TIMEOUT_MS = 10_000


def connect(path: Path, schema: str, version: int) -> sqlite3.Connection:
    """Open (creating if needed) a database and bring its schema to ``version``."""
    private_file(path)
    conn = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode loses nothing when a process dies, only on power loss.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        current = conn.execute("PRAGMA user_version").fetchone()[0]
        if current < version:
            with write(conn):
                # Re-read under the lock: another kernel may have created it meanwhile.
                if conn.execute("PRAGMA user_version").fetchone()[0] < version:
                    for statement in _statements(schema):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {version}")
    except BaseException:
        conn.close()
        raise
    return conn


def set_aside(path: Path) -> Path:
    """Move a damaged database (and its WAL) to ``<name>.corrupt-<time>``; returns where."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    path.replace(aside)
    for suffix in ("-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            extra.replace(aside.with_name(aside.name + suffix))
    return aside


def _statements(script: str) -> list[str]:
    """Split a schema script into statements (triggers keep their inner semicolons)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


@contextlib.contextmanager
def write(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction that holds the write lock from its start."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")
