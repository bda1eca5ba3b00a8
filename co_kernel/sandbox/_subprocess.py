"""Runs commands directly ON THE HOST, unsandboxed, for users who opt in.

Same contract as the Docker backend: /bin/sh in the workspace, output streamed
per stream, the command's process group killed on timeout or cancellation, the
same truncation. Each command gets its own session (`start_new_session`) and a
`CO_EXEC=<id>` environment marker. When it ends, normally, by timeout or by
cancellation, its process group and every process still carrying the marker (a
`setsid` daemon, a `nohup` job) are killed, so nothing it started outlives it.
`close()` does the same for commands still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from pathlib import Path

from ._protocol import (
    EOF,
    GRACE_SECONDS,
    CommandResult,
    OutputBuffer,
    OutputCallback,
    process_start,
    pump,
)

__all__ = ["SubprocessSandbox"]

_STREAMS = {1: "stdout", 2: "stderr"}


class _Command(asyncio.SubprocessProtocol):
    """Feeds one command's pipes into its OutputBuffer and notes when it exits."""

    def __init__(self, buffer: OutputBuffer, queue: asyncio.Queue[object]) -> None:
        self._buffer = buffer
        self._queue = queue
        self.exited = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        for piece in self._buffer.feed(_STREAMS[fd], data):
            self._queue.put_nowait(piece)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        for piece in self._buffer.feed(_STREAMS[fd], b"", final=True):
            self._queue.put_nowait(piece)
        self._queue.put_nowait(EOF)

    def process_exited(self) -> None:
        self.exited.set()


def _pids() -> list[int]:
    """Live processes' pids ([] off Linux, where there is no /proc)."""
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _environ(pid: int) -> bytes:
    """A process's environment as NUL-separated bytes; b"" if it is gone or not ours."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""


class SubprocessSandbox:
    """Runs commands on the host in the workspace, with no isolation at all."""

    backend = "subprocess"

    def __init__(self, *, workspace: Path, max_timeout: float = 600) -> None:
        if max_timeout <= 0:
            raise ValueError("sandbox max_timeout must be positive")
        self.workspace = Path(workspace)
        self.max_timeout = max_timeout
        self._groups: dict[int, tuple[str, str]] = {}  # pgid -> (leader's start, marker)
        self._running = 0
        self._generation = 0  # bumped by close(): runs in flight become "interrupted"
        self.warned = False
        """Whether the session was told, in a `!` cell, that commands run on the host."""

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
        started = loop.time()
        generation = self._generation
        buffer = OutputBuffer(max_output)
        queue: asyncio.Queue[object] = asyncio.Queue()
        marker = secrets.token_hex(8)
        transport, protocol = await loop.subprocess_shell(
            lambda: _Command(buffer, queue),
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.workspace,
            env={**os.environ, "CO_EXEC": marker},
            start_new_session=True,
        )
        pgid = transport.get_pid()
        self._groups[pgid] = (process_start(pgid), marker)
        self._running += 1
        if generation != self._generation:
            # close() ran while the process started, before its group was known to it.
            self._kill_tree(pgid)
        forward = asyncio.create_task(pump(queue, on_output, readers=2))
        timed_out = False
        try:
            try:
                async with asyncio.timeout(limit):
                    await self._wait(protocol, forward)
                    self._kill_tree(pgid)
                    await self._drain(forward)
            except TimeoutError:
                timed_out = True
                self._kill_tree(pgid)
                await self._settle(protocol, forward)
        except BaseException:
            # Cancelled (an interrupt) or on_output raised: kill the tree, then propagate.
            self._kill_tree(pgid)
            await asyncio.shield(self._settle(protocol, forward))
            raise
        finally:
            self._running -= 1
            forward.cancel()
            transport.close()
            self._groups.pop(pgid, None)
        duration = loop.time() - started

        interrupted = generation != self._generation
        exit_code = None if timed_out or interrupted else transport.get_returncode()
        notes = []
        if timed_out:
            notes.append(f"[timed out after {limit:g} s; the command was killed]")
        elif interrupted:
            notes.append("[interrupted: the sandbox was closed]")
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

    def describe(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "mode": "subprocess",
            "sandboxed": False,
            "warning": self.warning(),
            "workspace": str(self.workspace),
            "running": self._running,
            "process_groups": len(self._groups),
            "limits": {"max_timeout": self.max_timeout},
        }

    @staticmethod
    def warning() -> str:
        """What a person must know before a command runs here."""
        return f"Commands run ON THE HOST, unsandboxed, as uid {os.getuid()}: not in a sandbox."

    async def close(self) -> None:
        self._generation += 1
        for pgid in list(self._groups):
            self._kill_tree(pgid)
        self._groups.clear()

    def _kill_tree(self, pgid: int) -> None:
        """Kill the command's process group and whatever carries its marker, until none is left."""
        started, marker = self._groups.get(pgid, ("", ""))
        now = process_start(pgid)
        # Unless the leader is gone and its pid now leads someone else's group.
        if not (started and now and now != started):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        needle = f"CO_EXEC={marker}".encode()
        for _ in range(20):
            marked = [pid for pid in _pids() if needle in _environ(pid).split(b"\0")]
            if not marked:
                return
            for pid in marked:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    @staticmethod
    async def _wait(protocol: _Command, forward: asyncio.Task[None]) -> None:
        """Wait for the command to exit (re-raising what `on_output` raised meanwhile)."""
        exited = asyncio.create_task(protocol.exited.wait())
        try:
            await asyncio.wait({exited, forward}, return_when=asyncio.FIRST_COMPLETED)
            if forward.done():
                forward.result()  # re-raise what on_output raised
            await exited
        finally:
            exited.cancel()

    @staticmethod
    async def _drain(forward: asyncio.Task[None]) -> None:
        """Forward the output left once the tree is killed, not hanging on stragglers."""
        await asyncio.wait({forward}, timeout=GRACE_SECONDS)
        if forward.done():
            forward.result()

    @staticmethod
    async def _settle(protocol: _Command, forward: asyncio.Task[None]) -> None:
        """After a kill: wait for the exit and forward the last output, not hanging on stragglers."""
        await protocol.exited.wait()
        await asyncio.wait({forward}, timeout=GRACE_SECONDS)
