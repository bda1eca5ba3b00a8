"""The memory store: short facts Co keeps across sessions, searchable with FTS5.

Data layer only: ``%forget`` deletes through it, and the memory tools build on it. One
SQLite database (``memory.db`` under the user data directory); an external-content FTS5
index kept in step by triggers ranks search results with bm25. Text and tags pass a
redactor before they are written, so neither the database nor its write-ahead log ever
holds a known secret (an API key the model was told and saved as a "fact").
"""

from __future__ import annotations

import builtins
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import paths
from ..sqlite import Migration, connect, write
from ..telemetry import Redactor

__all__ = ["Memory", "MemoryStore", "memory_store_path"]

_MIGRATIONS = (
    Migration(
        1,
        """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    text TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (
    text, tags, content = 'memories', content_rowid = 'id'
);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, tags)
        VALUES ('delete', old.id, old.text, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, tags)
        VALUES ('delete', old.id, old.text, old.tags);
    INSERT INTO memories_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
""",
    ),
)
_WORD = re.compile(r"\w+", re.UNICODE)


def memory_store_path() -> Path:
    """Where the memory store lives for this user (honours ``CO_HOME``)."""
    return paths().data_dir / "memory.db"


@dataclass
class Memory:
    """One remembered fact."""

    id: int
    """Stable id, shown by `%forget` completion."""
    text: str
    """The fact, as saved."""
    tags: list[str] = field(default_factory=list)
    """Labels for grouping and search."""
    created: float = 0.0
    """When it was saved (Unix time)."""
    updated: float = 0.0
    """When it last changed (Unix time)."""


def _memory(row: Sequence[Any]) -> Memory:
    return Memory(row[0], row[1], json.loads(row[2]), row[3], row[4])


def _clean_tags(tags: Iterable[str]) -> list[str]:
    return sorted({t.strip() for t in tags if t and t.strip()})


class MemoryStore:
    """Memories in SQLite with a full-text index; safe beside other kernels."""

    def __init__(
        self, path: Path | None = None, *, redact: Callable[[str], str] | None = None
    ) -> None:
        self.path = path or memory_store_path()
        self._conn: sqlite3.Connection | None = None
        self._redact = redact
        """The session's redactor; by default one that knows the environment's secrets."""

    def redact(self, text: str) -> str:
        """What is stored for ``text``: known secrets and secret shapes replaced."""
        if self._redact is None:
            self._redact = Redactor.from_settings(None).redact
        return self._redact(text)

    def _tags(self, tags: Iterable[str]) -> str:
        return json.dumps(_clean_tags(self.redact(t) for t in tags))

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self.path, _MIGRATIONS)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def add(self, text: str, tags: Iterable[str] = ()) -> int:
        """Save a memory; returns its id."""
        text = text.strip()
        if not text:
            raise ValueError("a memory needs some text")
        now = time.time()
        with write(self.conn) as c:
            cur = c.execute(
                "INSERT INTO memories (text, tags, created, updated) VALUES (?, ?, ?, ?)",
                (self.redact(text), self._tags(tags), now, now),
            )
            return int(cur.lastrowid or 0)

    def get(self, memory_id: int) -> Memory | None:
        row = self.conn.execute(
            "SELECT id, text, tags, created, updated FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return _memory(row) if row else None

    def update(
        self, memory_id: int, *, text: str | None = None, tags: Iterable[str] | None = None
    ) -> bool:
        """Change a memory's text or tags; False when there is no such memory."""
        current = self.get(memory_id)
        if current is None:
            return False
        new_text = current.text if text is None else text.strip()
        if not new_text:
            raise ValueError("a memory needs some text")
        new_tags = current.tags if tags is None else tags
        with write(self.conn) as c:
            cur = c.execute(
                "UPDATE memories SET text = ?, tags = ?, updated = ? WHERE id = ?",
                (self.redact(new_text), self._tags(new_tags), time.time(), memory_id),
            )
            return cur.rowcount > 0

    def delete(self, memory_id: int) -> bool:
        """Delete a memory; False when there was none with that id."""
        with write(self.conn) as c:
            return c.execute("DELETE FROM memories WHERE id = ?", (memory_id,)).rowcount > 0

    def list(self, limit: int | None = None) -> builtins.list[Memory]:
        """Memories, newest first."""
        sql = "SELECT id, text, tags, created, updated FROM memories ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_memory(r) for r in self.conn.execute(sql)]

    def search(self, query: str, limit: int = 10) -> builtins.list[Memory]:
        """Memories matching any word of ``query``, best first (bm25)."""
        words = _WORD.findall(query)
        if not words:
            return []
        # Quote every word: the person's punctuation is not FTS5 query syntax.
        match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        rows = self.conn.execute(
            """SELECT m.id, m.text, m.tags, m.created, m.updated FROM memories_fts
               JOIN memories m ON m.id = memories_fts.rowid
               WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts) LIMIT ?""",
            (match, limit),
        )
        return [_memory(r) for r in rows]

    def ids(self) -> builtins.list[int]:
        """Every memory id, newest first (for Tab completion)."""
        return [r[0] for r in self.conn.execute("SELECT id FROM memories ORDER BY id DESC")]
