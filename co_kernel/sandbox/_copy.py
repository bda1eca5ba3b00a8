"""The Docker sandbox's copy mode: the workspace copied into the container and back.

For an engine that cannot see the kernel's files (a remote ``DOCKER_HOST``, a VM), the
container mounts no workspace. Before each command the files changed since the last
copy go in with ``put_archive`` (files the host deleted are removed); after it the
container's workspace comes back with ``get_archive`` and what the command created,
changed or deleted is applied on the host. Protected files (``config.protected_paths``,
``.env*``) are never sent, and never overwritten or deleted from the container's side.
``.co`` and ``.git`` (``CONTROL_PATHS``), every nested repository and what git on the host
reads or runs from them (``_git_controls``: ``gitdir:`` targets, hooks folders, included
configs) go in owned by root, so the sandbox user cannot change them, an empty root-owned
folder stands in for a top-level one the host lacks, and nothing under them ever comes
back: a change the command made there anyway (a repository it made, under any name) is
reported instead. What comes back is checked by the rules bind mode applies too
(``_hazards``): a link that resolves outside the workspace, a FIFO or a device is left out
with a note, set-uid and set-gid bits are dropped; a hard link comes back as a hard link
to its other half.

What the container holds is tracked per path: the host's (kind, size, mtime) when it was
sent, which says what changed on the host, and a digest of the content, which says what
the command changed (tar mtimes have whole seconds only).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import posixpath
import stat
import tarfile
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from ..exceptions import SandboxUnavailable
from ._git_controls import GIT_NAME, guarded_paths, repository_names
from ._hazards import CONTROL_PATHS, leads_inside, link_note, special_kind, without_setid

__all__ = ["WorkspaceCopy"]

log = logging.getLogger(__name__)

_NOTES_SHOWN = 20
"""Copy-back notes shown per command; the rest are counted."""


def _under(rel: str, roots: set[str]) -> str | None:
    """The one of ``roots`` that ``rel`` is or lies in."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        if (head := "/".join(parts[:i])) in roots:
            return head
    return None


def _repositories(paths: Collection[str], folders: Collection[str]) -> set[str]:
    """The ``.git`` entries among ``paths`` and the ``folders`` that are bare repositories
    (``HEAD``, ``objects``, ``refs`` among ``paths``)."""
    found = {rel for rel in paths if rel.rsplit("/", 1)[-1] == GIT_NAME}
    children: dict[str, set[str]] = {}
    for rel in paths:
        parent, _, name = rel.rpartition("/")
        children.setdefault(parent, set()).add(name)
    found |= {rel for rel in folders if rel and repository_names(children.get(rel, ()))}
    return found


Fingerprint = tuple[str, int, int]
"""A host path's kind ("f", "d" or "l"), size and mtime (ns); folders are ("d", 0, 0)."""


def _tar_mode(member: tarfile.TarInfo) -> int:
    """A tar member's file type and mode as ``os.stat`` gives them."""
    kinds = {tarfile.FIFOTYPE: stat.S_IFIFO, tarfile.CHRTYPE: stat.S_IFCHR}
    kinds[tarfile.BLKTYPE] = stat.S_IFBLK
    return kinds.get(member.type, stat.S_IFREG) | stat.S_IMODE(member.mode)


def _fingerprint(st: os.stat_result) -> Fingerprint | None:
    if stat.S_ISDIR(st.st_mode):
        return ("d", 0, 0)
    if stat.S_ISREG(st.st_mode):
        return ("f", st.st_size, st.st_mtime_ns)
    if stat.S_ISLNK(st.st_mode):
        return ("l", st.st_size, st.st_mtime_ns)
    return None  # sockets, fifos, devices: not copied


