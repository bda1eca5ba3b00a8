"""Co's SQLite stores under the user data directory (``paths().data_dir``)."""

from __future__ import annotations

from pathlib import Path

from ..config import paths
from ..exceptions import SessionConflict, SessionLookupError
from ._cell_history import CellHistory, HistoryEntry
from ._sessions import (
    Revision,
    SessionInfo,
    SessionStore,
    StoredSession,
    SubagentRow,
    TurnRow,
)

__all__ = [
    "CellHistory",
    "HistoryEntry",
    "Revision",
    "SessionConflict",
    "SessionInfo",
    "SessionLookupError",
    "SessionStore",
    "StoredSession",
    "SubagentRow",
    "TurnRow",
    "history_path",
    "session_store_path",
]


def session_store_path() -> Path:
    """Where the session store lives for this user (honours ``CO_HOME``)."""
    return paths().data_dir / "sessions.db"


def history_path() -> Path:
    """Where the cell history lives for this user (honours ``CO_HOME``)."""
    return paths().data_dir / "history.db"
