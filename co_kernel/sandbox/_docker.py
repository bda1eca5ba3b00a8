"""Runs commands in one locked-down Docker container per kernel session.

The container (`co-sandbox-<session>`) is created on first use and reused. It
runs as a non-root user with every capability dropped, no-new-privileges, a
read-only root filesystem with a tmpfs /tmp (HOME), memory/CPU/pids limits, no
network unless asked for, and only the workspace mounted (at /workspace). Co's
secret files inside the workspace (``config.protected_paths``: settings files, tokens,
credentials, wherever the settings put them; ``.env*`` files) are covered by empty
read-only mounts. ``.co`` and ``.git`` (``_copy.CONTROL_PATHS``: what Co or git would run
or obey on the host) are mounted read-only over themselves; one that does not exist yet
gets an empty folder as its mount point (Linux mounts only over what exists), removed
again with the container when it is still empty and no other kernel's container mounts it.
So are the nested repositories and what git on the host reads or runs from any repository
in the workspace (``_bind_checks``, ``_git_controls``: ``gitdir:`` targets,
``core.hooksPath``, included configs), found by a bounded walk when the container is created.
A mount covers the inode it was put over, so when one of those files is replaced (renamed
over), appears or goes, the container is recreated before the next command. After each
command (``BindChecks.after_command``) what it changed is checked by copy mode's rules
(``_hazards``): set-id bits cleared, FIFOs, devices and links leading outside removed, a
repository it made moved out of the workspace, each reported in its output.
With ``sandbox_workspace = copy`` (``auto`` when ``DOCKER_HOST`` names a remote engine)
nothing is mounted: the workspace is copied in before each command and the command's
changes copied back after it (``_copy.WorkspaceCopy``), secret files and control paths left
out.

Each command runs as a `docker exec` of a small /bin/sh wrapper that records its
pid (the exec is a session leader under runc, so that pid is also its process
group) and carries a `CO_EXEC=<id>` environment marker. Killing a command, on
timeout or cancellation, is a second exec that kills that process group and
every process still carrying the marker, so the whole tree dies inside the
container, not only the host-side wait. If even that exec cannot start (a fork
bomb has used up the pids limit), the container is removed and the next
command gets a fresh one.

The docker SDK is synchronous: API calls run in worker threads and each
command's output is read by its own thread, which hands chunks to the event
loop, where `on_output` is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import secrets
import socket
import stat
import tarfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker  # type: ignore[import-untyped]
import docker.errors  # type: ignore[import-untyped]
from docker.types import DriverConfig, Mount  # type: ignore[import-untyped]

from ..exceptions import SandboxUnavailable
from ._bind_checks import BindChecks
from ._copy import WorkspaceCopy
from ._hazards import CONTROL_PATHS, WALK_LIMIT
from ._protocol import (
    EOF,
    GRACE_SECONDS,
    CommandResult,
    OutputBuffer,
    OutputCallback,
    StatusCallback,
    process_start,
    pump,
)

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["DEFAULT_IMAGE", "DockerSandbox"]

log = logging.getLogger(__name__)

DEFAULT_IMAGE = "python:3.12-slim"
NETWORKS = ("none", "bridge")
WORKSPACE_MODES = ("auto", "bind", "copy")
WORKDIR = "/workspace"

# reap MARKER PGID: kill every process of the group or carrying CO_EXEC=MARKER in its
# environment, this shell excepted, until a pass finds none. A process of ours whose
# environment reads empty is in the middle of exec (a background `setsid sleep` just
# started): it is looked at again on the next pass rather than passed over. Builtins only (dash reads
# environ with its NULs dropped), so it works when the pids limit leaves nothing to fork.
LAUNCH_WAIT = 3.0
"""Seconds to wait for a command's wrapper to show its output is connected (`_WRAPPER`)."""
LAUNCH_ATTEMPTS = 3

