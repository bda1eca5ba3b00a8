"""The spend store: what every model request cost, per person, in one SQLite file.

Each request is a row, written before it is sent (a reservation: its estimated tokens and
cost, ``reserved = 1``) and settled with what the provider counted once it answers, or
deleted when it fails. The check of a day's or month's budget and the reservation are one
``BEGIN IMMEDIATE`` transaction, so two kernels of one person (a second notebook, a restart)
queue for the lock and cannot both pass the last dollar. A reservation whose kernel died
stops counting after ``STALE_AFTER`` seconds. Settling also adds the request to the totals
of its day, month and conversation (``spend_totals``), so a check reads one row per
budget, however many requests the month holds.

The file is ``<data dir>/spend.db`` unless ``spend_store`` names another: a hub deployment
points every person's kernel at one shared file (managed settings), which
``co-kernel usage`` reads.
"""

from __future__ import annotations

import getpass
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..sqlite import Migration, connect, write

__all__ = [
    "STALE_AFTER",
    "SpendRow",
    "SpendStore",
    "Spent",
    "current_person",
    "period_keys",
    "spend_store_path",
]

STALE_AFTER = 3600.0
"""Seconds after which a reservation that was never settled (its kernel died) stops counting."""

_MIGRATIONS = [
    Migration(
        1,
        """
        CREATE TABLE spend (
            id INTEGER PRIMARY KEY,
            person TEXT NOT NULL,
            day TEXT NOT NULL,
            month TEXT NOT NULL,
            at REAL NOT NULL,
            session_id TEXT NOT NULL,
            turn INTEGER NOT NULL,
            kernel_id TEXT NOT NULL,
            model TEXT NOT NULL,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL,
            reserved INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX spend_day ON spend (day, person);
        CREATE INDEX spend_session_turn ON spend (session_id, turn);
        CREATE INDEX spend_in_flight ON spend (person) WHERE reserved = 1;
        CREATE TABLE spend_totals (
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            cost REAL NOT NULL DEFAULT 0,
            tokens INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (scope, key)
        ) WITHOUT ROWID;
        CREATE TABLE budget_warnings (
            person TEXT NOT NULL,
            budget TEXT NOT NULL,
            period TEXT NOT NULL,
            PRIMARY KEY (person, budget, period)
        );
        """,
    )
]


def spend_store_path(settings: Any = None) -> Path:
    """The spend store: the ``spend_store`` setting, else ``<data dir>/spend.db``."""
    named = getattr(settings, "spend_store", None)
    if named is not None:
        return Path(named).expanduser()
    from ..config import paths

    return paths().data_dir / "spend.db"


def _create_shared(path: Path) -> None:
    """Create a shared store group-writable (0660) in the deployer's folder, so every
    user's kernel can write it (SQLite gives its -wal and -shm files the same mode)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o660)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o660)  # past the umask
    finally:
        os.close(fd)


def current_person() -> str:
    """Whose budget a kernel spends: the hub's user name, else the login name."""
    # On a hub every container may run as the same Unix user; the hub names the person.
    return os.environ.get("JUPYTERHUB_USER") or getpass.getuser()


def period_keys(at: float | None = None) -> tuple[str, str]:
    """The day (``2026-11-29``) and month (``2026-11``) a moment falls in, local time."""
    day = time.strftime("%Y-%m-%d", time.localtime(at))
    return day, day[:7]


@dataclass(frozen=True)
class Spent:
    """Cost and tokens over some rows (reservations included)."""

    cost: float = 0.0
    """US dollars over the priced requests."""
    tokens: int = 0
    """Input plus output tokens over every request."""


@dataclass(frozen=True)
class SpendRow:
    """One line of ``co-kernel usage``: a person's spend on one day with one model."""

    person: str
    day: str
    model: str
    requests: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    """None when no request of the line had a price."""
    unpriced: int
    """Requests of the line without a price."""


