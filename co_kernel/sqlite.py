"""SQLite files of Co (sessions, history, memories, telemetry): connections and migrations.

Every kernel opens its own connection; WAL lets readers run beside a writer, and writes
take the lock up front (``BEGIN IMMEDIATE``) so two kernels queue instead of deadlocking
on a lock upgrade. A committed transaction survives the process being killed.

A database's schema is a list of migrations, numbered from 1; ``PRAGMA user_version``
holds the number of the last one the file has run. Opening a file runs the ones it lacks,
in order, in one transaction, so several kernels opening it at once migrate it once. A file
at a higher version than the code knows was written by a newer Co and is refused, rather
than written with a schema it does not have.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .config import private_file
from .exceptions import DatabaseTooNew

__all__ = ["BUSY_TIMEOUT_MS", "Migration", "connect", "migrate", "run_script", "set_aside", "write"]

BUSY_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class Migration:
    """One step of a database's schema."""

    version: int
    """The ``user_version`` a file is at once it has run; the first migration is 1."""
    sql: str
    """Its statements, run in order inside the migration's transaction."""


def connect(
    path: Path,
    migrations: Sequence[Migration],
    *,
    create: bool = True,
    unversioned: Callable[[sqlite3.Connection], int] | None = None,
) -> sqlite3.Connection:
    """Open a database (creating it 0600 unless ``create`` is false) and migrate it.

    The connection is in autocommit mode (``isolation_level=None``): a write that needs a
    transaction takes one with ``write``. It may be used from other threads than this one.
    """
    if create:
        private_file(path)
    conn = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _wal(conn)
        # NORMAL in WAL mode loses nothing when a process dies, only on power loss.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn, migrations, unversioned=unversioned)
    except BaseException:
        conn.close()
        raise
    return conn


def _wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode, waiting for a kernel that holds it meanwhile.

    SQLite answers the switch with "database is locked" at once, without its busy timeout,
    while another connection is making the same new file: so wait here instead.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            busy = (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
        else:
            return


def migrate(
    conn: sqlite3.Connection,
    migrations: Sequence[Migration],
    *,
    unversioned: Callable[[sqlite3.Connection], int] | None = None,
) -> int:
    """Run the migrations the database has not run yet; returns its version after them.

    ``unversioned`` is for a file made before its schema had versions: called, inside the
    migration's transaction, when the file holds tables yet its ``user_version`` is 0, it
    returns the version those tables are at (and may complete them). Raises
    ``DatabaseTooNew`` for a file whose version is past the last migration.
    """
    latest = len(migrations)
    if [m.version for m in migrations] != list(range(1, latest + 1)):
        raise ValueError(f"migrations must be numbered 1 to {latest} in order")
    if _version(conn, latest) == latest:
        return latest
    with write(conn):
        # Read again under the write lock: another kernel may have migrated it meanwhile.
        current = _version(conn, latest)
        if current < latest:
            if current == 0 and unversioned is not None and _has_tables(conn):
                current = unversioned(conn)
            for migration in migrations[current:]:
                run_script(conn, migration.sql)
            conn.execute(f"PRAGMA user_version = {latest}")
    return latest


def _version(conn: sqlite3.Connection, latest: int) -> int:
    """The file's ``user_version``; raises DatabaseTooNew when it is past ``latest``."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > latest:
        raise DatabaseTooNew(_file(conn), version, latest)
    return version


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'").fetchone() is not None


def _file(conn: sqlite3.Connection) -> str:
    """The path of the connection's main database."""
    for _seq, name, file in conn.execute("PRAGMA database_list"):
        if name == "main":
            return str(file)
    return "?"


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run a script's statements in the current transaction (``executescript`` commits first).

    Triggers keep their inner semicolons.
    """
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                conn.execute(buffer.strip())
            buffer = ""
    if buffer.strip():
        conn.execute(buffer.strip())


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
