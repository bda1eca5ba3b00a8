"""Which files under a folder changed since last asked, from Linux inotify.

The notes index would otherwise stat every file of the vault on every search (10,000
system calls for a large vault, the larger part of a search). With a watcher it re-reads
only the files the kernel reported. Events are queued by the kernel inside the system
call that changed the file, so a change made before a search is always seen by it.
Anything the watcher cannot describe precisely (a folder created, moved or deleted, a
queue overflow) makes :meth:`DirWatcher.changes` return None: the caller walks again.
Where inotify is missing (macOS, Windows) :func:`watch` returns None and callers walk.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

__all__ = ["DirWatcher", "watch"]

_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF, _OVERFLOW, _IGNORED = 0x400, 0x800, 0x4000, 0x8000
_ONLYDIR, _ISDIR = 0x01000000, 0x40000000
_MASK = (
    _MODIFY
    | _ATTRIB
    | _CLOSE_WRITE
    | _MOVED_FROM
    | _MOVED_TO
    | _CREATE
    | _DELETE
    | (_DELETE_SELF | _MOVE_SELF | _ONLYDIR)
)
_HEADER = struct.Struct("iIII")


class DirWatcher:
    """inotify watches on a folder and its subfolders (hidden and linked ones excluded)."""

    def __init__(self, root: str, libc: ctypes.CDLL, skip: frozenset[str]) -> None:
        self.root = root.rstrip("/")
        self._libc = libc
        self._skip = skip
        self._dirs: dict[int, str] = {}
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        try:
            self._add_tree()
        except OSError:
            self.close()
            raise

    def _add(self, path: str) -> None:
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), _MASK)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"inotify_add_watch failed ({errno.errorcode.get(code, code)})")
        rel = path[len(self.root) + 1 :] if path != self.root else ""
        self._dirs[wd] = rel

    def _add_tree(self) -> None:
        stack = [self.root]
        while stack:
            folder = stack.pop()
            self._add(folder)
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.name in self._skip:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)

    def changes(self) -> set[str] | None:
        """Relative paths of files changed since the last call, or None: walk again."""
        changed: set[str] = set()
        rewalk = False
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                start = offset + _HEADER.size
                name = os.fsdecode(data[start : start + length].rstrip(b"\0"))
                offset = start + length
                if mask & (_OVERFLOW | _ISDIR | _DELETE_SELF | _MOVE_SELF | _IGNORED):
                    rewalk = True
                    continue
                folder = self._dirs.get(wd)
                if folder is None:
                    rewalk = True
                elif name:
                    changed.add(f"{folder}/{name}" if folder else name)
        return None if rewalk else changed

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def watch(root: str, skip: frozenset[str]) -> DirWatcher | None:
    """A watcher for ``root``, or None where inotify is not available or refuses."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1  # noqa: B018 - probe: missing in some libcs
    except (OSError, AttributeError):
        return None
    try:
        return DirWatcher(root, libc, skip)
    except OSError:  # e.g. fs.inotify.max_user_watches reached: walking still works
        return None
