"""Reading one command's output from its exec stream, between the wrapper's marks.

The docker SDK is synchronous: each command's output is read by its own thread, which
hands chunks to the event loop, where `on_output` is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from typing import Any

from ._protocol import EOF, OutputBuffer

__all__ = ["ExecReader"]

log = logging.getLogger(__name__)


def _mark(marker: str) -> bytes:
    """What the wrapper writes on stdout and on stderr before and after the command."""
    return b"\x1e" + marker.encode() + b"\x1e\n"


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


def _mark_prefix(data: bytes, mark: bytes) -> bytes:
    """The longest end of `data` that begins `mark` (held back until the next chunk)."""
    for start in range(max(0, len(data) - len(mark) + 1), len(data)):
        if data[start] == mark[0] and mark.startswith(data[start:]):
            return data[start:]
    return b""


class ExecReader(threading.Thread):
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
