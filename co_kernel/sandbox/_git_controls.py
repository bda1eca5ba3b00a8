"""What git on the host reads and runs from a workspace, so the sandbox can keep it read-only.

Host git finds its repository by walking up from where it runs to a ``.git`` (a folder, or
a file ``gitdir: PATH`` pointing anywhere, a submodule's or a worktree's) or to a folder
that is a repository itself (``HEAD``, ``objects/``, ``refs/``: a bare repository, used
when one works inside it). From the repository it reads ``config`` and
``config.worktree`` (``commondir`` names a shared one), runs ``hooks/`` or the folder
``core.hooksPath`` names, reads each file an ``include.path`` or ``includeIf.*.path``
names, and runs the commands its keys name: ``core.fsmonitor``, ``filter.*.clean``,
``diff.*.textconv`` and many more under names the repository picks. Each of those that lies
inside the workspace is code for the host, whatever its name: a command-valued key that
names a workspace file (``./tools/clean.sh``) makes that file code too. ``.gitmodules``
and ``.gitattributes`` are data: git never runs a command from them, only from the config.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Iterable

__all__ = ["GIT_NAME", "guarded_paths", "repository_names"]

GIT_NAME = ".git"
_REPOSITORY = frozenset({"HEAD", "objects", "refs"})
_INCLUDES = 10
"""How deep ``include.path`` chains are followed (git itself stops at 10)."""
_SECTION = re.compile(r"\s*\[\s*([A-Za-z0-9.-]+)(?:\s+\"((?:[^\"\\]|\\.)*)\")?\s*\]\s*(.*)")
_ENTRY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
_BOOLEANS = frozenset({"", "true", "false", "yes", "no", "on", "off", "1", "0"})


def repository_names(names: Iterable[str]) -> bool:
    """Whether a folder holding ``names`` looks like a repository to git (bare or ``.git``)."""
    return set(names) >= _REPOSITORY


def _relative(root: str, path: str) -> str | None:
    """``path`` (resolved) relative to ``root``, or None when it lies outside."""
    real = os.path.realpath(path)
    if real == root:
        return ""
    return real[len(root) + 1 :] if real.startswith(root.rstrip("/") + "/") else None


def _read(path: str, limit: int = 1_000_000) -> str:
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _unquote(value: str) -> str:
    """A config value as git reads it: quotes removed, escapes applied, comments dropped."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(value[i + 1], value[i + 1]))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def _entries(text: str) -> list[tuple[str, str]]:
    """The ``(section.key, value)`` entries of a git config file, keys lower-cased (the
    subsection kept out: only the key's own name and its section decide what it is)."""
    found: list[tuple[str, str]] = []
    section = ""
    for raw in text.splitlines():
        line = raw
        head = _SECTION.match(line)
        if head:
            section = head.group(1).lower()
            line = head.group(3)
            if not line.strip():
                continue
        if not line.strip() or line.lstrip().startswith(("#", ";")):
            continue
        entry = _ENTRY.match(line)
        if entry and section:
            found.append((f"{section}.{entry.group(1).lower()}", _unquote(entry.group(2) or "")))
    return found


def _command_file(value: str, base: str) -> str | None:
    """The file a command-valued key runs, when its first word is a path."""
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    if not words or "/" not in words[0]:
        return None
    return os.path.join(base, os.path.expanduser(words[0]))


class _Guard:
    """The walk over one workspace's repositories and the configs they read."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.found: set[str] = set()
        self._read: set[tuple[str, str]] = set()  # (config, the folder it is read for)

    def add(self, path: str, *, files_only: bool = False) -> str | None:
        """Record ``path`` when it exists inside the workspace (regular files only with
        ``files_only``); return it relative to the workspace."""
        rel = _relative(self.root, path)
        if not rel:
            return None
        try:
            mode = os.stat(os.path.join(self.root, rel)).st_mode
        except OSError:
            return rel  # not there: the caller still knows where it would be
        if not files_only or stat.S_ISREG(mode):
            self.found.add(rel)
        return rel

    def repository(self, rel: str) -> None:
        path = os.path.join(self.root, rel)
        worktree: str | None = os.path.dirname(path)
        gitdir = path
        if os.path.basename(rel) != GIT_NAME:
            worktree = None  # a bare repository
        elif os.path.islink(path):
            self.add(path)
            gitdir = os.path.realpath(path)
        elif os.path.isfile(path):
            pointer = _read(path, 4096).partition("\n")[0]
            if not pointer.startswith("gitdir:"):
                return
            gitdir = os.path.join(os.path.dirname(path), pointer[7:].strip())
            self.add(gitdir)
        common = _read(os.path.join(gitdir, "commondir"), 4096).strip()
        dirs = [gitdir]
        if common:
            dirs.append(os.path.join(gitdir, common))
            self.add(dirs[-1])
        for folder in dirs:
            for name in ("config", "config.worktree"):
                self.config(os.path.join(folder, name), worktree or folder, 0)

    def config(self, path: str, base: str, depth: int) -> None:
        # A gitdir is a bare repository as well: its config is read for both folders.
        key = (os.path.realpath(path), base)
        if depth > _INCLUDES or key in self._read:
            return
        self._read.add(key)
        for key, value in _entries(_read(path)):
            if key == "core.hookspath" and value:
                self.add(os.path.join(base, os.path.expanduser(value)))
            elif key in ("include.path", "includeif.path") and value:
                target = os.path.join(os.path.dirname(path), os.path.expanduser(value))
                self.add(target)
                self.config(target, base, depth + 1)
            elif value.lower() not in _BOOLEANS and (run := _command_file(value, base)):
                self.add(run, files_only=True)


def guarded_paths(root: str, repositories: Iterable[str]) -> set[str]:
    """What, besides the ``repositories`` themselves (paths relative to ``root``, the
    resolved workspace), git on the host reads or runs inside the workspace: the targets
    of ``gitdir:`` files and ``.git`` links, ``commondir``, ``core.hooksPath``, included
    configs and the files command-valued keys name. Paths relative to ``root``; only those
    that exist."""
    guard = _Guard(root)
    for rel in repositories:
        guard.repository(rel)
    return guard.found
