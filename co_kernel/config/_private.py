"""Co's own files under a user's home: readable by that user only.

Sessions, memories, telemetry and the audit log hold the user's conversations. On a
shared host (JupyterHub with local users) homes are often readable by everyone: Debian's
``useradd`` makes them 0755. So Co does not rely on the home's mode: the folders it
creates for its stores are 0700 and its databases 0600 (SQLite gives a database's
``-wal`` and ``-shm`` files the database's mode). Existing folders keep their mode.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["private_file"]


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600, and its folder with 0700, where missing."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # O_EXCL: an existing file is not opened at all (it may be another's, read-only).
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return path
