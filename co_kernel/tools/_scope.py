"""The scope guard: one path-resolution function for the notes and files tools.

Every path a tool is given passes through :func:`resolve` before anything touches the
file system. It refuses by default: a path must name something inside one of the scope's
roots after symlinks are resolved, the operation must be allowed there, and the folder and
file-type globs must match. Path spellings that only make sense as an attack (``..``, NUL,
percent-encoding, backslashes, ``~``, lookalike separators, control characters, absurd
lengths) are refused outright rather than interpreted, so there is no decoding step that
could disagree with the check. :func:`guarded` wraps it for tools: it audits the decision
and turns a refusal into a ``ToolFailed`` the model reads.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from ..config import is_protected_name, protected_paths
from ..exceptions import ScopeViolation, TextFileError
from ._audit import record_access
from ._textfile import decode_text, open_below, read_all, scan, settled_realpath, stat_below

if TYPE_CHECKING:
    from ..config import Settings
    from ..session_state import CoDeps

__all__ = [
    "Action",
    "Protection",
    "Resolved",
    "Root",
    "Scope",
    "admit",
    "guarded",
    "in_scope",
    "read_bytes",
    "read_text",
    "resolve",
    "walk",
]

Action = Literal["read", "write", "create", "delete"]

MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255
# Folders no walk descends into: version control, caches, environments.
SKIP_DIRS = frozenset(
    {".git", "__pycache__", ".ipynb_checkpoints", "node_modules", ".venv", ".mypy_cache"}
)
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
# Characters that render like a dot or a slash but are not one; NFKC folds some of them.
_LOOKALIKES = frozenset(
    "\u2215\u2044\u29f8\u2571\uff0f\u2024\uff0e\u3002\ufe52\u2025\u2026\uff3c\u2216"
)


@dataclass(frozen=True)
class Root:
    """One folder a scope reaches into."""

    path: Path
    """Absolute, symlinks resolved."""
    label: str
    """How messages name it: "workspace", "vault", "read root"."""
    operations: frozenset[str]
    """What may be done under it."""
    folders: tuple[str, ...] = ("*",)
    """Globs of paths (relative to the root) in scope; a folder includes what is under it."""


@dataclass(frozen=True)
class Protection:
    """Files never read or written whatever the scope says, and the hard-link rule."""

    paths: frozenset[str] = frozenset()
    """Co's own secret files (``config.protected_paths``): absolute paths as given and
    with links resolved, case-folded."""
    inodes: frozenset[tuple[int, int]] = frozenset()
    """(device, inode) of those that exist: a hard link to one is the same file."""
    hard_links: bool = False
    """Whether a file with more than one link may be read (setting `file_allow_hard_links`)."""

    @classmethod
    def of(cls, settings: Settings, workspace: Path) -> Protection:
        """The protection the settings ask for, with the workspace's project settings file."""
        names: set[str] = set()
        inodes: set[tuple[int, int]] = set()
        for path in protected_paths(settings, workspace):
            names.update({str(path).casefold(), os.path.realpath(path).casefold()})
            try:
                st = os.stat(path)
            except OSError:
                continue
            inodes.add((st.st_dev, st.st_ino))
        return cls(frozenset(names), frozenset(inodes), settings.file_allow_hard_links)

    def refusal(self, st: os.stat_result, shown: str) -> str | None:
        """Why the opened file ``st`` (not a folder) may not be read, or None."""
        if not stat.S_ISREG(st.st_mode):
            return f"'{shown}' is not a regular file"
        if (st.st_dev, st.st_ino) in self.inodes:
            return f"'{shown}' is one of Co's own settings or credential files"
        if st.st_nlink > 1 and not self.hard_links:
            return (
                f"'{shown}' has {st.st_nlink} hard links, so it may be the same file as one "
                "outside the folder; files with several links are not read (setting "
                "`file_allow_hard_links`)"
            )
        return None


