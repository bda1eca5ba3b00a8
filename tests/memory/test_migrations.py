"""memory.db as earlier Co left it, opened by this one.

Before migrations its schema was one script that set ``user_version`` to 1 in the
transaction that made the tables: such a file is at migration 1 and opens as it is. The
statements below are that code's, copied as they were: the code's own may change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from co_kernel.exceptions import DatabaseTooNew
from co_kernel.memory import MemoryStore

from ..support.sqlite_support import made_by, shape, user_version

# co_kernel/memory/_store.py before migrations.
MEMORY = """
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
"""

MEMORY_ROWS = """
INSERT INTO memories (text, tags, created, updated)
VALUES ('The report is due on Friday', '["work"]', 1, 1);
"""


def test_a_memory_file_of_earlier_co_keeps_its_memories_searchable(tmp_path: Path) -> None:
    path = made_by(tmp_path / "memory.db", MEMORY, user_version=1, rows=MEMORY_ROWS)
    before = shape(path)
    store = MemoryStore(path, redact=str)
    (found,) = store.search("when is the report due")
    assert (found.text, found.tags) == ("The report is due on Friday", ["work"])
    store.add("Plots use the viridis palette", ["prefs"])
    assert [m.text for m in store.search("viridis")] == ["Plots use the viridis palette"]
    store.close()
    assert shape(path) == before
    assert user_version(path) == 1


def test_a_fresh_memory_file_has_the_schema_earlier_co_made(tmp_path: Path) -> None:
    MemoryStore(tmp_path / "fresh.db", redact=str).ids()
    earlier = made_by(tmp_path / "earlier.db", MEMORY, user_version=1)
    assert shape(tmp_path / "fresh.db") == shape(earlier)
    assert user_version(tmp_path / "fresh.db") == 1


def test_a_memory_file_from_a_newer_co_is_refused(tmp_path: Path) -> None:
    path = made_by(tmp_path / "memory.db", MEMORY, user_version=2, rows=MEMORY_ROWS)
    store = MemoryStore(path, redact=str)
    with pytest.raises(DatabaseTooNew) as caught:
        store.ids()
    assert str(path) in str(caught.value)
    assert "schema version 2, but this Co knows versions up to 1" in str(caught.value)
    assert user_version(path) == 2
