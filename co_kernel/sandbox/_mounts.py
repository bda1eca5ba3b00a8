"""What the sandbox container mounts, and how it keeps what it mounted covered.

Bind mode mounts only the workspace (at /workspace). Co's secret files inside it
(``config.protected_paths``: settings files, tokens, credentials, wherever the settings put
them; ``.env*`` files) are covered by empty read-only mounts. ``.co`` and ``.git``
(``_copy.CONTROL_PATHS``: what Co or git would run or obey on the host) are mounted read-only
over themselves; one that does not exist yet gets an empty folder as its mount point (Linux
mounts only over what exists), removed again with the container when it is still empty and
no other kernel's container mounts it. So are the nested repositories and what git on the
host reads or runs from any repository in the workspace (``_bind_checks``, ``_git_controls``:
``gitdir:`` targets, ``core.hooksPath``, included configs), found by a bounded walk when the
container is created. A mount covers the inode it was put over, so when one of those files is
replaced (renamed over), appears or goes, the container is recreated before the next command
(``_container``). After each command (``BindChecks.after_command``) what it changed is checked
by copy mode's rules (``_hazards``): set-id bits cleared, FIFOs, devices and links leading
outside removed, a repository it made moved out of the workspace, each reported in its output.
With ``sandbox_workspace = copy`` (``auto`` when ``DOCKER_HOST`` names a remote engine)
nothing is mounted: the workspace is copied in before each command and the command's
changes copied back after it (``_copy.WorkspaceCopy``), secret files and control paths left
out.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker.errors  # type: ignore[import-untyped]
from docker.types import DriverConfig, Mount  # type: ignore[import-untyped]

from ..exceptions import SandboxUnavailable
from ._bind_checks import BindChecks
from ._copy import WorkspaceCopy
from ._hazards import CONTROL_PATHS, WALK_LIMIT

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["WORKDIR", "Controls", "SandboxMounts", "Secrets"]

log = logging.getLogger(__name__)

WORKSPACE_MODES = ("auto", "bind", "copy")
WORKDIR = "/workspace"

_MASK_WALK_LIMIT = WALK_LIMIT
"""Workspace entries searched for ``.env*`` files to mask when the container is created."""

Secrets = dict[str, tuple[int, int, bool]]
"""Co's secret files in the workspace: path relative to it -> (device, inode, is a folder)."""


def _secret_paths(workspace: Path, settings: Settings | None, walk: bool) -> list[Path]:
    """Where Co's secrets may be: ``config.protected_paths`` (the project settings only,
    without settings), and with ``walk`` every ``.env*`` file in the workspace."""
    from ..config import is_protected_name, protected_paths

    found = (
        protected_paths(settings, workspace)
        if settings is not None
        else [workspace / ".co" / "settings.json"]
    )
    if walk:
        seen = 0
        for top, dirs, files in os.walk(workspace):
            seen += len(dirs) + len(files)
            found += [Path(top, f) for f in files if is_protected_name(f)]
            if seen > _MASK_WALK_LIMIT:
                log.warning("masking secrets: %s is too big to search whole", workspace)
                break
    return found


