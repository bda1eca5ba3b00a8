"""Cell history as typed, for the protocol's ``history_request`` (tail, range, search).

``history.db`` under the user data directory holds every cell a person ran in a Co kernel,
exactly as typed: prompts, ``%`` magics, ``!`` commands, ``%%python`` cells. IPython's own
``history.sqlite`` is never opened (the kernel's shell keeps its history in memory).

What a *session* is, as in IPython: one kernel process. Its number is given when its first
cell is recorded, and numbers only grow, so a restarted kernel is a new, higher session.
Sessions belong to a *scope*, the notebook the kernel runs (its path, as jupyter_server
names it) or, without one (``jupyter console``, nbclient), the folder it runs in. Every
request sees only its own scope's sessions: two notebooks never see each other's cells,
while a restarted kernel still sees its notebook's earlier sessions.

The requests follow IPython's ``HistoryManager``:

- ``tail``: the last ``n`` cells (10 when not given), the current session's first, then
  the earlier sessions' of the scope, oldest first in the reply;
- ``range``: a session's lines from ``start`` to ``stop`` (excluded; ``None`` to the end).
  Session 0 is the current one, -1 the one before it, and so on; a positive number is a
  session's own number;
- ``search``: cells matching a glob pattern (``*``, ``?``, ``[...]``, over the whole cell,
  as SQLite's ``GLOB``), ``unique`` keeping each text's latest occurrence, ``n`` the last n.

A history that cannot be read or written never fails a cell: the problem is logged and
the reply is empty. A file that is not a database is set aside as
``history.db.corrupt-<time>`` and a fresh one started.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ..exceptions import DatabaseTooNew
from ..sqlite import Migration, connect, set_aside, write

__all__ = ["CellHistory", "HistoryEntry"]

log = logging.getLogger(__name__)

HistoryEntry = tuple[int, int, Any]
"""(session, line, source) or, when output is asked for, (session, line, (source, None))."""

_MIGRATIONS = (
    Migration(
        1,
        """
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
""",
    ),
)
_DEFAULT_TAIL = 10
_SELECT = "SELECT session, line, source FROM cells JOIN sessions USING (session)"


class CellHistory:
    """The cells of one kernel's scope; the database is opened on first use."""

    def __init__(self, path: Path, scope: str, kernel_id: str | None = None) -> None:
        self.path = path
        self.scope = scope
        """The notebook's path, or the folder of a kernel without one."""
        self.kernel_id = kernel_id
        self.session: int | None = None
        """This kernel's session number, once its first cell is recorded."""
        self._conn: sqlite3.Connection | None = None
        # One connection; a subshell's cell may run on another thread than the main one.
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self._conn = connect(self.path, _MIGRATIONS)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError):
                    raise  # locked or unreadable: not a damaged file, leave it be
                aside = set_aside(self.path)
                log.warning(
                    "history database %s was damaged (%s): moved to %s", self.path, exc, aside
                )
                self._conn = connect(self.path, _MIGRATIONS)
        return self._conn

    def record(self, line: int, source: str) -> None:
        """Keep one cell as typed under the execution count it ran as."""
        try:
            with self._lock:
                self._record(line, source)
        except (sqlite3.Error, OSError, DatabaseTooNew) as exc:
            # Not a warning: a kernel's warnings print into the cell, and the cause (a data
            # directory that can't be written) is what the cell's own store reports.
            log.info("cell not kept in the history (%s): %s", self.path, exc)

    def _record(self, line: int, source: str) -> None:
        db = self._db()
        session = self.session
        with write(db):
            if session is None:
                cursor = db.execute(
                    "INSERT INTO sessions (scope, kernel_id, started) VALUES (?, ?, ?)",
                    (self.scope, self.kernel_id, time.time()),
                )
                session = int(cursor.lastrowid or 0)
            db.execute(
                "INSERT OR REPLACE INTO cells (session, line, source) VALUES (?, ?, ?)",
                (session, line, source),
            )
        self.session = session  # only once the session's row is committed

    def request(
        self,
        hist_access_type: str,
        *,
        output: bool = False,
        session: int = 0,
        start: int = 0,
        stop: int | None = None,
        n: int | None = None,
        pattern: str | None = None,
        unique: bool = False,
    ) -> list[HistoryEntry]:
        """Answer a ``history_request``; an unknown access type gets no entries."""
        try:
            with self._lock:
                if hist_access_type == "tail":
                    rows = self.tail(n)
                elif hist_access_type == "range":
                    rows = self.range(session, start, stop)
                elif hist_access_type == "search":
                    rows = self.search(pattern or "*", n=n, unique=unique)
                else:
                    rows = []
        except (sqlite3.Error, OSError, DatabaseTooNew) as exc:
            log.warning("history not read (%s): %s", self.path, exc)
            rows = []
        if output:  # Co keeps no outputs, like IPython without db_log_output
            return [(s, line, (source, None)) for s, line, source in rows]
        return rows

    def tail(self, n: int | None) -> list[HistoryEntry]:
        """The last ``n`` cells, this session's before earlier ones; oldest first."""
        n = _DEFAULT_TAIL if n is None else n
        if n <= 0 or not self.path.exists():
            return []
        db = self._db()
        order = "ORDER BY session DESC, line DESC LIMIT ?"
        current = db.execute(
            f"{_SELECT} WHERE scope = ? AND session = ? {order}", (self.scope, self.session, n)
        ).fetchall()
        earlier = db.execute(
            f"{_SELECT} WHERE scope = ? AND session IS NOT ? {order}",
            (self.scope, self.session, n),
        ).fetchall()
        return [tuple(r) for r in (current + earlier)[:n]][::-1]

    def range(self, session: int, start: int, stop: int | None) -> list[HistoryEntry]:
        """Lines ``start`` to ``stop`` (excluded) of a session of this scope."""
        number = self._session_number(session)
        if number is None:
            return []
        sql = f"{_SELECT} WHERE scope = ? AND session = ? AND line >= ?"
        params: list[Any] = [self.scope, number, start]
        if stop:
            sql += " AND line < ?"
            params.append(stop)
        return [tuple(r) for r in self._db().execute(f"{sql} ORDER BY line", params)]

    def search(self, pattern: str, *, n: int | None, unique: bool) -> list[HistoryEntry]:
        """Cells matching a glob pattern, oldest first; see the module docstring."""
        if not self.path.exists():
            return []
        columns = "session, line, source"
        if unique:  # SQLite takes the bare columns from the row holding the MAX
            columns += ", MAX(session * 131072 + line)"
        sql = f"SELECT {columns} FROM cells JOIN sessions USING (session)"
        sql += " WHERE scope = ? AND source GLOB ?"
        params: list[Any] = [self.scope, pattern]
        if unique:
            sql += " GROUP BY source"
        if n is not None:
            sql += " ORDER BY session DESC, line DESC LIMIT ?"
            params.append(n)
        else:
            sql += " ORDER BY session, line"
        rows = [tuple(r[:3]) for r in self._db().execute(sql, params)]
        return rows[::-1] if n is not None else rows

    def _session_number(self, session: int) -> int | None:
        """A request's session (0 current, -k the k-th before it, else a number) or None."""
        if session == 0:
            return self.session
        if not self.path.exists():
            return None
        db = self._db()
        if session > 0:
            row = db.execute(
                "SELECT session FROM sessions WHERE scope = ? AND session = ?",
                (self.scope, session),
            ).fetchone()
            return int(row[0]) if row else None
        row = db.execute(
            "SELECT session FROM sessions WHERE scope = ? AND (? IS NULL OR session < ?)"
            " ORDER BY session DESC LIMIT 1 OFFSET ?",
            (self.scope, self.session, self.session, -session - 1),
        ).fetchone()
        return int(row[0]) if row else None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