_REAP = """
reap() {
  m=$1; g=$2; i=0; n=1
  while [ $n = 1 ] && [ $i -lt 20 ]; do
    n=0; i=$((i+1))
    for d in /proc/[0-9]*; do
      p=${d#/proc/}
      [ "$p" = "$$" ] && continue
      s=; read -r s 2>/dev/null <"$d/stat" || continue
      set -- ${s##*) }
      [ "$1" = Z ] && continue
      e=; read -r e 2>/dev/null <"$d/environ"
      [ -z "$e" ] && [ -r "$d/environ" ] && { n=1; continue; }
      case "$3:$e" in "$g":*|*"CO_EXEC=$m"*) kill -KILL "$p" 2>/dev/null && n=1;; esac
    done
  done
}
"""
# $1 is the command; $CO_EXEC names the pid file so the killer can find the group. When
# the command ends, whatever it left running (background jobs, nohup, setsid) goes too.
#
#
# Now and then the engine connects an exec's output to nothing (moby/moby#27289,
# docker/docker-py#2042; about 1 run in 300 on a busy machine: `echo up` came back empty).
# So the wrapper writes the mark (`_mark`) on stdout and on stderr and waits for a line on its
# stdin before it runs the command: the reader sends that line once both marks arrived, and a
# run whose marks never come is abandoned before its command ran, and started again
# (`DockerSandbox._launch`). After the command the wrapper writes both marks again and waits
# for the reader's second line (or the connection closing): everything the command wrote
# came before them. The command itself reads /dev/null, never those lines.
_MARKS = "printf '\\036%s\\036\\n' \"$CO_EXEC\"; printf '\\036%s\\036\\n' \"$CO_EXEC\" >&2; "
_WRAPPER = (
    _REAP
    + 'echo $$ >"/tmp/.co-exec-$CO_EXEC" 2>/dev/null; '
    + _MARKS
    + 'read -r _ || exit 125; /bin/sh -c "$1" </dev/null; rc=$?; '
    + 'reap "$CO_EXEC" $$; rm -f "/tmp/.co-exec-$CO_EXEC"; '
    + _MARKS
    + "read -r _; exit $rc"
)


def _mark(marker: str) -> bytes:
    """What the wrapper writes on stdout and on stderr before and after the command."""
    return b"\x1e" + marker.encode() + b"\x1e\n"


# $1 is the marker. Group kill first: it is atomic and needs no fork, which
# matters when the pids limit is exhausted. Then the wrapper and anything that left
# the group (setsid, daemons) but still carries the marker in its environment.
_KILLER = (
    _REAP
    + """
f="/tmp/.co-exec-$1"; p=
if [ -r "$f" ] && read -r p <"$f" && [ -n "$p" ]; then
  kill -KILL "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null
fi
reap "$1" "${p:-none}"
rm -f "$f"
exit 0
"""
)

_NETWORK_ERRORS = (
    "temporary failure in name resolution",
    "temporary failure resolving",
    "unable to resolve",
    "network is unreachable",
    "could not resolve host",
    "name or service not known",
    "no address associated with hostname",
    "failed to resolve",
    "failed to establish a new connection",
    "no route to host",
    "getaddrinfo",
)
_FORK_ERRORS = ("resource temporarily unavailable", "cannot fork", "can't fork", "fork: retry")
_EXEC_FAILED = "oci runtime exec failed"


def _looks_exhausted(output: str, exit_code: int | None) -> bool:
    """Whether a command's output says processes could not be started."""
    text = output.lower()
    return any(s in text for s in _FORK_ERRORS) or (exit_code == 126 and _EXEC_FAILED in text)


_HOST = socket.gethostname()


def _user_name(uid: int) -> str:
    """The login name of ``uid`` (the uid itself where there is none, as in a container
    started with an arbitrary ``--user``)."""
    import pwd  # Unix only, as the engine's socket is

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _owner_alive(labels: dict[str, str], boot: str) -> bool:
    """Whether the kernel process that labelled a container still runs on this host."""
    try:
        pid = int(labels["co.pid"])
    except (KeyError, ValueError):
        return True  # not ours to judge
    if boot and labels.get("co.boot") and labels["co.boot"] != boot:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by someone else
    started = labels.get("co.pid_start")
    now = process_start(pid)
    return not (started and now and started != now)


_GIT_TRUST = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": WORKDIR,
}

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


_SLACK_NS = 50_000_000
"""How far before a command's start a change still counts as the command's: file times come
from the kernel's coarse clock, a tick behind the one Python reads."""


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


def _default_user() -> str:
    uid, gid = os.getuid(), os.getgid()
    return "1000:1000" if uid == 0 else f"{uid}:{gid}"


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


def _engine_unreachable(mode: str, error: object) -> SandboxUnavailable:
    auto = " (sandbox mode auto never falls back to running on the host)" if mode == "auto" else ""
    return SandboxUnavailable(
        f"Docker is not reachable: {error}{auto}. Start it (`sudo systemctl start docker`, "
        "or run `dockerd` in the background; scripts/start-docker.sh does both), or opt in to "
        "running commands unsandboxed on the host: set sandbox = subprocess in "
        "your own settings (~/.config/co/settings.json; a project file cannot) or "
        "CO_SANDBOX=subprocess."
    )


def _close_stream(stream: Any) -> None:
    with contextlib.suppress(Exception):
        stream.close()
    # CancellableStream.close() only closes the socket; the HTTP response must
    # be closed too or its socket object is reported as leaked.
    with contextlib.suppress(Exception):
        stream._response.close()


