"""The contract every sandbox backend fulfils, and the output accounting they share."""

from __future__ import annotations

import asyncio
import codecs
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast, runtime_checkable

__all__ = [
    "CommandResult",
    "OutputCallback",
    "SandboxProtocol",
    "StatusCallback",
]

OutputCallback = Callable[[str, str], None]
"""Receives `(stream_name, text)` as output arrives; `stream_name` is "stdout" or "stderr"."""
StatusCallback = Callable[[str], None]
"""Receives one-line progress messages about the sandbox itself ("Pulling python:3.12-slim…")."""


@dataclass
class CommandResult:
    """What a command did, as its user saw it."""

    exit_code: int | None
    """The command's exit status; None when it was killed by a timeout or an interrupt."""
    output: str
    """Combined stdout and stderr in arrival order, including the sandbox's own notes."""
    timed_out: bool = False
    """The time limit expired and the command's process group was killed."""
    truncated: bool = False
    """The output went over `max_output`; the rest was read and discarded."""
    interrupted: bool = False
    """The sandbox was closed while the command ran."""
    duration: float = 0.0
    """Wall-clock seconds from start to finish, excluding container creation."""


@runtime_checkable
class SandboxProtocol(Protocol):
    """A place to run shell commands for one kernel session."""

    backend: str
    """ "docker" or "subprocess"."""

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        on_output: OutputCallback | None = None,
        max_output: int = 1_000_000,
    ) -> CommandResult:
        """Run `command` with /bin/sh in the workspace.

        `on_output` is called on the event loop thread as chunks arrive. On
        cancellation the command's whole process tree is killed before
        `CancelledError` propagates.
        """
        ...

    def describe(self) -> dict[str, object]:
        """Report backend, reachability, image, container and limits without creating anything."""
        ...

    async def close(self) -> None:
        """Remove the container and kill leftovers; idempotent."""
        ...


# ---------------------------------------------------------------------------
# Shared by the backends: output accounting and the notes the sandbox adds.

GRACE_SECONDS = 1.0
"""How long to wait for output after a command exits or is killed before giving up on it."""


def process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot, to tell a reused pid apart ("" off Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def format_size(n: int) -> str:
    """1_000_000 -> "1 MB", 2_500 -> "2.5 kB" (decimal units of characters)."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:g} MB"
    if n >= 1_000:
        return f"{n / 1_000:g} kB"
    return f"{n} characters"


class OutputBuffer:
    """Decodes a command's output and keeps at most `max_output` characters of it.

    Thread-safe: the Docker backend feeds it from a reader thread while the event
    loop adds notes. `feed` and `note` return exactly the pieces to forward to
    `on_output`, so `text()` is always what the user was shown.
    """

    def __init__(self, max_output: int) -> None:
        self.max_output = max(0, max_output)
        self.truncated = False
        self._parts: list[str] = []
        self._size = 0
        self._at_line_start = True
        self._lock = threading.Lock()
        self._decoders = {
            name: codecs.getincrementaldecoder("utf-8")(errors="replace")
            for name in ("stdout", "stderr")
        }

    def feed(self, stream: str, data: bytes, *, final: bool = False) -> list[tuple[str, str]]:
        """Account for a chunk of `stream`; `final` flushes a character split at EOF."""
        with self._lock:
            text = self._decoders[stream].decode(data, final=final)
            if not text or self.truncated:
                return []
            room = self.max_output - self._size
            if len(text) <= room:
                self._append(text)
                return [(stream, text)]
            self.truncated = True
            pieces: list[tuple[str, str]] = []
            if room > 0:
                self._append(text[:room])
                pieces.append((stream, text[:room]))
            size = format_size(self.max_output)
            pieces.append(
                self._note(
                    f"[output truncated at {size}; the command kept running, the rest was discarded]"
                )
            )
            return pieces

    def note(self, line: str) -> tuple[str, str]:
        """Append a line of the sandbox's own (never truncated); return it as a stderr piece."""
        with self._lock:
            return self._note(line)

    def text(self) -> str:
        with self._lock:
            return "".join(self._parts)

    def _note(self, line: str) -> tuple[str, str]:
        text = ("" if self._at_line_start else "\n") + line + "\n"
        self._parts.append(text)
        self._at_line_start = True
        return ("stderr", text)

    def _append(self, text: str) -> None:
        self._parts.append(text)
        self._size += len(text)
        self._at_line_start = text.endswith("\n")


EOF = object()
"""Queue item a reader pushes when its stream has ended."""


async def pump(
    queue: asyncio.Queue[object], on_output: OutputCallback | None, readers: int = 1
) -> None:
    """Forward `(stream, text)` items to `on_output` until each of `readers` has pushed EOF."""
    remaining = readers
    while remaining:
        item = await queue.get()
        if item is EOF:
            remaining -= 1
        elif on_output is not None:
            stream, text = cast(tuple[str, str], item)
            on_output(stream, text)
