"""Runs commands directly ON THE HOST, unsandboxed, for users who opt in.

Same contract as the Docker backend: /bin/sh in the workspace, output streamed
per stream, the command's process group killed on timeout or cancellation, the
same truncation. Each command gets its own session (`start_new_session`), so
its process group is the tree to kill.

As in a container, background jobs may outlive their command: once the command
has exited, output still held open by them is waited for only briefly, then the
call returns and their output is no longer read. `close()` kills every process
group this sandbox started that is still alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
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


class SubprocessSandbox:
    """Runs commands on the host in the workspace, with no isolation at all."""

    backend = "subprocess"

    def __init__(self, *, workspace: Path, max_timeout: float = 600) -> None:
        if max_timeout <= 0:
            raise ValueError("sandbox max_timeout must be positive")
        self.workspace = Path(workspace)
        self.max_timeout = max_timeout
        self._groups: dict[int, str] = {}  # pgid -> its leader's start time
        self._running = 0
        self._generation = 0  # bumped by close(): runs in flight become "interrupted"

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
        transport, protocol = await loop.subprocess_shell(
            lambda: _Command(buffer, queue),
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.workspace,
            start_new_session=True,
        )
        pgid = transport.get_pid()
        self._groups[pgid] = process_start(pgid)
        self._running += 1
        forward = asyncio.create_task(pump(queue, on_output, readers=2))
        timed_out = False
        try:
            try:
                async with asyncio.timeout(limit):
                    await self._wait(protocol, forward)
            except TimeoutError:
                timed_out = True
                self._kill_group(pgid)
                await self._settle(protocol, forward)
        except BaseException:
            # Cancelled (an interrupt) or on_output raised: kill the tree, then propagate.
            self._kill_group(pgid)
            await asyncio.shield(self._settle(protocol, forward))
            raise
        finally:
            self._running -= 1
            forward.cancel()
            transport.close()  # stops reading pipes still held by background jobs
            self._forget_dead_groups()
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
        self._forget_dead_groups()
        return {
            "backend": self.backend,
            "mode": "subprocess",
            "sandboxed": False,
            "warning": f"commands run ON THE HOST, unsandboxed, as uid {os.getuid()}",
            "workspace": str(self.workspace),
            "running": self._running,
            "process_groups": len(self._groups),
            "limits": {"max_timeout": self.max_timeout},
        }

    async def close(self) -> None:
        self._generation += 1
        for pgid in list(self._groups):
            self._kill_group(pgid)
        self._groups.clear()

    def _kill_group(self, pgid: int) -> None:
        started = self._groups.get(pgid, "")
        now = process_start(pgid)
        if started and now and now != started:
            return  # the leader is gone and its pid now leads someone else's group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)

    def _forget_dead_groups(self) -> None:
        for pgid in list(self._groups):
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                del self._groups[pgid]
            except PermissionError:
                pass

    @staticmethod
    async def _wait(protocol: _Command, forward: asyncio.Task[None]) -> None:
        """Wait for the command to exit and its output to end (briefly, once it has exited)."""
        exited = asyncio.create_task(protocol.exited.wait())
        try:
            await asyncio.wait({exited, forward}, return_when=asyncio.FIRST_COMPLETED)
            if forward.done():
                forward.result()  # re-raise what on_output raised
                await exited  # the output is closed; the process may still be running
                return
            await asyncio.wait({forward}, timeout=GRACE_SECONDS)
            if forward.done():
                forward.result()
        finally:
            exited.cancel()

    @staticmethod
    async def _settle(protocol: _Command, forward: asyncio.Task[None]) -> None:
        """After a kill: wait for the exit and forward the last output, not hanging on stragglers."""
        await protocol.exited.wait()
        await asyncio.wait({forward}, timeout=GRACE_SECONDS)