def _socket_of(stream: Any) -> socket.socket:
    """The connection under docker-py's exec stream (its stdin once hijacked)."""
    raw = stream._response.raw._fp.fp.raw
    return getattr(raw, "_sock", None) or raw.sock


def _wake(stream: Any) -> None:
    """Unblock a reader thread stuck on `stream` without closing the fd under it."""
    try:
        _socket_of(stream).shutdown(socket.SHUT_RDWR)
    except Exception:
        _close_stream(stream)


def _docker_client(**kwargs: Any) -> Any:
    """``docker.from_env``, without leaving a socket open when no engine answers.

    The client asks the engine for its API version as it is built; when the engine is down,
    docker-py's socket for that request stays open until garbage collection. Collecting now
    closes it at once (its ResourceWarning says only that).
    """
    try:
        return docker.from_env(**kwargs)
    except docker.errors.DockerException as exc:
        failure = docker.errors.DockerException(str(exc))
    # Out of the handler: inside it, the first error's traceback would still hold the socket.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    raise failure


def _mark_prefix(data: bytes, mark: bytes) -> bytes:
    """The longest end of `data` that begins `mark` (held back until the next chunk)."""
    for start in range(max(0, len(data) - len(mark) + 1), len(data)):
        if data[start] == mark[0] and mark.startswith(data[start:]):
            return data[start:]
    return b""


