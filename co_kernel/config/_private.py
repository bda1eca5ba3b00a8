"""Co's own files under a user's home: readable by that user only.

Sessions, memories, telemetry, the audit log, MCP servers' logs (a server's stderr may
print a token), trust records and settings hold the user's conversations and keys. On a
shared host (JupyterHub with local users) homes are often readable by everyone: Debian's
``useradd`` makes them 0755. So Co does not rely on the home's mode: the folders it creates
are 0700 and its files 0600 (SQLite gives a database's ``-wal`` and ``-shm`` files the
database's mode), and at start ``tighten_private_files`` takes group and other access off
what an older Co, a library or an editor left there with the umask's mode.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["private_file", "private_folder", "tighten_private_files"]

_MAX_TIGHTENED = 20_000
"""Entries looked at, at most, by one start's walk: a cache holding more waits for the next."""


def private_folder(path: Path) -> Path:
    """Create ``path`` and each missing parent with mode 0700; an existing one is left."""
    missing: list[Path] = []
    folder = path
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another kernel made it meanwhile
            os.mkdir(folder, 0o700)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600, and its folders with 0700, where missing."""
    private_folder(path.parent)
    # O_EXCL: an existing file is not opened at all (it may be another's, read-only).
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return path


def _tighten(path: str, info: os.stat_result, uid: int) -> bool:
    """Take group and other bits off one file or folder of the user's; whether it changed."""
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != uid or not mode & 0o077:
        return False
    try:
        os.chmod(path, mode & 0o700)
    except OSError:
        return False
    return True


def tighten_private_files(folders: Iterable[Path], *, limit: int = _MAX_TIGHTENED) -> int:
    """Make Co's folders (config, data, cache) and everything in them the user's alone.

    Regular files and folders only: links are neither followed nor changed (a link may
    point anywhere), and the user's own bits stay (a skill's script keeps its ``x``).
    Stops after ``limit`` entries, so a start never waits on a huge cache; returns how
    many entries changed.
    """
    uid = os.getuid()
    changed = seen = 0
    stack: list[str] = []
    for root in dict.fromkeys(str(f) for f in folders):
        try:
            info = os.stat(root)  # the folder itself, also when a link names it
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            changed += _tighten(root, info, uid)
            stack.append(root)
    while stack and seen < limit:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                seen += 1
                if seen > limit:
                    break
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        changed += _tighten(entry.path, info, uid)
                        stack.append(entry.path)
                    elif stat.S_ISREG(info.st_mode):
                        changed += _tighten(entry.path, info, uid)
    return changed
