"""What a sandboxed command may leave in the workspace that harms the host, and the one set
of rules both workspace modes apply to it.

A file with the set-uid or set-gid bit runs as the kernel's user or group for whoever
starts it; a FIFO blocks whatever opens it; a device opens hardware; a link that leads
outside the workspace makes a later write or read by the host go elsewhere. Copy mode
applies the rules to what comes back (``_copy``), bind mode, where a command writes the
host's files directly, to what changed while the command ran (``survey`` with ``since``,
then ``neutralise``): set-id bits are cleared, the rest removed, each reported.

Git's control paths (``_git_controls``) are kept read-only instead; one the command made
anyway (``git init sub``, a ``core.hooksPath`` folder that did not exist) is moved out of
the workspace into Co's data folder (``quarantine``), where no git on the host finds it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Collection
from dataclasses import dataclass, field

from ._git_controls import GIT_NAME, repository_names

__all__ = [
    "CONTROL_PATHS",
    "WALK_LIMIT",
    "Hazard",
    "Survey",
    "changed_since",
    "leads_inside",
    "link_note",
    "neutralise",
    "quarantine",
    "special_kind",
    "survey",
    "without_setid",
]

CONTROL_PATHS = (".co", ".git")
"""What, at the workspace's top, Co or git run or obey on the host: the sandbox may read
them, never create or change them. ``.co`` holds Co's project settings, instructions, agents
and skills. ``.git`` whole, not only ``config`` and ``hooks``: a command able to rename
``.git`` could put a new one (config, hooks) in its place, and ``config.worktree``,
``modules/*/config`` and ``modules/*/hooks`` give power as well; Codex's workspace-write
sandbox keeps ``.git`` read-only for the same reasons. Left writable: ``.gitattributes``
(it only names filters and diff drivers, which must be defined in the protected config)
and ``.gitmodules`` (git never runs an ``update = !command`` from it, only from
``.git/config``); both are ordinary files of a project. Nested repositories, ``gitdir:``
targets and the folders and files a config names are found by ``_git_controls``."""

WALK_LIMIT = 50_000
"""Workspace entries looked at per walk: a bigger workspace is checked only in part."""
WALK_SECONDS = 2.0
"""How long a walk may take before it stops, checked only in part."""

_QUARANTINE = "sandbox-quarantine"


def without_setid(mode: int) -> int:
    """``mode``'s permission bits without set-uid and set-gid: such a file would run as
    the kernel's user or group for whoever starts it."""
    return stat.S_IMODE(mode) & ~(stat.S_ISUID | stat.S_ISGID)


def special_kind(mode: int) -> str | None:
    """``FIFO`` or ``device`` for what never goes to the host; None for the rest."""
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


def leads_inside(root: str, rel: str, target: str) -> bool:
    """Whether the link ``rel`` -> ``target`` resolves inside ``root`` (the resolved
    workspace) on the host, through the links already there."""
    where = os.path.realpath(os.path.join(root, os.path.dirname(rel), target))
    return where == root or where.startswith(root.rstrip("/") + "/")


def link_note(mode: str, rel: str, target: str, action: str) -> str:
    """The note on a link leading outside, in both modes' words."""
    return f"[{mode}: the link {rel} -> {target} leads outside the workspace; {action}]"


@dataclass(frozen=True)
class Hazard:
    """One thing a command left that the host must not keep as it is."""

    rel: str
    """Its path relative to the workspace."""
    kind: str
    """``setid``, ``FIFO``, ``device`` or ``link``."""
    target: str = ""
    """Where a link points."""


@dataclass
class Survey:
    """What one walk over the workspace found."""

    repositories: list[str] = field(default_factory=list)
    """``.git`` entries (folders, files, links) and bare repositories, not walked into."""
    hazards: list[Hazard] = field(default_factory=list)
    """Entries changed since the walk's ``since`` that ``neutralise`` deals with."""
    cut: str = ""
    """Why the walk stopped before the end ("" when it saw everything)."""


def _hazard(root: str, rel: str, st: os.stat_result) -> Hazard | None:
    if stat.S_ISREG(st.st_mode):
        return Hazard(rel, "setid") if st.st_mode & (stat.S_ISUID | stat.S_ISGID) else None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(os.path.join(root, rel))
        except OSError:
            return None
        return None if leads_inside(root, rel, target) else Hazard(rel, "link", target)
    kind = special_kind(st.st_mode)
    return Hazard(rel, kind) if kind else None


