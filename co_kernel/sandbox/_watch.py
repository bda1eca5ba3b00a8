"""Which folders of a bind-mounted workspace had entries made, renamed in or chmodded, from
the kernel's inotify: so the look after each command (``_hazards.survey``) reads those
folders only, not the whole workspace.

Changes the container makes through its bind mount reach the host's inode, and so the
watches. A watch per folder, added as folders appear. Whenever the watch cannot tell (no
inotify, the watch limit reached, its queue overflowed, a folder moved, which leaves the
paths it knows wrong) ``changed`` says so and the caller walks the whole workspace and
calls ``reset``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import struct
from collections.abc import Collection

__all__ = ["WorkspaceWatch"]

_IN_ATTRIB = 0x004
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x1000000
_IN_DONT_FOLLOW = 0x2000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_MASK = _IN_ATTRIB | _IN_CREATE | _IN_MOVED_TO | _IN_MOVED_FROM | _IN_MOVE_SELF
_EVENT = struct.Struct("iIII")
_MAX_WATCHES = 20_000
"""Folders watched at most; a bigger workspace is walked after each command instead."""


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name, use_errno=True) if name else None
    except OSError:
        return None


class WorkspaceWatch:
    """The inotify watches over one workspace's folders."""

    def __init__(self, root: str, skip: Collection[str]) -> None:
        self.root = root
        self.skip = set(skip)
        self._libc = _libc()
        self._fd = -1
        self._dirs: dict[int, str] = {}  # watch descriptor -> folder relative to root
        self.reset()

    def reset(self) -> None:
        """Watch every folder there is now (after the caller walked the whole workspace)."""
        self.close()
        if self._libc is None:
            return
        fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return
        self._fd = fd
        if not self._add_tree(""):
            self.close()

    @property
    def working(self) -> bool:
        """Whether the watch is on (no inotify, or too many folders: it is not)."""
        return self._fd >= 0

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = -1
        self._dirs = {}

    def _add_tree(self, top: str) -> bool:
        """Watch ``top`` and the folders under it; False past the limit or on an error."""
        assert self._libc is not None
        stack = [top]
        while stack:
            rel = stack.pop()
            path = os.path.join(self.root, rel).encode()
            wd = self._libc.inotify_add_watch(self._fd, path, _MASK | _IN_ONLYDIR | _IN_DONT_FOLLOW)
            if wd < 0:
                if ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR):
                    continue  # gone already: nothing in it to look at
                return False
            self._dirs[wd] = rel
            if len(self._dirs) > _MAX_WATCHES:
                return False
            try:
                with os.scandir(os.path.join(self.root, rel)) as it:
                    for entry in it:
                        child = f"{rel}/{entry.name}" if rel else entry.name
                        if child not in self.skip and entry.is_dir(follow_symlinks=False):
                            stack.append(child)
            except OSError:
                continue
        return True

    def changed(self) -> dict[str, bool] | None:
        """The folders to look in since the last call: folder -> whether to look into its
        subfolders too (a folder made since); None when the watch cannot tell."""
        if self._fd < 0:
            return None
        data = b""
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                return None
            if not chunk:
                break
            data += chunk
        found: dict[str, bool] = {}
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _, size = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0")
            offset += _EVENT.size + size
            if mask & _IN_Q_OVERFLOW:
                return None
            if mask & _IN_IGNORED:
                self._dirs.pop(wd, None)
                continue
            folder = self._dirs.get(wd)
            if folder is None:
                continue
            if mask & (_IN_MOVE_SELF | _IN_DELETE_SELF) or (
                mask & (_IN_MOVED_FROM | _IN_MOVED_TO) and mask & _IN_ISDIR
            ):
                return None  # a folder moved: the paths known under it are wrong now
            if mask & _IN_MOVED_FROM:
                continue
            found.setdefault(folder, False)
            if mask & _IN_CREATE and mask & _IN_ISDIR:
                child = os.fsdecode(name)
                child = f"{folder}/{child}" if folder else child
                if child not in self.skip:
                    found[child] = True
                    if not self._add_tree(child):
                        return None
        return found