def _secrets_in(workspace: Path, paths: list[Path]) -> Secrets:
    """Those of ``paths`` that exist inside ``workspace`` (resolved), where links lead."""
    prefix = str(workspace).rstrip("/") + "/"
    found: Secrets = {}
    for path in paths:
        real = os.path.realpath(path)
        if not real.startswith(prefix):
            continue  # outside the mount: the container cannot reach it
        try:
            st = os.stat(real, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            found[real[len(prefix) :]] = (st.st_dev, st.st_ino, stat.S_ISDIR(st.st_mode))
    return found


def _masks(hidden: Secrets) -> list[Mount]:
    """An empty read-only file over each secret file, an empty read-only tmpfs over each
    secret folder, so no command in the container can read them."""
    return [
        Mount(f"{WORKDIR}/{rel}", None, type="tmpfs", read_only=True)
        if is_dir
        else Mount(f"{WORKDIR}/{rel}", "/dev/null", type="bind", read_only=True)
        for rel, (_, _, is_dir) in sorted(hidden.items())
    ]


_PLACEHOLDER = "user.co.placeholder"
"""The extended attribute marking a mount point a sandbox made for a missing control path."""


def _is_placeholder(path: Path) -> bool:
    try:
        return os.getxattr(path, _PLACEHOLDER, follow_symlinks=False) == b"1"
    except OSError:
        return False


_MOUNTED = "user.co.mounted"
"""The extended attribute naming the control path a sandbox mounted: a folder replaced on
the host may get the old one's inode number back, never its attributes."""

Controls = dict[str, tuple[int, int, bytes]]
"""The control paths in the workspace: name -> (device, inode, its _MOUNTED mark)."""


def _controls_in(workspace: Path, *, mark: bool = False) -> Controls:
    """The control paths there are; with ``mark``, each one without a mark gets one (shared
    by the kernels that mount it, so they do not take turns replacing it)."""
    found: Controls = {}
    for name in CONTROL_PATHS:
        path = workspace / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        try:
            token = os.getxattr(path, _MOUNTED, follow_symlinks=False)
        except OSError:
            token = b""
        if mark and not token:
            token = secrets.token_hex(8).encode()
            try:
                os.setxattr(path, _MOUNTED, token, follow_symlinks=False)
            except OSError:
                token = b""  # no user xattrs here (or not the user's): the inode must do
        found[name] = (st.st_dev, st.st_ino, token)
    return found


def _workspace_mode(setting: str, docker_host: str) -> str:
    """``bind`` or ``copy``: ``auto`` copies when ``DOCKER_HOST`` names an engine elsewhere
    (tcp://, ssh://), which cannot see the kernel's files; a local socket gets a bind mount."""
    if setting not in WORKSPACE_MODES:
        raise ValueError(
            f"sandbox_workspace must be one of {', '.join(WORKSPACE_MODES)}, not {setting!r}"
        )
    if setting != "auto":
        return setting
    remote = docker_host.strip() and not docker_host.startswith(("unix://", "npipe://"))
    return "copy" if remote else "bind"


def _writable_by(path: Path, user: str) -> bool:
    """Whether `user` ("uid:gid") may create files in `path`, by its mode bits (ACLs aside)."""
    uid, gid = (int(n) for n in user.split(":"))
    try:
        st = path.stat()
    except OSError:
        return False
    if st.st_uid == uid:
        return bool(st.st_mode & 0o300 == 0o300)
    if st.st_gid == gid:
        return bool(st.st_mode & 0o030 == 0o030)
    return bool(st.st_mode & 0o003 == 0o003)


class SandboxMounts:
    """The mounts of ``DockerSandbox``'s container: which, and whether they still cover
    what they were put over."""

    workspace: Path
    settings: Settings | None
    workspace_mode: str
    """``bind`` or ``copy`` (``_workspace_mode``)."""
    _copy: WorkspaceCopy | None
    """Copy mode's workspace copy; None in bind mode."""
    _hidden: Secrets
    _controls: Controls
    _checks: BindChecks | None
    _placeholders: set[Path]

    def _secrets_changed(self) -> bool:
        """Whether a secret file or folder in the workspace is not the one masked: new,
        replaced, or gone. ``.env*`` files are not searched for again, only re-checked."""
        workspace = self.workspace.resolve()
        paths = _secret_paths(workspace, self.settings, walk=False)
        paths += [workspace / rel for rel in self._hidden]
        return _secrets_in(workspace, paths) != self._hidden

    def _mounts(
        self, workspace: Path, hidden: Secrets, controls: Controls, checks: BindChecks | None
    ) -> list[Mount]:
        """Bind mode: the workspace, the control paths and git's (``BindChecks``) read-only
        over themselves and the masks over its secrets. Copy mode: an empty tmpfs volume,
        as big as the copy limit (a volume, not a tmpfs mount: ``put_archive`` refuses a
        tmpfs on a read-only root)."""
        if self._copy is None:
            read_only = [
                Mount(f"{WORKDIR}/{name}", str(workspace / name), type="bind", read_only=True)
                for name in [*sorted(controls), *(checks.mounts() if checks else [])]
            ]
            workspace_mount = Mount(WORKDIR, str(workspace), type="bind", read_only=False)
            return [workspace_mount, *read_only, *_masks(hidden)]
        # Root's, sticky and open to all: the sandbox user may create and remove its own
        # files, not rename or remove the root-owned control paths (_copy.CONTROL_PATHS).
        options = f"uid=0,gid=0,mode=1777,size={self._copy.limit}"
        tmpfs = DriverConfig("local", {"type": "tmpfs", "device": "tmpfs", "o": options})
        return [Mount(WORKDIR, None, type="volume", driver_config=tmpfs)]

    def _place_controls(self, workspace: Path) -> None:
        """Bind mode: make an empty folder for each control path the workspace lacks, so a
        read-only mount can cover it (the container could create it otherwise); refuse a
        control path that is a link (its target would be covered, the link not)."""
        for name in CONTROL_PATHS:
            path = workspace / name
            try:
                os.mkdir(path, 0o755)
                with contextlib.suppress(OSError):  # a file system without user xattrs
                    os.setxattr(path, _PLACEHOLDER, b"1")
                self._placeholders.add(path)
            except FileExistsError:
                if _is_placeholder(path):  # another kernel's, alive or not: ours to clean too
                    self._placeholders.add(path)
            except PermissionError:
                continue  # the sandbox user, no more privileged, cannot create it either
            mode = os.lstat(path).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise SandboxUnavailable(
                    f"{path} is a link or a special file, which the sandbox cannot keep "
                    "read-only: replace it with what it points to, or set "
                    "sandbox_workspace = copy."
                )

    def _drop_placeholders(self, client: Any) -> None:
        """Remove the mount points ``_place_controls`` made, when still empty and no other
        kernel's container mounts them (removing one would unmount it there)."""
        if not self._placeholders:
            return
        try:
            containers = client.api.containers(all=True, filters={"label": "co.kernel=1"})
        except docker.errors.DockerException:
            return  # cannot tell: leave them
        used = {m.get("Source") for c in containers for m in c.get("Mounts") or []}
        for path in sorted(self._placeholders):
            if str(path) not in used:
                with contextlib.suppress(OSError):
                    os.rmdir(path)  # fails when something was put in it: it stays
        self._placeholders = set()

    def _protected_here(self) -> set[str]:
        """Where Co's secret files and folders are or would be in the workspace, relative to
        it (copy mode): a command cannot create one there either."""
        workspace = self.workspace.resolve()
        prefix = str(workspace).rstrip("/") + "/"
        found = set()
        for path in _secret_paths(workspace, self.settings, walk=False):
            real = os.path.realpath(path)
            if real.startswith(prefix):
                found.add(real[len(prefix) :])
        return found