@dataclass(frozen=True)
class Scope:
    """The roots, file types and operations a set of tools may touch."""

    roots: tuple[Root, ...]
    """The first root is where relative paths point."""
    file_types: tuple[str, ...] = ("*",)
    """Globs of file names in scope (case-sensitive, as the file system is)."""
    protection: Protection = field(default_factory=Protection)
    """Co's secret files, and whether hard-linked files are read. Besides these, files
    named ``.env`` or ``.env.*`` (``config.is_protected_name``) are never read or written."""
    protected_dirs: tuple[str, ...] = field(default=(".git", ".co"))
    """Folders whose contents may be read but never written (matched ignoring case)."""
    protected_files: tuple[str, ...] = field(default=(".co/settings.json",))
    """Relative paths never read or written: they may hold API keys (ignoring case)."""


@dataclass(frozen=True)
class Resolved:
    """A path the guard allowed."""

    path: Path
    """The real path (symlinks resolved)."""
    root: Root
    """The root it lies under."""
    rel: str
    """Its path relative to the root, with forward slashes."""
    action: Action = "read"
    """What was allowed (a write to a file that does not exist yet is a create)."""


def _check_spelling(raw: object, action: str) -> PurePosixPath:
    """Refuse spellings that are only useful to escape the scope; return the parsed path."""
    if not isinstance(raw, str) or not raw.strip():
        raise ScopeViolation("the path is empty", str(raw), action)
    # Control characters are shown escaped: the message goes to the model and the cell.
    shown = "".join(f"\\x{ord(c):02x}" if unicodedata.category(c) == "Cc" else c for c in raw[:120])
    shown += "..." if len(raw) > 120 else ""

    def refuse(why: str) -> ScopeViolation:
        return ScopeViolation(f"path '{shown}' {why}", raw[:500], action)

    if "\x00" in raw:
        raise refuse("contains a NUL byte")
    if len(raw) > MAX_PATH_CHARS:
        raise refuse(f"is {len(raw):,} characters long (the limit is {MAX_PATH_CHARS:,})")
    if any(unicodedata.category(ch) == "Cc" for ch in raw):
        raise refuse("contains control characters")
    if "\\" in raw:
        raise refuse("contains a backslash; use forward slashes")
    if raw.startswith("~"):
        raise refuse("starts with '~'; home folders are outside the scope, use a relative path")
    if "://" in raw:
        raise refuse("is a URL, not a path")
    if _PERCENT.search(raw):
        raise refuse("contains percent-encoding, which is not decoded; write the plain path")
    for ch in raw:
        if ch in _LOOKALIKES or (
            ch not in "./" and any(c in "./\\" for c in unicodedata.normalize("NFKC", ch))
        ):
            raise refuse(f"contains '{ch}' (U+{ord(ch):04X}), which looks like a dot or slash")
    path = PurePosixPath(raw)
    if ".." in path.parts:
        raise refuse("contains '..'; paths may not climb out of a folder")
    for part in path.parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise refuse(f"has a name longer than {MAX_NAME_BYTES} bytes")
    return path


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _locate(path: PurePosixPath, scope: Scope, raw: str, action: str) -> tuple[Root, Path]:
    """The root a parsed path belongs to and the path it names (symlinks not yet resolved)."""
    if not path.is_absolute():
        root = scope.roots[0]
        return root, root.path / path
    for root in scope.roots:
        if _within(Path(path), root.path):
            return root, Path(path)
    # The caller may spell a root through a symlink (e.g. /tmp vs /private/tmp).
    real = Path(settled_realpath(path))
    for root in scope.roots:
        if _within(real, root.path):
            return root, Path(path)
    where = " or ".join(f"the {r.label} ({r.path})" for r in scope.roots)
    raise ScopeViolation(f"path '{raw[:120]}' is outside {where}", raw[:500], action)


