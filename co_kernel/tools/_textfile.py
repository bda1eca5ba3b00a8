"""Files below a root, reached by descriptor: never by a name the tree could change meanwhile.

The scope guard checks a path; between that check and the open, anyone with write access
to the tree (a background process in the sandbox, which mounts the workspace) could swap a
folder on the way for a symbolic link to somewhere else. So nothing here opens a path by
name: the root is opened from ``/`` (it was resolved when the scope was made, so it has
no links), then every folder on the way relative to the one before with
``O_NOFOLLOW | O_DIRECTORY``, and the file itself with ``O_NOFOLLOW``. A link found on the
way (one that was not there when the guard resolved the path) fails the open with
:class:`PathChanged` instead of being followed. Listings scan folder descriptors
(``os.scandir(fd)``), and writes create their temporary file in the opened folder and
rename it there (``os.replace`` with ``src_dir_fd``/``dst_dir_fd``).

What is opened is a folder that was an entry of the folder before it at the moment it was
opened, so the inode read is one the root reached: an outside folder can only come in by
being moved in, which needs write access to it anyway.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from ..exceptions import PathChanged, TextFileError

__all__ = [
    "decode_text",
    "folder",
    "open_below",
    "open_root",
    "read_all",
    "replace_below",
    "scan",
    "settled_realpath",
    "stat_below",
]

_SNIFF = 8192
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Non-blocking: opening a FIFO someone put in place of the file must not hang the tool.
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _changed(rel: str) -> PathChanged:
    return PathChanged(
        f"'{rel}' changed while it was being opened (something on the way is now a link "
        "or not a folder); nothing was read or written there"
    )


def settled_realpath(path: str | os.PathLike[str]) -> str:
    """``os.path.realpath``, asked again when a link on the way changes under it.

    realpath reads each link by name; one that stops being a link between its ``lstat``
    and its ``readlink`` fails with EINVAL. After a few tries: ``PathChanged``.
    """
    for _ in range(3):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    raise _changed(str(path))


def _open_step(name: str, flags: int, dir_fd: int, rel: str) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise _changed(rel) from None
        raise


def open_root(root: str | Path) -> int:
    """A descriptor of the root, opened from ``/`` one folder at a time without following a
    link: roots are resolved when the scope is made, so a link on the way now (a folder
    above a skill or a vault inside the workspace, swapped meanwhile) is a change."""
    path = os.fspath(root)
    if not os.path.isabs(path):
        raise ValueError(f"a root must be an absolute path: {path!r}")
    fd = os.open("/", _FOLDER)
    try:
        for part in path.split("/"):
            if part:
                step = _open_step(part, _FOLDER, fd, path)
                os.close(fd)
                fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def folder(root: str | Path, parts: Sequence[str], *, make: bool = False) -> Generator[int]:
    """A descriptor of ``root/parts...``, each step opened without following a link.

    ``make`` creates missing folders on the way (in the folder just opened).
    """
    rel = "/".join(parts) or "."
    fd = open_root(root)
    try:
        for part in parts:
            try:
                step = _open_step(part, _FOLDER, fd, rel)
            except FileNotFoundError:
                if not make:
                    raise
                with suppress(FileExistsError):  # made meanwhile: opened below as any folder
                    os.mkdir(part, dir_fd=fd)
                step = _open_step(part, _FOLDER, fd, rel)
            os.close(fd)
            fd = step
        yield fd
    finally:
        os.close(fd)


@contextmanager
def open_below(root: str | Path, rel: str) -> Generator[tuple[int, os.stat_result]]:
    """The file ``rel`` under ``root``, opened read-only, and what it is (``fstat``)."""
    *parts, name = rel.split("/")
    with folder(root, parts) as parent:
        fd = _open_step(name, _FILE, parent, rel)
    try:
        yield fd, os.fstat(fd)
    finally:
        os.close(fd)


def stat_below(root: str | Path, rel: str) -> os.stat_result:
    """``lstat`` of ``rel`` under ``root``, reached without following links on the way."""
    *parts, name = rel.split("/")
    with folder(root, parts) as parent:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)


def read_all(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from the descriptor (a file may grow while it is read)."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def decode_text(data: bytes, shown: str) -> str:
    """The bytes as UTF-8 text; refuses binary and non-UTF-8 content."""
    if b"\x00" in data[:_SNIFF]:
        raise TextFileError(f"'{shown}' is a binary file; only text files are read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TextFileError(f"'{shown}' is not UTF-8 text; only text files are read") from None


def scan(
    root: str | Path, *, hidden: bool, skip: frozenset[str]
) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, ``lstat``) of every entry but folders under ``root``, unordered.

    Walks folder descriptors: a folder swapped for a link during the walk is not entered
    (its open fails), and each entry is ``lstat``-ed in the folder that listed it.
    Names starting with '.' are left out unless ``hidden``; folders named in ``skip`` too.
    """
    stack: list[tuple[int, str]] = []
    try:
        stack.append((open_root(root), ""))
    except (OSError, PathChanged):
        return
    try:
        while stack:
            fd, prefix = stack.pop()
            try:
                with os.scandir(fd) as listing:
                    entries = list(listing)
                for entry in entries:
                    if not hidden and entry.name.startswith("."):
                        continue
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in skip:
                                sub = os.open(entry.name, _FOLDER, dir_fd=fd)
                                stack.append((sub, f"{prefix}{entry.name}/"))
                            continue
                        st = os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue  # gone, or swapped for a link since it was listed
                    yield prefix + entry.name, st
            except OSError:
                pass
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)


def replace_below(root: str | Path, rel: str, text: str) -> None:
    """Replace (or create) ``rel`` under ``root`` atomically: a reader never sees half a file.

    The temporary file is created in the opened folder and renamed there; a link in the
    file's place is replaced, not followed. Missing folders on the way are created.
    """
    *parts, name = rel.split("/")
    with folder(root, parts, make=True) as parent:
        try:
            old = os.stat(name, dir_fd=parent, follow_symlinks=False)
            mode = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else None
        except FileNotFoundError:
            mode = None
        tmp = f".{name[:200]}.{secrets.token_hex(4)}.co-tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        # A new file gets the mode the umask gives (0o666 masked by the kernel, as open()
        # does); a replaced one starts private and takes its old mode before the rename.
        fd = os.open(tmp, flags, 0o600 if mode is not None else 0o666, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
                if mode is not None:
                    os.fchmod(handle.fileno(), mode)
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