class _Reader(threading.Thread):
    """Reads one exec's demultiplexed output and hands it to the event loop."""

    def __init__(
        self,
        stream: Any,
        buffer: OutputBuffer,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[object],
        marker: str,
    ) -> None:
        super().__init__(name="co-sandbox-output", daemon=True)
        self.stream = stream
        self._buffer = buffer
        self._loop = loop
        self._queue = queue
        self._mark = _mark(marker)
        self._held = {"stdout": b"", "stderr": b""}
        """Per stream: the bytes not yet forwarded, which may be the start of a mark."""
        self._marks = {"stdout": 0, "stderr": 0}
        self._lock = threading.Lock()
        self._state = "waiting"  # -> "running" (the command may run) or "abandoned"
        self.settled = asyncio.Event()
        """Set (on the loop) once the command may run, or the stream ended before that."""

    def run(self) -> None:
        try:
            for out, err in self.stream:
                if out:
                    self._take("stdout", out)
                if err:
                    self._take("stderr", err)
        except Exception:
            log.debug("sandbox output stream ended with an error", exc_info=True)
        finally:
            for name, rest in self._held.items():  # killed before its mark: forward it all
                if rest:
                    self._push(self._buffer.feed(name, rest))
            self._push(self._buffer.feed("stdout", b"", final=True))
            self._push(self._buffer.feed("stderr", b"", final=True))
            _close_stream(self.stream)
            self._push([EOF])
            self._settle()

    def abandon(self) -> bool:
        """Give up on this run if its command has not been let run; False if it has."""
        with self._lock:
            if self._state == "running":
                return False
            self._state = "abandoned"
            return True

    def _settle(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            self._loop.call_soon_threadsafe(self.settled.set)

    def _release(self) -> None:
        """Write the line the wrapper waits for (before and after the command)."""
        try:
            _socket_of(self.stream).sendall(b"\n")
        except OSError:
            log.debug("releasing the sandbox command's wrapper failed", exc_info=True)

    def _take(self, name: str, data: bytes) -> None:
        """Forward what the command wrote (between the marks); release the wrapper when
        both streams brought a mark."""
        if self._marks[name] == 2:
            return  # nothing the command wrote can follow its last mark
        data = self._held[name] + data
        while self._marks[name] < 2 and (at := data.find(self._mark)) >= 0:
            if at and self._marks[name] == 1:
                self._push(self._buffer.feed(name, data[:at]))
            data = data[at + len(self._mark) :]
            self._marks[name] += 1
        if self._marks[name] == 2:
            data = b""
        keep = _mark_prefix(data, self._mark)
        data = data[: len(data) - len(keep)]
        self._held[name] = keep
        if data and self._marks[name] == 1:
            self._push(self._buffer.feed(name, data))
        seen = min(self._marks.values())
        if seen == 1 and self._state == "waiting":
            with self._lock:
                if self._state == "abandoned":
                    return
                self._state = "running"
            self._release()
            self._settle()
        elif seen == 2:
            self._release()

    def _push(self, items: list[Any]) -> None:
        for item in items:
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                return


class _Launch:
    """One command's exec as it is being started: its future, reader, output and queue."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        start_exec: Callable[[], tuple[Any, str, Any]],
        max_output: int,
    ) -> None:
        self.loop = loop
        self._start_exec = start_exec
        self._max_output = max_output
        self.reader: _Reader | None = None
        self.again()

    def again(self) -> None:
        """A new exec, with fresh output: what an abandoned one's reader still sends is dropped."""
        self.buffer = OutputBuffer(self._max_output)
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.start = self.loop.run_in_executor(None, self._start_exec)


class DockerSandbox:
    """Runs commands in this kernel session's own locked-down container."""

    backend = "docker"

    def __init__(
        self,
        *,
        workspace: Path,
        session_id: str,
        kernel_id: str,
        image: str = DEFAULT_IMAGE,
        mode: str = "docker",
        network: str = "none",
        memory: str = "1g",
        cpus: float = 1.0,
        pids_limit: int = 256,
        max_timeout: float = 600,
        on_status: StatusCallback | None = None,
        settings: Settings | None = None,
        workspace_mode: str = "auto",
        copy_limit_mb: float = 500.0,
    ) -> None:
        if network not in NETWORKS:
            raise ValueError(
                f"sandbox_network must be one of {', '.join(NETWORKS)}, not {network!r}"
            )
        if cpus <= 0 or pids_limit <= 0 or max_timeout <= 0:
            raise ValueError("sandbox cpus, pids_limit and max_timeout must be positive")
        self.mode = mode
        self.image = image or DEFAULT_IMAGE
        self.workspace = Path(workspace)
        self.session_id = session_id
        self.kernel_id = kernel_id
        self.network = network
        self.memory = memory
        self.cpus = cpus
        self.pids_limit = pids_limit
        self.max_timeout = max_timeout
        self.on_status = on_status
        self.settings = settings
        self.user = _default_user()
        self.container_name = f"co-sandbox-{session_id[:12]}"
        self.workspace_mode = _workspace_mode(workspace_mode, os.environ.get("DOCKER_HOST", ""))
        self._copy: WorkspaceCopy | None = None
        if self.workspace_mode == "copy":
            self._copy = WorkspaceCopy(
                self.workspace.resolve(),
                limit=int(copy_limit_mb * 1e6),
                workdir=WORKDIR,
                user=self.user,
                protected=self._protected_here,
            )
        self._copy_lock = threading.Lock()
        self._client: Any = None
        self._container_id: str | None = None
        self._hidden: Secrets = {}  # what the container's masks cover
        self._controls: Controls = {}  # what its read-only mounts of CONTROL_PATHS cover
        self._checks: BindChecks | None = None  # bind mode: git's paths, the looks after
        self._placeholders: set[Path] = set()  # mount points this sandbox made for them
        self._lock = threading.Lock()
        self._generation = 0  # bumped by close(): runs in flight become "interrupted"

    # -- public API -------------------------------------------------------------

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        on_output: OutputCallback | None = None,
        max_output: int = 1_000_000,
    ) -> CommandResult:
        limit = max(0.0, min(timeout, self.max_timeout))
        loop = asyncio.get_running_loop()
        status = self._status_sink(loop)
        if self._container_id is None:
            # Creation may pull an image: cancelling it only stops the wait.
            await asyncio.to_thread(self._ensure_container, status)
        generation = self._generation
        marker = secrets.token_hex(8)
        since = time.time_ns() - _SLACK_NS
        started = loop.time()
        launch = _Launch(
            loop, functools.partial(self._start_exec, command, marker, status), max_output
        )
        exit_code: int | None = None
        timed_out = restarted = False
        try:
            api, exec_id = await self._launch(launch, marker)
            try:
                async with asyncio.timeout(limit):
                    await pump(launch.queue, on_output)
                    launch.reader = None  # its stream has ended
                    if generation == self._generation:
                        exit_code = await asyncio.to_thread(self._exit_code, api, exec_id)
            except TimeoutError:
                timed_out = True
                restarted = await self._kill(marker)
                if launch.reader is not None:
                    await self._finish(launch.reader, launch.queue, on_output)
        except BaseException:
            # Cancelled (an interrupt) or on_output raised: kill the tree, then propagate.
            start = launch.start
            await asyncio.shield(self._abort(start, launch.reader, marker, launch.queue))
            if start.done() and not start.cancelled() and start.exception() is None:
                await asyncio.shield(self._copy_back(generation))  # what it did before
                await asyncio.shield(self._clean(since))
            raise
        buffer = launch.buffer
        duration = loop.time() - started
        copy_note = await self._copy_back(generation)
        cleaned = await self._clean(since)

        interrupted = generation != self._generation
        exhausted = (
            not restarted
            and not interrupted
            and _looks_exhausted(buffer.text(), exit_code)
            and await asyncio.to_thread(self._replace_if_exhausted)
        )
        notes: list[str] = []
        if timed_out:
            exit_code = None
            notes.append(f"[timed out after {limit:g} s; the command was killed]")
            if restarted:
                notes.append(
                    "[the sandbox container was removed to stop it; the next command gets a new one]"
                )
        elif interrupted:
            exit_code = None
            notes.append("[interrupted: the sandbox was closed]")
        if exhausted:
            notes.append("[the sandbox could no longer start processes; it was recreated]")
        if copy_note:
            notes.append(copy_note)
        notes += cleaned
        notes += self._hints(buffer.text(), exit_code, timed_out)
        for line in notes:
            piece = buffer.note(line)
            if on_output is not None:
                on_output(*piece)
        return CommandResult(
            exit_code=exit_code,
            output=buffer.text(),
            timed_out=timed_out,
            truncated=buffer.truncated,
            interrupted=interrupted,
            duration=duration,
        )

    async def _launch(self, run: _Launch, marker: str) -> tuple[Any, str]:
        """Start the command's exec and its reader; again while the engine connects no output
        (`_WRAPPER`): such a run is abandoned before its command ran."""
        for attempt in range(1, LAUNCH_ATTEMPTS + 1):
            api, exec_id, stream = await asyncio.shield(run.start)
            reader = run.reader = _Reader(stream, run.buffer, run.loop, run.queue, marker)
            reader.start()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LAUNCH_WAIT):
                    await reader.settled.wait()
            if reader.settled.is_set() or not reader.abandon():
                return api, exec_id
            log.warning("the sandbox's command output was not connected; starting it again")
            run.reader = None
            await self._kill(marker)
            await asyncio.to_thread(_close_stream, stream)
            if attempt < LAUNCH_ATTEMPTS:
                run.again()
        raise SandboxUnavailable(
            f"The Docker engine did not connect the command's output ({LAUNCH_ATTEMPTS} tries); "
            "the command did not run."
        )

    def describe(self) -> dict[str, object]:
        info: dict[str, object] = {
            "backend": self.backend,
            "mode": self.mode,
            "sandboxed": True,
            "engine_reachable": False,
            "engine_version": None,
            "image": self.image,
            "image_present": None,
            "container": {
                "name": self.container_name,
                "id": None,
                "status": "not created",
                "running": False,
            },
            "network": self.network,
            "user": self.user,
            "workspace": str(self.workspace),
            "workspace_mode": self.workspace_mode,
            "read_only_root": True,
            "limits": {
                "memory": self.memory,
                "cpus": self.cpus,
                "pids": self.pids_limit,
                "max_timeout": self.max_timeout,
            },
        }
        try:
            client = _docker_client(timeout=3)
        except docker.errors.DockerException as e:
            info["engine_error"] = str(e)
            return info
        try:
            info["engine_reachable"] = bool(client.ping())
            info["engine_version"] = client.version().get("Version")
            try:
                client.images.get(self.image)
                info["image_present"] = True
            except docker.errors.ImageNotFound:
                info["image_present"] = False
            try:
                c = client.containers.get(self._container_id or self.container_name)
                info["container"] = {
                    "name": c.name,
                    "id": c.short_id,
                    "status": c.status,
                    "running": c.status == "running",
                }
            except docker.errors.NotFound:
                pass
        except docker.errors.DockerException as e:
            info["engine_error"] = str(e)
        finally:
            client.close()
        return info

    async def close(self) -> None:
        self._generation += 1
        await asyncio.to_thread(self._close_sync)

    # -- container lifecycle (worker threads) -----------------------------------

    def _status_sink(self, loop: asyncio.AbstractEventLoop) -> StatusCallback:
        def status(message: str) -> None:
            if self.on_status is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self.on_status, message)

        return status

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                self._client = _docker_client()
            except docker.errors.DockerException as e:
                raise _engine_unreachable(self.mode, e) from e
        return self._client

    def _ensure_container(self, status: StatusCallback) -> str:
        with self._lock:
            bound = self._copy is None and self._container_id is not None
            reason = None
            if bound and self._secrets_changed():
                # A mask covers the inode it was mounted over: a secret file replaced by
                # rename (a token refresh, an editor's save) or new since would be readable.
                reason = "Co's secret files in the workspace changed"
            elif bound and _controls_in(self.workspace.resolve()) != self._controls:
                # .co or .git replaced or removed on the host: the new one would be writable.
                reason = ".co or .git in the workspace changed"
            elif bound and self._checks is not None and (changed := self._checks.changed()):
                reason = changed
            if reason is not None:
                status(f"{reason}; recreating the sandbox…")
                with contextlib.suppress(docker.errors.DockerException):
                    self._get_client().api.remove_container(self._container_id, force=True, v=True)
                self._container_id = None
            if self._container_id is None:
                self._container_id = self._create_container(self._get_client(), status)
            return self._container_id

    def _secrets_changed(self) -> bool:
        """Whether a secret file or folder in the workspace is not the one masked: new,
        replaced, or gone. ``.env*`` files are not searched for again, only re-checked."""
        workspace = self.workspace.resolve()
        paths = _secret_paths(workspace, self.settings, walk=False)
        paths += [workspace / rel for rel in self._hidden]
        return _secrets_in(workspace, paths) != self._hidden

    def _create_container(self, client: Any, status: StatusCallback) -> str:
        workspace = self.workspace.resolve()
        if not workspace.is_dir():
            raise SandboxUnavailable(f"The sandbox workspace {workspace} is not a directory.")
        try:
            self._ensure_image(client, status)
            self._reap_orphans(client)
            hidden: Secrets = {}
            checks = None
            if self._copy is None:
                hidden = _secrets_in(workspace, _secret_paths(workspace, self.settings, walk=True))
                self._place_controls(workspace)
                checks = BindChecks(workspace, hidden)
                if checks.cut:
                    status(checks.cut_message(checks.cut))
            controls = _controls_in(workspace, mark=True) if self._copy is None else {}
            container = client.containers.create(
                self.image,
                ["sleep", "infinity"],
                name=self.container_name,
                labels=self._labels(),
                detach=True,
                init=True,  # reaps the zombies of killed process trees
                user=self.user,
                hostname="co-sandbox",
                working_dir=WORKDIR,
                # In copy mode root owns .git: git must trust it to read it.
                environment={"HOME": "/tmp", **({} if self._copy is None else _GIT_TRUST)},
                mounts=self._mounts(workspace, hidden, controls, checks),
                network_mode=self.network,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=True,
                tmpfs={"/tmp": f"rw,nosuid,nodev,size={self.memory}"},
                mem_limit=self.memory,
                memswap_limit=self.memory,
                nano_cpus=int(self.cpus * 1e9),
                pids_limit=self.pids_limit,
                ipc_mode="private",
            )
        except docker.errors.APIError as e:
            raise SandboxUnavailable(
                f"Could not create the sandbox container from {self.image}: {e.explanation or e}"
            ) from e
        except docker.errors.DockerException as e:
            raise _engine_unreachable(self.mode, e) from e
        try:
            container.start()
        except docker.errors.DockerException as e:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True, v=True)
            raise SandboxUnavailable(
                f"Could not start the sandbox container from {self.image}: {e}"
            ) from e
        self._hidden = hidden
        self._controls = controls
        if self._checks is not None:
            self._checks.close()
        self._checks = checks
        if checks is not None:
            checks.start()
        if self._copy is not None:
            with self._copy_lock:
                self._copy.reset()
        return str(container.id)

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

    def _labels(self) -> dict[str, str]:
        pid = os.getpid()
        return {
            "co.kernel": "1",
            "co.session": self.session_id,
            "co.kernel_id": self.kernel_id,
            "co.pid": str(pid),
            "co.pid_start": process_start(pid),
            "co.host": _HOST,
            "co.boot": _boot_id(),
            # Whose kernel: on a shared engine (JupyterHub users on one host) a kernel
            # reaps only its own user's leftovers.
            "co.uid": str(os.getuid()),
            "co.user": _user_name(os.getuid()),
        }

    def _ensure_image(self, client: Any, status: StatusCallback) -> None:
        try:
            client.images.get(self.image)
            return
        except docker.errors.ImageNotFound:
            pass
        status(f"Pulling {self.image}…")
        layers: dict[str, tuple[int, int]] = {}
        last = time.monotonic()
        try:
            for event in client.api.pull(self.image, stream=True, decode=True):
                if "error" in event:
                    raise SandboxUnavailable(self._pull_failed(event["error"]))
                detail = event.get("progressDetail") or {}
                if event.get("id") and detail.get("total"):
                    layers[event["id"]] = (detail.get("current", 0), detail["total"])
                if time.monotonic() - last > 0.5 and layers:
                    done = sum(c for c, _ in layers.values()) / 1e6
                    total = sum(t for _, t in layers.values()) / 1e6
                    status(f"Pulling {self.image}… {done:.0f}/{total:.0f} MB")
                    last = time.monotonic()
            client.images.get(self.image)
        except docker.errors.DockerException as e:
            raise SandboxUnavailable(self._pull_failed(e)) from e
        status(f"Pulled {self.image}.")

    def _pull_failed(self, error: object) -> str:
        return (
            f"The sandbox image {self.image} is not present and pulling it failed: {error}. "
            f"Pull it (`docker pull {self.image}`), build a local one "
            "(scripts/build-sandbox-image.sh builds co-sandbox-test:bookworm), "
            "or set sandbox_image in your own settings (~/.config/co/settings.json; a project "
            "file cannot) to an image this engine has."
        )

    def _reap_orphans(self, client: Any) -> None:
        """Remove containers of this user's kernels on this host that died without cleaning up."""
        boot = _boot_id()
        mine = self._labels()
        filters = {"label": ["co.kernel=1", f"co.uid={mine['co.uid']}"]}
        # ignore_removed: the listing inspects each container in turn, and one that another
        # kernel removes meanwhile is simply gone (it failed the whole creation before).
        for c in client.containers.list(all=True, filters=filters, ignore_removed=True):
            labels = c.labels
            if labels.get("co.host") != _HOST:
                continue  # another machine or pid namespace: its pids mean nothing here
            ours = all(labels.get(k) == mine[k] for k in ("co.pid", "co.pid_start", "co.boot"))
            if not ours and _owner_alive(labels, boot):
                if c.name == self.container_name:
                    raise SandboxUnavailable(
                        f"The container name {self.container_name} is taken by a live kernel "
                        f"(pid {labels.get('co.pid')}); session ids must be unique."
                    )
                continue
            if ours and c.name != self.container_name:
                continue  # another sandbox of this same process
            log.info("removing orphaned sandbox container %s", c.name)
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                c.remove(force=True, v=True)

    def _forget_container(self, api: Any, container_id: str) -> None:
        with self._lock:
            if self._container_id == container_id:
                self._container_id = None
        with contextlib.suppress(docker.errors.DockerException):
            api.remove_container(container_id, force=True, v=True)

    def _close_sync(self) -> None:
        if self._checks is not None:
            self._checks.close()
            self._checks = None
        with self._lock:
            container_id, self._container_id = self._container_id, None
            client, self._client = self._client, None
        if client is None:
            return
        try:
            if container_id is not None:
                with contextlib.suppress(docker.errors.NotFound):
                    client.api.remove_container(container_id, force=True, v=True)
            self._drop_placeholders(client)
        except docker.errors.DockerException:
            log.warning("could not remove sandbox container %s", container_id, exc_info=True)
        finally:
            client.close()

    # -- commands (worker threads) ----------------------------------------------

    def _start_exec(
        self, command: str, marker: str, status: StatusCallback
    ) -> tuple[Any, str, Any]:
        for attempt in (1, 2):
            container_id = self._ensure_container(status)
            api = self._get_client().api
            try:
                if self._copy is not None:
                    with self._copy_lock:
                        self._copy.push(api, container_id)
                exec_id = api.exec_create(
                    container_id,
                    ["/bin/sh", "-c", _WRAPPER, "sh", command],
                    environment={"CO_EXEC": marker},
                    workdir=WORKDIR,
                    stdin=True,  # only for the reader's "all arrived" (see _WRAPPER)
                )["Id"]
                return api, exec_id, api.exec_start(exec_id, stream=True, demux=True)
            except docker.errors.APIError as e:
                # Gone or stopped (removed by hand, killed to stop a fork bomb): start afresh.
                if attempt == 2 or e.status_code not in (404, 409):
                    raise SandboxUnavailable(
                        f"Could not run the command in the sandbox: {e}"
                    ) from e
                status("The sandbox container is gone; creating a new one…")
                self._forget_container(api, container_id)
        raise AssertionError("unreachable")

    def _exit_code(self, api: Any, exec_id: str) -> int | None:
        delay = 0.01
        while True:
            try:
                info = api.exec_inspect(exec_id)
            except docker.errors.DockerException:
                return None  # the container went away (close(), or removed by hand)
            # The stream can end (all writers closed their output) before the process exits.
            if not info.get("Running"):
                code = info.get("ExitCode")
                return None if code is None else int(code)
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def _kill_sync(self, marker: str) -> bool:
        """Kill the command's process tree in the container; return True if the container had to go."""
        with self._lock:
            container_id, client = self._container_id, self._client
        if container_id is None or client is None:
            return False  # closed: the container and its processes are gone
        api = client.api
        for attempt in range(3):
            try:
                exec_id = api.exec_create(container_id, ["/bin/sh", "-c", _KILLER, "sh", marker])[
                    "Id"
                ]
                api.exec_start(exec_id)
                if api.exec_inspect(exec_id).get("ExitCode") == 0:
                    return False
            except docker.errors.NotFound:
                return False  # no container, no process
            except docker.errors.APIError:
                log.debug("sandbox kill exec failed (attempt %d)", attempt + 1, exc_info=True)
            time.sleep(0.1 * (attempt + 1))
        # Probably out of pids: the only sure way to stop the tree is to stop the container.
        log.warning("could not kill a command in %s; removing the container", self.container_name)
        self._forget_container(api, container_id)
        return True

    def _replace_if_exhausted(self) -> bool:
        """Remove the container if its pids limit is used up (by processes nothing could
        tell were a command's); the next command gets a fresh one."""
        with self._lock:
            container_id, client = self._container_id, self._client
        if container_id is None or client is None:
            return False
        try:
            stats = client.api.stats(container_id, stream=False, one_shot=True)
        except docker.errors.DockerException:
            return False
        current = (stats.get("pids_stats") or {}).get("current") or 0
        if current < self.pids_limit - 2:
            return False
        log.warning("%s has no pids left; removing it", self.container_name)
        self._forget_container(client.api, container_id)
        return True

    # -- commands (event loop) ---------------------------------------------------

    async def _copy_back(self, generation: int) -> str | None:
        """Copy mode: apply the command's file changes on the host; a note when that failed."""
        if self._copy is None or generation != self._generation:
            return None
        try:
            notes = await asyncio.to_thread(self._pull)
        except (docker.errors.DockerException, OSError, tarfile.TarError) as e:
            log.warning("copy mode: copying the workspace back failed", exc_info=True)
            return f"[copy mode: the command's file changes could not be copied back: {e}]"
        if notes is None:
            return "[copy mode: the container was removed; the command's file changes are lost]"
        return "\n".join(notes) or None

    async def _clean(self, since_ns: int) -> list[str]:
        """Bind mode: what the command left, dealt with (``BindChecks.after_command``); a
        note instead when that failed."""
        checks = self._checks
        if checks is None:
            return []
        try:
            return await asyncio.to_thread(checks.after_command, since_ns)
        except OSError as e:
            log.warning("checking what the command left in the workspace failed", exc_info=True)
            return [f"[sandbox: checking what the command left in the workspace failed: {e}]"]

    def _pull(self) -> list[str] | None:
        """The copy-back notes; None when there was no container to copy from."""
        with self._lock:
            container_id, client = self._container_id, self._client
        if container_id is None or client is None or self._copy is None:
            return None
        with self._copy_lock:
            return self._copy.pull(client.api, container_id)

    async def _kill(self, marker: str) -> bool:
        try:
            return await asyncio.to_thread(self._kill_sync, marker)
        except docker.errors.DockerException:
            log.warning("could not kill a sandboxed command", exc_info=True)
            return False

    async def _finish(
        self, reader: _Reader, queue: asyncio.Queue[object], on_output: OutputCallback | None
    ) -> None:
        """After a kill, forward the last output; don't wait on stragglers holding the stream."""
        try:
            async with asyncio.timeout(GRACE_SECONDS):
                await pump(queue, on_output)
                return
        except TimeoutError:
            _wake(reader.stream)
        await pump(queue, on_output)

    async def _abort(
        self,
        start: asyncio.Future[tuple[Any, str, Any]],
        reader: _Reader | None,
        marker: str,
        queue: asyncio.Queue[object],
    ) -> None:
        try:
            _, _, stream = await start  # the exec may be starting right now: wait, then kill it
        except Exception:
            return
        await self._kill(marker)
        if reader is None:
            await asyncio.to_thread(_close_stream, stream)
        else:
            await self._finish(reader, queue, None)

    def _hints(self, output: str, exit_code: int | None, timed_out: bool) -> list[str]:
        text = output.lower()
        hints = []
        failed = timed_out or exit_code not in (0, None)
        if self.network == "none" and failed and any(s in text for s in _NETWORK_ERRORS):
            hints.append("(the sandbox has no network: set sandbox_network = bridge to allow it)")
        if exit_code == 137:
            hints.append(
                f"(exit code 137: the process was killed, most likely for going over the "
                f"sandbox memory limit of {self.memory}; sandbox_memory raises it)"
            )
        bind = self._copy is None  # in copy mode the container's workspace is the user's own
        if (
            bind
            and failed
            and "permission denied" in text
            and not _writable_by(self.workspace, self.user)
        ):
            hints.append(
                f"(the workspace {self.workspace} is not writable by uid {self.user.split(':')[0]}, "
                "the sandbox user: change its owner or mode, or run the kernel as its owner)"
            )
        if any(s in text for s in _FORK_ERRORS):
            hints.append(
                f"(the sandbox allows at most {self.pids_limit} processes; "
                "that limit, sandbox_pids_limit, may be what stopped this command)"
            )
        return hints
