"""Databases as an earlier Co left them, and a schema's shape to compare two files by."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any


def made_by(path: Path, ddl: str, *, user_version: int, rows: str = "") -> Path:
    """A file holding ``ddl`` (and ``rows``) at ``user_version``, in WAL mode as Co's are."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.executescript(f"BEGIN; {ddl}\n{rows}\nPRAGMA user_version = {user_version}; COMMIT;")
    return path


def user_version(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return int(db.execute("PRAGMA user_version").fetchone()[0])


def shape(path: Path) -> dict[str, Any]:
    """Tables with their columns (name, type, not null, default, key), indexes and triggers.

    Not the stored SQL text: a column added by ALTER TABLE reads differently there.
    """
    with contextlib.closing(sqlite3.connect(path)) as db:
        objects = db.execute(
            "SELECT type, name, tbl_name FROM sqlite_master"
            " WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
        ).fetchall()
        tables = {
            name: [row[1:] for row in db.execute(f'PRAGMA table_info("{name}")')]
            for kind, name, _ in objects
            if kind == "table"
        }
        indexes = {
            name: [row[1:] for row in db.execute(f'PRAGMA index_xinfo("{name}")')]
            for kind, name, _ in objects
            if kind == "index"
        }
    return {"objects": objects, "tables": tables, "indexes": indexes}
