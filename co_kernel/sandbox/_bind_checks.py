"""Bind mode's guards for one container: git's paths kept read-only, and the look at what
each command left in the workspace.

When the container is made, a bounded walk finds the nested repositories, and
``_git_controls`` what git on the host reads or runs from any repository in the workspace;
each (the outermost only) gets a read-only mount. After each command the folders the watch
(``_watch``) saw change are looked at with copy mode's rules (``_hazards``), and a
repository the command made, or one of git's paths it changed, is moved out of the
workspace. A repository the person made on the host since the container was made asks for
a new container (``changed``), so it is read-only before the next command runs.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Collection, Iterable
from pathlib import Path

from ..exceptions import SandboxUnavailable
from ._git_controls import guarded_paths
from ._hazards import CONTROL_PATHS, changed_since, neutralise, quarantine, survey
from ._watch import WorkspaceWatch

__all__ = ["BindChecks"]

Identities = dict[str, tuple[int, int, int]]
"""Paths relative to the workspace -> (device, inode, file type), of what exists of them."""

_GIT_MOUNTS = 500
"""Nested repositories and the paths their configs name that bind mode keeps read-only,
each with a mount of its own."""


def _identities(root: Path, rels: Iterable[str]) -> Identities:
    found: Identities = {}
    for rel in rels:
        try:
            st = os.lstat(root / rel)
        except OSError:
            continue
        found[rel] = (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode))
    return found


def _in_controls(rel: str) -> bool:
    """Whether ``rel`` lies in a top-level control path (mounted read-only already)."""
    return rel.split("/", 1)[0] in CONTROL_PATHS


def _git_paths(root: str, repositories: Iterable[str]) -> list[str]:
    """The nested ``repositories`` and what git reads or runs from any repository in the
    workspace (``_git_controls``), the outermost only: a mount covers what lies in it."""
    kept: list[str] = []
    for rel in sorted({*repositories, *guarded_paths(root, [".git", *repositories])}):
        if not _in_controls(rel) and not any(rel.startswith(k + "/") for k in kept):
            kept.append(rel)
    return kept


class BindChecks:
    """Git's read-only paths in one bind-mode container, and the looks after its commands."""

    def __init__(self, workspace: Path, hidden: Collection[str]) -> None:
        self.workspace = workspace
        self.root = str(workspace)
        found = survey(self.root, skip=CONTROL_PATHS)
        self.cut = found.cut
        """Why the walk saw only part of the workspace ("" when it saw all)."""
        self.repositories = found.repositories
        self.git = _identities(workspace, _git_paths(self.root, found.repositories))
        """What the read-only mounts of git's paths cover."""
        if len(self.git) > _GIT_MOUNTS:
            raise SandboxUnavailable(
                f"The workspace {workspace} holds {len(self.git)} git repositories and paths "
                "their configuration names; bind mode keeps each read-only with a mount of "
                f"its own, at most {_GIT_MOUNTS}. Set sandbox_workspace = copy, or start the "
                "kernel in a smaller folder."
            )
        self._skip = {*CONTROL_PATHS, *self.git, *hidden}  # read-only: nothing to look at
        self._stale = ""  # why the container must be made again
        self._cut_noted = False
        self._watch: WorkspaceWatch | None = None
        self._pending: dict[str, bool] | None = {}  # folders changed, not looked in yet
        self._looking = threading.Lock()  # one look at a time takes the watch's changes

    def mounts(self) -> list[str]:
        """The paths to mount read-only over themselves (not links: a mount would cover
        the target, which is among them when it lies in the workspace)."""
        return sorted(r for r, (_, _, kind) in self.git.items() if kind != stat.S_IFLNK)

    def start(self) -> None:
        """Watch the workspace from now on (the container runs)."""
        self._watch = WorkspaceWatch(self.root, self._skip)

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def cut_message(self, cut: str) -> str:
        return (
            f"The workspace {self.workspace} holds {cut}: the sandbox checks git "
            "repositories, set-id files, FIFOs and links leading outside only in the part it "
            "saw. Start the kernel in a smaller folder to have it check all."
        )

    def changed(self) -> str:
        """Why the container must be made again before the next command ("" when not): a
        repository, or what one's config names, new, replaced or gone on the host."""
        if self._stale:
            return self._stale
        if _identities(self.workspace, self.git) != self.git:
            return "a git repository in the workspace changed"
        if any(g not in self.git for g in _git_paths(self.root, self.repositories)):
            return "a git repository's configuration in the workspace changed"
        with self._looking:
            self._take_changes()
            tops = None if self._pending is None else dict(self._pending)
        found = survey(self.root, skip=self._skip, tops=tops)
        if any(rel not in self.git for rel in found.repositories):
            return "a git repository appeared in the workspace"
        return ""

    def _take_changes(self) -> None:
        """Add the folders the watch saw changed to those not looked in yet (None: all)."""
        if self._watch is None:
            self._pending = None
        elif self._pending is not None:
            now = self._watch.changed()
            if now is None:
                self._pending = None
            else:
                for rel, deep in now.items():
                    self._pending[rel] = self._pending.get(rel, False) or deep

    def after_command(self, since_ns: int) -> list[str]:
        """Deal with what the command (since ``since_ns``) left: ``_hazards``' rules, and
        git's paths it made or changed moved out of the workspace; one note each."""
        with self._looking:
            self._take_changes()
            tops, self._pending = self._pending, {}
            found = survey(self.root, since_ns=since_ns, skip=self._skip, tops=tops)
            if tops is None and self._watch is not None and self._watch.working:
                self._watch.reset()  # it lost track (a folder moved): it starts again here
        notes = neutralise(self.root, found.hazards)
        if (found.cut or self.cut) and not self._cut_noted:
            self._cut_noted = True
            notes.append(f"[sandbox: {self.cut_message(found.cut or self.cut)}]")
        return notes + self._git_made(found.repositories, since_ns)

    def _git_made(self, repositories: list[str], since_ns: int) -> list[str]:
        """Move out of the workspace git's paths the command made or changed; one the host
        made (nothing in it changed while the command ran) asks for a new container."""
        now = _identities(self.workspace, self.git)
        new = {r for r in _git_paths(self.root, [*self.repositories, *repositories])}
        new = {r for r in new if r not in self.git} | set(repositories)
        new |= {r for r in now if now[r] != self.git[r]}
        if len(now) < len(self.git):
            self._stale = "a git repository in the workspace went away"
        notes: list[str] = []
        moved: list[str] = []
        for rel in sorted(new):
            path = os.path.join(self.root, rel)
            if any(rel.startswith(m + "/") for m in moved) or not os.path.lexists(path):
                continue
            if not changed_since(path, since_ns):
                self._stale = f"{rel} (git's) appeared in the workspace"
                continue
            try:
                where = quarantine(self.root, rel)
            except OSError as e:
                notes.append(f"[sandbox: the command made {rel}, git's; moving it failed: {e}]")
                continue
            moved.append(rel)
            notes.append(
                f"[sandbox: the command made or changed {rel}, which git on the host would "
                f"read or run (hooks, config); moved out of the workspace to {where}]"
            )
        return notes