class SpendStore:
    """A connection to the spend store (one per kernel session)."""

    def __init__(self, path: Path, *, create: bool = True, shared: bool = False) -> None:
        self.path = path
        if create and shared:
            _create_shared(path)
        # A person's own store is created private like every other Co file; an existing
        # one (a hub's shared store) is used with the mode it has.
        self._conn = connect(path, _MIGRATIONS, create=create and not path.exists())

    def close(self) -> None:
        self._conn.close()

    # -- sums ---------------------------------------------------------------

    def _sum(self, where: str, params: Sequence[Any]) -> Spent:
        row = self._conn.execute(
            "SELECT COALESCE(SUM(cost), 0), COALESCE(SUM(input_tokens + output_tokens), 0) "
            f"FROM spend WHERE {where}",
            params,
        ).fetchone()
        return Spent(float(row[0]), int(row[1]))

    def _total(self, scope: str, key: str) -> Spent:
        row = self._conn.execute(
            "SELECT cost, tokens FROM spend_totals WHERE scope = ? AND key = ?", (scope, key)
        ).fetchone()
        return Spent(float(row[0]), int(row[1])) if row else Spent()

    def spent(
        self,
        scope: str,
        *,
        person: str,
        session_id: str = "",
        turn: int = 0,
        turn_started: float = 0.0,
    ) -> Spent:
        """What is spent in ``scope`` (turn, conversation, day, month) so far, requests in
        flight included; a turn's requests are those since it started (a cell run again
        replaces its turn).

        A turn sums its own few rows; the others read the settled totals (one row each, so
        the check costs the same on the last day of a busy month) plus the requests in
        flight, which are few."""
        now = time.time()
        if scope == "turn":
            return self._sum(
                "session_id = ? AND turn = ? AND at >= ? AND (reserved = 0 OR at > ?)",
                (session_id, turn, turn_started, now - STALE_AFTER),
            )
        day, month = period_keys(now)
        if scope == "conversation":
            key, column, value = session_id, "session_id", session_id
        elif scope == "day":
            key, column, value = f"{person}|{day}", "day", day
        else:
            key, column, value = f"{person}|{month}", "month", month
        settled = self._total(scope, key)
        flying = self._sum(
            f"reserved = 1 AND person = ? AND {column} = ? AND at > ?",
            (person, value, now - STALE_AFTER),
        )
        return Spent(settled.cost + flying.cost, settled.tokens + flying.tokens)

    # -- one request --------------------------------------------------------

    def reserve(
        self,
        *,
        person: str,
        session_id: str,
        turn: int,
        kernel_id: str,
        model: str,
        tokens: int,
        cost: float | None,
        check: Any = None,
    ) -> int:
        """Write a request's reservation and return its row id.

        ``check`` (called with this store inside the transaction, before the row is written)
        may raise to refuse the request: nothing is written then, and another kernel waits
        for the lock until the decision is made."""
        now = time.time()
        day, month = period_keys(now)
        with write(self._conn):
            if check is not None:
                check(self)
            cursor = self._conn.execute(
                "INSERT INTO spend (person, day, month, at, session_id, turn, kernel_id, model, "
                "input_tokens, output_tokens, cost, reserved) VALUES (?,?,?,?,?,?,?,?,?,0,?,1)",
                (person, day, month, now, session_id, turn, kernel_id, model, tokens, cost),
            )
        return int(cursor.lastrowid or 0)

    def settle(
        self, row_id: int, *, model: str, input_tokens: int, output_tokens: int, cost: float | None
    ) -> None:
        """Replace a reservation by what the request really used, and add it to the totals."""
        with write(self._conn):
            found = self._conn.execute(
                "UPDATE spend SET model = ?, input_tokens = ?, output_tokens = ?, cost = ?, "
                "reserved = 0 WHERE id = ? AND reserved = 1 "
                "RETURNING person, day, month, session_id",
                (model, input_tokens, output_tokens, cost, row_id),
            ).fetchone()
            if found is None:
                return
            person, day, month, session_id = found
            for scope, key in (
                ("day", f"{person}|{day}"),
                ("month", f"{person}|{month}"),
                ("conversation", session_id),
            ):
                self._conn.execute(
                    "INSERT INTO spend_totals (scope, key, cost, tokens) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (scope, key) DO UPDATE SET cost = cost + excluded.cost, "
                    "tokens = tokens + excluded.tokens",
                    (scope, key, cost or 0.0, input_tokens + output_tokens),
                )

    def release(self, row_id: int) -> None:
        """Drop the reservation of a request that was not answered."""
        self._conn.execute("DELETE FROM spend WHERE id = ? AND reserved = 1", (row_id,))

    def first_warning(self, person: str, budget: str, period: str) -> bool:
        """Note that ``budget``'s warning for ``period`` was given; False if it already was."""
        cursor = self._conn.execute(
            "INSERT OR IGNORE INTO budget_warnings (person, budget, period) VALUES (?, ?, ?)",
            (person, budget, period),
        )
        return cursor.rowcount == 1

    # -- the deployer's view ------------------------------------------------

    def rows(self, *, since: str | None = None, person: str | None = None) -> Iterator[SpendRow]:
        """Settled spend per person, day and model, oldest day first."""
        clauses, params = ["reserved = 0"], list[Any]()
        if since is not None:
            clauses.append("day >= ?")
            params.append(since)
        if person is not None:
            clauses.append("person = ?")
            params.append(person)
        query = (
            "SELECT person, day, model, COUNT(*), SUM(input_tokens), SUM(output_tokens), "
            "SUM(cost), SUM(cost IS NULL) FROM spend WHERE "
            + " AND ".join(clauses)
            + " GROUP BY person, day, model ORDER BY day, person, model"
        )
        for row in self._conn.execute(query, params):
            yield SpendRow(
                person=row[0],
                day=row[1],
                model=row[2],
                requests=int(row[3]),
                input_tokens=int(row[4] or 0),
                output_tokens=int(row[5] or 0),
                cost=None if row[7] == row[3] else float(row[6] or 0.0),
                unpriced=int(row[7]),
            )