def survey(
    root: str,
    *,
    since_ns: int | None = None,
    skip: Collection[str] = (),
    tops: dict[str, bool] | None = None,
    limit: int = WALK_LIMIT,
    seconds: float = WALK_SECONDS,
) -> Survey:
    """Walk ``root`` (links not followed, ``skip`` and repositories not walked into): the
    repositories in it, and with ``since_ns`` the hazards among the entries whose status
    changed since then (made, written, chmodded, renamed: the inode's ctime). ``tops``
    narrows the walk to those folders (relative to ``root``), each into its subfolders or
    not (``_watch.WorkspaceWatch.changed``)."""
    found = Survey()
    deadline = time.monotonic() + seconds
    seen = 0
    stack = sorted(({"": True} if tops is None else tops).items(), reverse=True)
    while stack:
        rel, deep = stack.pop()
        if rel in skip or _under_any(rel, skip):
            continue
        try:
            with os.scandir(os.path.join(root, rel)) as it:
                entries = list(it)
        except OSError:
            continue
        if rel and repository_names(e.name for e in entries):
            found.repositories.append(rel)
            continue
        seen += len(entries)
        if seen > limit or time.monotonic() > deadline:
            found.cut = (
                f"more than {limit} files and folders"
                if seen > limit
                else f"more files than it can look through in {seconds:g} s"
            )
            return found
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if child in skip:
                continue
            if entry.name == GIT_NAME:
                found.repositories.append(child)
                continue
            if entry.is_dir(follow_symlinks=False):
                if deep:
                    stack.append((child, True))
                continue
            if since_ns is None:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_ctime_ns >= since_ns and (hazard := _hazard(root, child, st)):
                found.hazards.append(hazard)
    return found


def _under_any(rel: str, roots: Collection[str]) -> bool:
    """Whether ``rel`` lies under one of ``roots`` (which are few: what is mounted)."""
    parts = rel.split("/")
    return any("/".join(parts[:i]) in roots for i in range(1, len(parts)))


def neutralise(root: str, hazards: Collection[Hazard]) -> list[str]:
    """Clear set-id bits, remove FIFOs, devices and links leading outside; one note each."""
    notes: list[str] = []
    for hazard in hazards:
        path = os.path.join(root, hazard.rel)
        try:
            if hazard.kind == "setid":
                os.chmod(path, without_setid(os.lstat(path).st_mode), follow_symlinks=False)
                notes.append(f"[sandbox: {hazard.rel} was set-uid or set-gid; bit cleared]")
                continue
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            notes.append(f"[sandbox: could not neutralise {hazard.rel}: {e.strerror}]")
            continue
        if hazard.kind == "link":
            notes.append(link_note("sandbox", hazard.rel, hazard.target, "removed"))
        else:
            notes.append(f"[sandbox: {hazard.rel} is a {hazard.kind}; removed]")
    return notes


def changed_since(path: str, since_ns: int, limit: int = WALK_LIMIT) -> bool:
    """Whether ``path`` or anything in it (links not followed) changed since ``since_ns``;
    True when it holds more than ``limit`` entries (it cannot tell)."""
    stack = [path]
    seen = 0
    while stack:
        top = stack.pop()
        try:
            if os.lstat(top).st_ctime_ns >= since_ns:
                return True
            if not stat.S_ISDIR(os.lstat(top).st_mode):
                continue
            with os.scandir(top) as it:
                for entry in it:
                    seen += 1
                    if seen > limit:
                        return True
                    stack.append(entry.path)
        except OSError:
            continue
    return False


def quarantine(root: str, rel: str) -> str:
    """Move ``rel`` out of the workspace into Co's data folder, where git on the host never
    finds it; return where it went."""
    from ..config import paths

    folder = paths().data_dir / _QUARANTINE / time.strftime("%Y%m%d-%H%M%S")
    target = folder / rel.replace("/", "__")
    n = 1
    while os.path.lexists(target):
        n += 1
        target = folder / f"{rel.replace('/', '__')}.{n}"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    source = os.path.join(root, rel)
    try:
        os.rename(source, target)
    except OSError:
        shutil.move(source, target)  # another file system: copied, then removed
        if os.path.lexists(source):
            with contextlib.suppress(OSError):
                shutil.rmtree(source)
    return str(target)