@lru_cache(maxsize=64)
def _globs(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled regex for a tuple of fnmatch globs (walks test every file name)."""
    return re.compile("|".join(fnmatch.translate(g) for g in patterns) or "(?!)")


def in_scope(
    scope: Scope, root: Root, rel: str, action: str, *, is_dir: bool = False
) -> str | None:
    """Why ``rel`` under ``root`` is out of scope for ``action``, or None when it is in.

    Called for every file of a walk, so the common case does little: a few string tests.
    """
    if action not in root.operations:
        allowed = ", ".join(sorted(root.operations)) or "nothing"
        return f"'{action}' is not allowed in the {root.label} (allowed: {allowed})"
    rel = rel.strip("/")
    folded = rel.casefold()
    if folded in scope.protected_files or (
        scope.protection.paths and f"{root.path}/{rel}".casefold() in scope.protection.paths
    ):
        return f"'{rel}' may hold secrets and is never {action}-accessible"
    name = rel.rpartition("/")[2]
    if not is_dir and name and is_protected_name(name):
        return f"'{name}' may hold secrets and is never {action}-accessible"
    if (
        action != "read"
        and "/" in rel
        and any(p in scope.protected_dirs for p in folded.split("/")[:-1])
    ):
        return f"'{rel}' is inside a protected folder ({', '.join(scope.protected_dirs)})"
    if "*" not in root.folders:
        parts = rel.split("/")
        folders = _globs(root.folders)
        if not any(folders.match("/".join(parts[:i])) for i in range(1, len(parts) + 1)):
            return f"'{rel}' is not in the folders in scope ({', '.join(root.folders)})"
    if (
        not is_dir
        and name
        and "*" not in scope.file_types
        and not _globs(scope.file_types).match(name)
    ):
        return f"'{name}' is not a file type in scope ({', '.join(scope.file_types)})"
    return None


def resolve(raw: object, scope: Scope, action: Action) -> Resolved:
    """Resolve a tool's path argument inside the scope, or raise ScopeViolation.

    ``write`` to a file that does not exist yet is judged (and returned) as ``create``.
    """
    path = _check_spelling(raw, action)
    assert isinstance(raw, str)
    try:
        root, candidate = _locate(path, scope, raw, action)
        real = Path(settled_realpath(candidate))
    except TextFileError as exc:
        raise ScopeViolation(f"{exc}; try again", raw[:500], action) from None
    if not _within(real, root.path):
        raise ScopeViolation(
            f"path '{raw[:120]}' leads outside the {root.label} through a symbolic link",
            raw[:500],
            action,
        )
    if action == "write" and not real.exists():
        action = "create"
    rel = real.relative_to(root.path).as_posix()
    if rel == ".":
        rel = ""
    asked = candidate.relative_to(root.path).as_posix() if _within(candidate, root.path) else rel
    # Judge both the spelling asked for and the file it leads to: a link must not launder
    # a protected name, nor reach a protected file under an innocent one.
    for name in dict.fromkeys((asked, rel)):
        reason = in_scope(scope, root, name, action, is_dir=real.is_dir())
        if reason:
            raise ScopeViolation(reason, raw[:500], action)
    return Resolved(real, root, rel, action)


def guarded(deps: CoDeps, tool: str, raw: object, scope: Scope, action: Action) -> Resolved:
    """:func:`resolve`, audited; a refusal becomes a ToolFailed the model reads."""
    target = str(raw)[:500]
    try:
        resolved = resolve(raw, scope, action)
    except ScopeViolation as exc:
        record_access(
            deps, tool=tool, action=action, target=target, decision="scope-refused",
            detail=exc.reason,
        )  # fmt: skip
        from pydantic_ai import ToolFailed

        raise ToolFailed(f"Refused: {exc.reason}. Nothing was {_done(action)}.") from None
    record_access(
        deps, tool=tool, action=resolved.action, target=str(resolved.path), decision="auto"
    )
    return resolved


def _done(action: str) -> str:
    return {"read": "read", "write": "written", "create": "created", "delete": "deleted"}[action]


def walk(scope: Scope, root: Root, *, hidden: bool = False) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, stat) of the files under ``root`` readable in scope, unordered.

    Walks by folder descriptor (``_textfile.scan``): a folder swapped for a link meanwhile
    is not entered. Symbolic links to folders are not followed; links to files count
    (under their target's path) only when the target is inside the root and in scope.
    Co's own secret files are left out; files with several hard links are not (the
    tools say why they do not read them).
    """
    prefix = str(root.path).rstrip("/") + "/"
    for rel, st in scan(root.path, hidden=hidden, skip=SKIP_DIRS):
        if stat.S_ISLNK(st.st_mode):
            target = _link_target(root, prefix, rel)
            if target is None:
                continue
            rel, st = target
        elif not stat.S_ISREG(st.st_mode):
            continue
        if (st.st_dev, st.st_ino) in scope.protection.inodes:
            continue
        if in_scope(scope, root, rel, "read") is None:
            yield rel, st


def _link_target(root: Root, prefix: str, rel: str) -> tuple[str, os.stat_result] | None:
    """The path and stat of the regular file a link inside the root leads to, if inside."""
    try:
        real = settled_realpath(prefix + rel)
        if not real.startswith(prefix):
            return None
        target = real[len(prefix) :]
        # Reached again by descriptor: realpath's answer may be stale already.
        st = stat_below(root.path, target)
    except (OSError, TextFileError):
        return None
    return (target, st) if stat.S_ISREG(st.st_mode) else None


def admit(
    scope: Scope, root: Root, rel: str, *, hidden: bool = False
) -> tuple[str, os.stat_result] | None:
    """(relative path, stat) when :func:`walk` would yield the file ``rel``, else None."""
    parts = rel.split("/")
    if not hidden and any(p.startswith(".") for p in parts):
        return None
    if any(p in SKIP_DIRS for p in parts[:-1]):
        return None
    try:
        st = stat_below(root.path, rel)
    except (OSError, TextFileError):
        return None
    if stat.S_ISLNK(st.st_mode):
        found = _link_target(root, str(root.path).rstrip("/") + "/", rel)
        if found is None:
            return None
        rel, st = found
    elif not stat.S_ISREG(st.st_mode):
        return None
    if (st.st_dev, st.st_ino) in scope.protection.inodes:
        return None
    return (rel, st) if in_scope(scope, root, rel, "read") is None else None


def read_bytes(
    scope: Scope, root: Root, rel: str, max_bytes: int, *, shown: str, limit: str = ""
) -> bytes:
    """The content of ``rel`` under ``root``, opened by descriptor and checked once open.

    Raises FileNotFoundError, IsADirectoryError, or TextFileError with the reason: a link
    or non-folder swapped in on the way (``PathChanged``), not a regular file, one of Co's
    secret files under another name, several hard links, larger than ``max_bytes`` (what
    sets it: ``limit``, by default the setting `file_max_bytes`).
    """
    if not rel:
        raise IsADirectoryError(shown)  # the root itself
    try:
        with open_below(root.path, rel) as (fd, st):
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(shown)
            reason = scope.protection.refusal(st, shown)
            if reason is not None:
                raise TextFileError(reason)
            if st.st_size > max_bytes:
                raise TextFileError(
                    f"'{shown}' is {st.st_size:,} bytes; files over {max_bytes:,} bytes are "
                    f"not read ({limit or 'setting `file_max_bytes`'})"
                )
            return read_all(fd, max_bytes)
    except FileNotFoundError:
        raise FileNotFoundError(shown) from None


def read_text(
    scope: Scope, root: Root, rel: str, max_bytes: int, *, shown: str, limit: str = ""
) -> str:
    """:func:`read_bytes` as UTF-8 text; binary and non-UTF-8 files are refused."""
    return decode_text(read_bytes(scope, root, rel, max_bytes, shown=shown, limit=limit), shown)
