"""Running one command in the sandbox container: launch, output, timeout, kill.

Each command runs as a `docker exec` of a small /bin/sh wrapper that records its
pid (the exec is a session leader under runc, so that pid is also its process
group) and carries a `CO_EXEC=<id>` environment marker. Killing a command, on
timeout or cancellation, is a second exec that kills that process group and
every process still carrying the marker, so the whole tree dies inside the
container, not only the host-side wait. If even that exec cannot start (a fork
bomb has used up the pids limit), the container is removed and the next
command gets a fresh one.

The docker SDK is synchronous: API calls run in worker threads; each command's output is
read by its own thread (``_exec_stream``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import tarfile
import time
from collections.abc import Callable
from typing import Any

import docker.errors  # type: ignore[import-untyped]

from ..exceptions import SandboxUnavailable
from ._container import SandboxContainer
from ._exec_stream import ExecReader, _close_stream, _wake
from ._mounts import WORKDIR, _writable_by
from ._protocol import (
    GRACE_SECONDS,
    CommandResult,
    OutputBuffer,
    OutputCallback,
    StatusCallback,
    pump,
)

__all__ = ["SandboxExec"]

log = logging.getLogger(__name__)

LAUNCH_WAIT = 3.0
"""Seconds to wait for a command's wrapper to show its output is connected (`_WRAPPER`)."""
LAUNCH_ATTEMPTS = 3

# reap MARKER PGID: kill every process of the group or carrying CO_EXEC=MARKER in its
# environment, this shell excepted, until a pass finds none. A process of ours whose
# environment reads empty is in the middle of exec (a background `setsid sleep` just
# started): it is looked at again on the next pass rather than passed over. Builtins only (dash reads
# environ with its NULs dropped), so it works when the pids limit leaves nothing to fork.
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


_SLACK_NS = 50_000_000
"""How far before a command's start a change still counts as the command's: file times come
from the kernel's coarse clock, a tick behind the one Python reads."""


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
        self.reader: ExecReader | None = None
        self.again()

    def again(self) -> None:
        """A new exec, with fresh output: what an abandoned one's reader still sends is dropped."""
        self.buffer = OutputBuffer(self._max_output)
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.start = self.loop.run_in_executor(None, self._start_exec)


class SandboxExec(SandboxContainer):
    """Runs commands in the container: launch, output, time limit, kill, and what follows."""

    on_status: StatusCallback | None
    _generation: int

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
            reader = run.reader = ExecReader(stream, run.buffer, run.loop, run.queue, marker)
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

    def _status_sink(self, loop: asyncio.AbstractEventLoop) -> StatusCallback:
        def status(message: str) -> None:
            if self.on_status is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self.on_status, message)

        return status

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
        self, reader: ExecReader, queue: asyncio.Queue[object], on_output: OutputCallback | None
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
        reader: ExecReader | None,
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