def _same(a: str, b: str) -> bool:
    """Whether ``b`` is already a hard link to ``a``."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class WorkspaceCopy:
    """What one container's workspace holds, and the two copies that keep it in step."""

    def __init__(
        self,
        workspace: Path,
        *,
        limit: int,
        workdir: str,
        user: str,
        protected: Callable[[], set[str]],
    ) -> None:
        self.workspace = workspace
        self.limit = limit
        self.workdir = workdir
        self.uid, self.gid = (int(n) for n in user.split(":"))
        self._protected = protected  # paths relative to the workspace, read at each copy
        self.sent: dict[str, tuple[Fingerprint, str]] = {}
        self.placed: set[str] = set()  # root-owned stand-ins for control paths the host lacks
        self.made: set[str] = set()  # links copied back onto the host
        self.controls: set[str] = set(CONTROL_PATHS)  # read-only: see _find_controls

    def _is_control(self, rel: str) -> bool:
        """Whether ``rel`` lies in what git or Co on the host reads or runs: a top-level
        ``CONTROL_PATHS``, any ``.git``, or what ``_find_controls`` found."""
        return GIT_NAME in rel.split("/") or _under(rel, self.controls) is not None

    def _find_controls(self, current: dict[str, Fingerprint]) -> None:
        """Those of the host's ``current`` paths that git on the host reads or runs
        (``_git_controls``): repositories, ``gitdir:`` targets, hooks folders and the
        files their configs name. They go in root-owned and never come back."""
        folders = [rel for rel, fp in current.items() if fp[0] == "d"]
        repositories = _repositories(current, folders)
        root = os.path.realpath(self.workspace)
        self.controls = set(CONTROL_PATHS) | repositories | guarded_paths(root, repositories)

    def reset(self) -> None:
        """A new container: its workspace is empty."""
        self.sent = {}
        self.placed = set()

    # -- host -> container ----------------------------------------------------

    def _is_protected(self, rel: str, protected: set[str]) -> bool:
        from ..config import is_protected_name

        parts = rel.split("/")
        return is_protected_name(parts[-1]) or any(
            "/".join(parts[: i + 1]) in protected for i in range(len(parts))
        )

    def scan(self, protected: set[str]) -> dict[str, Fingerprint]:
        """The host workspace (links not followed, protected paths left out); raises
        SandboxUnavailable past the size limit."""
        root = str(self.workspace)
        found: dict[str, Fingerprint] = {}
        total = 0
        for top, dirs, files in os.walk(root):
            base = os.path.relpath(top, root)
            for name in [*dirs, *files]:
                rel = name if base == "." else f"{base}/{name}"
                if self._is_protected(rel, protected):
                    if name in dirs:
                        dirs.remove(name)
                    continue
                try:
                    fp = _fingerprint(os.lstat(os.path.join(top, name)))
                except OSError:
                    continue
                if fp is None:
                    continue
                found[rel] = fp
                total += fp[1] if fp[0] == "f" else 0
                if total > self.limit:
                    raise SandboxUnavailable(
                        f"The workspace {self.workspace} holds more than "
                        f"{self.limit / 1e6:g} MB, the limit of the sandbox's copy mode "
                        "(sandbox_copy_limit_mb), which copies it into the container before "
                        "each command. Raise sandbox_copy_limit_mb, move big files out of the "
                        "workspace, or, with a local Docker engine, set sandbox_workspace = bind."
                    )
        return found

    def push(self, api: Any, container_id: str) -> None:
        """Send what changed on the host since the last copy; remove what the host removed."""
        protected = self._protected()
        current = self.scan(protected)
        self._find_controls(current)
        gone = sorted(rel for rel in self.sent if rel not in current)
        if gone:
            mine = [rel for rel in gone if not self._is_control(rel)]
            if mine:
                self._exec(api, container_id, ["rm", "-rf", "--", *mine])
            control = [rel for rel in gone if self._is_control(rel)]
            if control:
                # Root owns them (and has no capabilities: a folder without its write bit
                # keeps its files; the container's copy never comes back anyway).
                argv = ["/bin/sh", "-c", 'rm -rf -- "$@" 2>/dev/null; exit 0', "sh", *control]
                self._exec(api, container_id, argv, user="0")
            for rel in gone:
                del self.sent[rel]
        changed = sorted(
            rel for rel, fp in current.items() if rel not in self.sent or self.sent[rel][0] != fp
        )
        missing = [
            name for name in CONTROL_PATHS if name not in current and name not in self.placed
        ]
        if not changed and not missing:
            return
        with tempfile.TemporaryFile() as archive:
            with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for name in missing:
                    info = tarfile.TarInfo(name)
                    info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, 0, 0
                    tar.addfile(info)
                    self.placed.add(name)
                for rel in changed:
                    entry = self._add(tar, rel, current[rel])
                    if entry is not None:
                        self.sent[rel] = entry
            archive.seek(0)
            api.put_archive(container_id, self.workdir, archive)

    def _add(
        self, tar: tarfile.TarFile, rel: str, fp: Fingerprint
    ) -> tuple[Fingerprint, str] | None:
        path = os.path.join(self.workspace, rel)
        info = tarfile.TarInfo(rel)
        info.uid, info.gid = self.uid, self.gid
        try:
            st = os.lstat(path)
            info.mtime = int(st.st_mtime)
            info.mode = stat.S_IMODE(st.st_mode)
            if self._is_control(
                rel
            ):  # readable, not writable, by the sandbox user (no capabilities)
                info.uid, info.gid = 0, 0
                info.mode = info.mode & ~0o022 | 0o444 | (0o111 if info.mode & 0o100 else 0)
            if fp[0] == "d":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
                return fp, ""
            if fp[0] == "l":
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(path)
                tar.addfile(info)
                return fp, info.linkname
            with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as f:
                data = f.read()
        except OSError:
            return None  # gone since the scan: the next copy sees it
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        return fp, _digest(data)

    def _exec(self, api: Any, container_id: str, argv: list[str], user: str = "") -> None:
        exec_id = api.exec_create(container_id, argv, workdir=self.workdir, user=user)["Id"]
        output = api.exec_start(exec_id)
        if api.exec_inspect(exec_id).get("ExitCode") != 0:
            raise SandboxUnavailable(
                f"Copy mode could not remove deleted files in the sandbox: {output!r}"
            )

    # -- container -> host ----------------------------------------------------

    def pull(self, api: Any, container_id: str) -> list[str]:
        """Apply on the host what the container's workspace created, changed or deleted;
        return a note for each thing left out."""
        protected = self._protected()
        notes: list[str] = []
        chunks, _ = api.get_archive(container_id, f"{self.workdir}/.")
        seen: set[str] = set()
        refused: set[str] = set()
        with tempfile.TemporaryFile() as archive:
            for chunk in chunks:
                archive.write(chunk)
            archive.seek(0)
            with tarfile.open(fileobj=archive, mode="r") as tar:
                members: list[tuple[str, tarfile.TarInfo]] = []
                for member in tar:
                    rel = posixpath.normpath(member.name)
                    if rel == "." or rel.startswith(("/", "../")) or rel == "..":
                        continue
                    if not self._is_protected(rel, protected):
                        members.append((rel, member))
                # A repository the command made under another name (a bare one, or the
                # old .git moved away) is git's as much as a .git is.
                made = _repositories(
                    [rel for rel, _ in members], [rel for rel, m in members if m.isdir()]
                )
                for rel, member in members:
                    root = _under(rel, made)
                    if root is None and not self._is_control(rel):
                        seen.add(rel)
                        self._receive(tar, member, rel, notes)
                    elif self._unchanged(member, rel):
                        seen.add(rel)
                    else:
                        refused.add(root or self._control_root(rel))
        for rel in sorted(set(self.sent) - seen, reverse=True):  # children before parents
            if self._is_control(rel):
                del self.sent[rel]  # moved away in the container: the next push sends it again
            else:
                self._delete(rel)
        self._recheck_links(notes)
        notes[:0] = [
            f"[copy mode: {rel} is what git or Co on the host reads or runs; the command's "
            "changes to it were not copied back]"
            for rel in sorted(refused)
        ]
        if len(notes) > _NOTES_SHOWN:
            notes[_NOTES_SHOWN:] = [f"[copy mode: {len(notes) - _NOTES_SHOWN} more left out]"]
        return notes

    def _control_root(self, rel: str) -> str:
        """The control path ``rel`` lies in: the ``.git`` on its way, or one found."""
        parts = rel.split("/")
        if GIT_NAME in parts:
            return "/".join(parts[: parts.index(GIT_NAME) + 1])
        return _under(rel, self.controls) or rel

    def _unchanged(self, member: tarfile.TarInfo, rel: str) -> bool:
        """Whether the container holds ``rel`` as it was sent (or as the stand-in made for
        a missing control path). A file by its size and whole-second mtime, as sent: its
        content is never read (a repository's packs are big), nor ever copied back."""
        if rel in self.placed:
            return True
        old = self.sent.get(rel)
        if old is None:
            return False
        if member.isdir():
            return old[0][0] == "d"
        if member.issym():
            return old[0][0] == "l" and old[1] == member.linkname
        kind, size, mtime_ns = old[0]
        return (
            member.isfile()
            and kind == "f"
            and (member.size, int(member.mtime))
            == (
                size,
                mtime_ns // 1_000_000_000,
            )
        )

    def _host_path(self, rel: str) -> str | None:
        """Where ``rel`` lies on the host, if no link on the way leads out of its folder."""
        root = os.path.realpath(self.workspace)
        parent = os.path.dirname(rel)
        if os.path.realpath(os.path.join(root, parent)) != os.path.normpath(
            os.path.join(root, parent)
        ):
            log.warning("copy mode: not copying %s back: a link on its way", rel)
            return None
        return os.path.join(root, rel)

    def _inside(self, rel: str, target: str) -> bool:
        return leads_inside(os.path.realpath(self.workspace), rel, target)

    def _receive(
        self, tar: tarfile.TarFile, member: tarfile.TarInfo, rel: str, notes: list[str]
    ) -> None:
        old = self.sent.get(rel)
        if member.isdir():
            if old is None or old[0][0] != "d":
                path = self._host_path(rel)
                if path is not None:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(path, 0o755)
                    self._record(rel, path, "")
            return
        if member.issym():
            if old is None or old[1] != member.linkname:
                if not self._inside(rel, member.linkname):
                    notes.append(link_note("copy mode", rel, member.linkname, "not copied back"))
                    return
                path = self._host_path(rel)
                if path is not None:
                    self._replace(path, lambda tmp: os.symlink(member.linkname, tmp))
                    self._record(rel, path, member.linkname)
                    self.made.add(rel)
            return
        kind = special_kind(_tar_mode(member))
        if kind:
            notes.append(f"[copy mode: {rel} is a {kind}; not copied back]")
            return
        if not (member.isfile() or member.islnk()):
            return
        source = tar.extractfile(member)  # a hard link's data is its first half's
        data = source.read() if source is not None else b""
        digest = _digest(data)
        first = self._first_half(member, digest) if member.islnk() else None
        here = os.path.join(self.workspace, rel)
        if old is not None and old[1] == digest and (first is None or _same(first, here)):
            return
        path = self._host_path(rel)
        if path is None:
            return
        # Never set-uid or set-gid: the file would run as the kernel's user or group.
        mode = without_setid(member.mode)

        def write(tmp: str) -> None:
            if first is not None:
                os.link(first, tmp)
                return
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(data)

        self._replace(path, write)
        self._record(rel, path, digest)

    def _recheck_links(self, notes: list[str]) -> None:
        """Remove the links copied back that now lead outside the workspace: one checked
        before a link on its way came back (``a -> b/..``, then ``b -> .``)."""
        for rel in sorted(self.made):
            path = os.path.join(self.workspace, rel)
            try:
                target = os.readlink(path)
            except OSError:
                self.made.discard(rel)  # gone or replaced since
                continue
            if not self._inside(rel, target):
                with contextlib.suppress(OSError):
                    os.unlink(path)
                self.made.discard(rel)
                notes.append(link_note("copy mode", rel, target, "removed from the host"))

    def _first_half(self, member: tarfile.TarInfo, digest: str) -> str | None:
        """The host file a hard link's other half came back as, when it holds the same
        content; None when the link must come back as a file of its own."""
        target = posixpath.normpath(member.linkname)
        entry = self.sent.get(target)
        if entry is None or entry[0][0] != "f" or entry[1] != digest or self._is_control(target):
            return None
        path = self._host_path(target)
        try:
            if path is None or _fingerprint(os.lstat(path)) != entry[0]:
                return None
        except OSError:
            return None
        return path

    def _replace(self, path: str, make: Callable[[str], None]) -> None:
        """Make the new file beside ``path`` and rename it over: a link at ``path`` is
        replaced, never followed."""
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".co-copy-{os.getpid()}-{os.path.basename(path)}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        make(tmp)
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)  # a folder became a file in the container
        os.replace(tmp, path)

    def _record(self, rel: str, path: str, digest: str) -> None:
        with contextlib.suppress(OSError):
            fp = _fingerprint(os.lstat(path))
            if fp is not None:
                self.sent[rel] = (fp, digest)

    def _delete(self, rel: str) -> None:
        """The command deleted ``rel``: delete it on the host too, unless the host changed
        it meanwhile."""
        fp, _ = self.sent.pop(rel)
        path = self._host_path(rel)
        if path is None:
            return
        try:
            if _fingerprint(os.lstat(path)) != fp:
                return
            if fp[0] == "d":
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError:
            pass  # gone already, or a folder the host filled
