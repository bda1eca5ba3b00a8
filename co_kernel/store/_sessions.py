"""The session store: every conversation, written after each turn, resumable after a restart.

One SQLite database (``sessions.db`` under the user data directory) holds a row per
session, its messages one row each (pydantic-ai's ``ModelMessagesTypeAdapter`` JSON), and
its turns with their usage. A turn's write touches only that turn's rows, so the cost of
saving does not grow with the length of the conversation. Only messages, prompts, model
names and token counts are stored: never settings, keys or tool credentials.

A damaged file (not a database, truncated, a page scribbled over) is moved aside as
``sessions.db.corrupt-<time>`` and a fresh store started; ``take_notice`` says so once.

Two kernels may hold the same session (both resumed it). A write can name the revision it
continues from (the ``updated`` time and ``kernel_id`` of the last write it saw); when another
kernel has written since, the write is refused with ``SessionConflict`` so the caller can
fork instead of interleaving two conversations' rows.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from ..exceptions import SessionConflict, SessionLookupError
from ..sqlite import Migration, connect, set_aside, write

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "Revision",
    "SessionInfo",
    "SessionStore",
    "StoredSession",
    "SubagentRow",
    "TurnRow",
]

_MIGRATIONS = (
    Migration(
        1,
        """
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
""",
    ),
)
_PREVIEW = 200


@dataclass
class SubagentRow:
    """A subagent run of a turn: its own tokens (nested runs' left out) and their cost."""

    name: str
    """The subagent's name."""
    model: str
    """provider:model it ran."""
    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""
    requests: int = 0
    """Model requests."""
    cost: Decimal | None = None
    """What they cost in US dollars (None: price unknown)."""


@dataclass
class TurnRow:
    """One turn as stored: where it sits and what it cost."""

    prompt: str
    """What the person asked."""
    start: int | None
    """Index of its first message in the history; None once compacted into the summary."""
    cell_id: str | None = None
    """The notebook cell that ran it."""
    model: str | None = None
    """provider:model that answered."""
    input_tokens: int = 0
    """Prompt tokens over the turn's requests."""
    output_tokens: int = 0
    """Completion tokens over the turn's requests."""
    requests: int = 0
    """Model requests made."""
    at: float = field(default_factory=time.time)
    """When the turn ended (Unix time)."""
    cost: Decimal | None = None
    """What its tokens cost in US dollars, its subagents' included (None: no price known).
    Not stored: a turn read back is priced again from its counts."""
    cost_unknown: bool = False
    """Some of its tokens had no price (``cost`` is the priced part)."""
    subagents: list[SubagentRow] = field(default_factory=list[SubagentRow])
    """Its subagent runs' own usage, each priced by its model (not stored)."""


@dataclass(frozen=True)
class Revision:
    """Which write of a session a kernel last saw: compared before the next write."""

    updated: float
    """The ``updated`` time that write set."""
    kernel_id: str | None
    """The kernel that made it."""


@dataclass
class SessionInfo:
    """A session as `%sessions` lists it."""

    id: str
    """The session id."""
    notebook: str | None
    """The notebook's path, when the frontend told it."""
    workspace: str
    """The kernel's working directory."""
    created: float
    """When the first turn was saved (Unix time)."""
    updated: float
    """When the last write happened (Unix time)."""
    turns: int
    """Turns in the conversation, compacted ones included."""
    messages: int
    """Messages stored."""
    first_prompt: str | None
    """The start of the first prompt."""
    model: str | None = None
    """The model of the last turn."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Small extras (compaction usage, the session it was forked from)."""
    kernel_id: str | None = None
    """The kernel that wrote it last."""

    @property
    def revision(self) -> Revision:
        """The write this row shows, for a conflict check on the next save."""
        return Revision(self.updated, self.kernel_id)


@dataclass
class StoredSession:
    """A whole session read back for `%resume`."""

    info: SessionInfo
    """The session's row."""
    messages: list[ModelMessage]
    """The conversation."""
    turns: list[TurnRow]
    """Its turns, oldest first."""


_INFO_COLUMNS = (
    "id, notebook, workspace, created, updated, turns, messages, first_prompt, model, meta, "
    "kernel_id"
)


def _info(row: Sequence[Any]) -> SessionInfo:
    return SessionInfo(
        id=row[0],
        notebook=row[1],
        workspace=row[2],
        created=row[3],
        updated=row[4],
        turns=row[5],
        messages=row[6],
        first_prompt=row[7],
        model=row[8],
        meta=_meta(row[9]),
        kernel_id=row[10],
    )


def _meta(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _dump(messages: Sequence[ModelMessage]) -> list[bytes]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    # The adapter serialises lists; a one-element list minus its brackets is one message.
    return [ModelMessagesTypeAdapter.dump_json([m])[1:-1] for m in messages]


def _load(rows: Sequence[bytes]) -> list[ModelMessage]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    if not rows:
        return []
    return ModelMessagesTypeAdapter.validate_json(b"[" + b",".join(rows) + b"]")


_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
P = ParamSpec("P")
R = TypeVar("R")


def _damaged(exc: BaseException | None) -> bool:
    """Whether an error (or one it happened while handling) says the file is damaged."""
    for _ in range(4):  # a failed ROLLBACK hides the error that caused it
        if exc is None:
            return False
        if isinstance(exc, sqlite3.DatabaseError):
            code = getattr(exc, "sqlite_errorcode", None)
            if (code is not None and code & 0xFF in _DAMAGED) or "malformed" in str(exc):
                return True
        exc = exc.__context__
    return False


def _recovers(
    method: Callable[Concatenate[SessionStore, P], R],
) -> Callable[Concatenate[SessionStore, P], R]:
    """Run ``method``; if the file turns out damaged, set it aside and run it on a fresh one."""

    @functools.wraps(method)
    def wrapper(self: SessionStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            self._set_aside(exc)
        return method(self, *args, **kwargs)

    return wrapper


class SessionStore:
    """Sessions in SQLite; one instance per kernel, safe beside other kernels."""

    def __init__(self, path: Path, *, redact: Callable[[str], str] | None = None) -> None:
        self.path = path
        self.redact = redact
        """Applied to messages and prompts before they are written (secrets never stored)."""
        self._conn: sqlite3.Connection | None = None
        self._notice: str | None = None

    def take_notice(self) -> str | None:
        """What a person should know about the store since the last call (once), or None."""
        notice, self._notice = self._notice, None
        return notice

    def failure(self, exc: BaseException) -> str:
        """One line on why the store could not be used, and the fix when there is one."""
        folder = self.path.parent
        if folder.exists() and not folder.is_dir():
            return (
                f"Co's data directory {folder} is a file, not a directory: move it away "
                "(or set CO_HOME to another folder) so conversations can be saved and listed."
            )
        return f"The session store {self.path} could not be read ({exc})."

    def _set_aside(self, exc: BaseException) -> None:
        """Move the damaged file (and its WAL) out of the way; the next use starts afresh."""
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        aside = set_aside(self.path)
        self._notice = (
            f"The session store {self.path} was damaged ({exc}): it was set aside as {aside} "
            "and a fresh one started, so `%sessions` and `%resume` no longer list the "
            "conversations saved before."
        )

    def _clean(self, text: str) -> str:
        return self.redact(text) if self.redact is not None and text else text

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self.path, _MIGRATIONS)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- writing -------------------------------------------------------------

    @_recovers
    def save(
        self,
        session_id: str,
        messages: Sequence[ModelMessage],
        turns: Sequence[TurnRow],
        *,
        from_message: int = 0,
        from_turn: int = 0,
        notebook: str | None = None,
        workspace: str,
        kernel_id: str | None = None,
        model: str | None = None,
        meta: dict[str, Any] | None = None,
        expect: Revision | None = None,
    ) -> Revision:
        """Write what changed: messages from ``from_message`` and turns from ``from_turn``.

        Rows past those points are replaced, so a regenerated or compacted conversation
        is stored as it now is. One transaction: a killed process leaves the last one whole.
        With ``expect``, raises SessionConflict (writing nothing) when the stored row is at
        another revision. Returns the revision this write made.
        """
        now = time.time()
        first = self._clean(turns[0].prompt)[:_PREVIEW] if turns else None
        blobs = _dump(messages[from_message:])
        if self.redact is not None:
            blobs = [self._clean(b.decode("utf-8")).encode("utf-8") for b in blobs]
        with write(self.conn) as c:
            if expect is not None:
                # Checked under the write lock, so no other kernel can write in between.
                row = c.execute(
                    "SELECT updated, kernel_id FROM sessions WHERE id = ?", (session_id,)
                ).fetchone()
                if row is not None and Revision(row[0], row[1]) != expect:
                    raise SessionConflict(session_id, row[1])
            c.execute(
                """INSERT INTO sessions (id, notebook, workspace, kernel_id, model, created,
                       updated, turns, messages, first_prompt, meta)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (id) DO UPDATE SET
                       notebook = COALESCE(excluded.notebook, notebook),
                       workspace = excluded.workspace, kernel_id = excluded.kernel_id,
                       model = excluded.model, updated = excluded.updated,
                       turns = excluded.turns, messages = excluded.messages,
                       first_prompt = COALESCE(first_prompt, excluded.first_prompt),
                       meta = excluded.meta""",
                (
                    session_id,
                    notebook,
                    workspace,
                    kernel_id,
                    model,
                    now,
                    now,
                    len(turns),
                    len(messages),
                    first,
                    json.dumps(meta or {}),
                ),
            )
            c.execute(
                "DELETE FROM messages WHERE session_id = ? AND idx >= ?", (session_id, from_message)
            )
            c.executemany(
                "INSERT INTO messages (session_id, idx, data) VALUES (?, ?, ?)",
                [(session_id, from_message + i, b) for i, b in enumerate(blobs)],
            )
            c.execute("DELETE FROM turns WHERE session_id = ? AND n >= ?", (session_id, from_turn))
            c.executemany(
                """INSERT INTO turns (session_id, n, start, cell_id, prompt, model,
                       input_tokens, output_tokens, requests, at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    (
                        session_id,
                        from_turn + i,
                        t.start,
                        t.cell_id,
                        self._clean(t.prompt),
                        t.model,
                        t.input_tokens,
                        t.output_tokens,
                        t.requests,
                        t.at,
                    )
                    for i, t in enumerate(turns[from_turn:])
                ],
            )
        return Revision(now, kernel_id)

    # -- reading -------------------------------------------------------------

    @_recovers
    def recent(self, limit: int | None = None) -> list[SessionInfo]:
        """Sessions, most recently updated first."""
        sql = f"SELECT {_INFO_COLUMNS} FROM sessions ORDER BY updated DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_info(r) for r in self.conn.execute(sql)]

    @_recovers
    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM sessions").fetchone()[0])

    @_recovers
    def latest(
        self, *, notebook: str | None = None, workspace: str | None = None, exclude: str = ""
    ) -> SessionInfo | None:
        """The newest session of a notebook (or, without one, of a workspace)."""
        column, value = ("notebook", notebook) if notebook else ("workspace", workspace)
        row = self.conn.execute(
            f"SELECT {_INFO_COLUMNS} FROM sessions WHERE {column} = ? AND id != ? "
            "ORDER BY updated DESC LIMIT 1",
            (value, exclude),
        ).fetchone()
        return _info(row) if row else None

    @_recovers
    def resolve(self, prefix: str) -> SessionInfo:
        """The one session whose id starts with ``prefix``; SessionLookupError otherwise."""
        prefix = prefix.strip().lower()
        rows = self.conn.execute(
            f"SELECT {_INFO_COLUMNS} FROM sessions WHERE id >= ? AND id < ? "
            "ORDER BY updated DESC LIMIT 6",
            (prefix, prefix + "\uffff"),
        ).fetchall()
        if len(rows) == 1:
            return _info(rows[0])
        if rows:
            shown = ", ".join(r[0][:12] for r in rows[:5])
            raise SessionLookupError(
                f"'{prefix}' matches more than one session ({shown}); type more of the id."
            )
        recent = [
            r[0]
            for r in self.conn.execute("SELECT id FROM sessions ORDER BY updated DESC LIMIT 200")
        ]
        close = difflib.get_close_matches(prefix, [i[: len(prefix)] for i in recent], n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise SessionLookupError(f"No saved session has the id '{prefix}'.{hint} See %sessions.")

    @_recovers
    def load(self, session_id: str) -> StoredSession:
        """Read a session back whole."""
        row = self.conn.execute(
            f"SELECT {_INFO_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise SessionLookupError(f"No saved session has the id '{session_id}'.")
        blobs = [
            r[0]
            for r in self.conn.execute(
                "SELECT data FROM messages WHERE session_id = ? ORDER BY idx", (session_id,)
            )
        ]
        turns = [
            TurnRow(
                prompt=r[0],
                start=r[1],
                cell_id=r[2],
                model=r[3],
                input_tokens=r[4],
                output_tokens=r[5],
                requests=r[6],
                at=r[7],
            )
            for r in self.conn.execute(
                """SELECT prompt, start, cell_id, model, input_tokens, output_tokens, requests, at
                   FROM turns WHERE session_id = ? ORDER BY n""",
                (session_id,),
            )
        ]
        try:
            return StoredSession(_info(row), _load(blobs), turns)
        except ValueError as exc:  # bytes changed on disk under SQLite's nose
            raise SessionLookupError(
                f"Session '{session_id}' is damaged in {self.path} and cannot be resumed ({exc})."
            ) from None

    @_recovers
    def ids(self, limit: int = 50) -> list[str]:
        """Recent session ids, newest first (for Tab completion)."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM sessions ORDER BY updated DESC LIMIT ?", (limit,)
            )
        ]
