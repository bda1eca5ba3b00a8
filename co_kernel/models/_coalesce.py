"""Fewer, larger stream events from a model that runs on this machine.

A local model server (llama.cpp, Ollama) sends one Server-Sent Event per token, and every
event costs the kernel the same work however short its text: a read from the socket, the
OpenAI SDK's decoding, pydantic-ai's event layers, Co's handler. On a CPU shared with the
model that work is taken from generation (measured with SmolLM2 streaming 75 tokens/s on
2 cores: 1.1-1.3 ms of kernel CPU per token without this transport, 0.6 with it).

``CoalescingTransport`` hands such a stream on in batches: while text flows, it reads
nothing for ``window`` after passing a batch on, so the tokens that arrive meanwhile wait
in the socket, come in one read, and their text-only ``chat.completion.chunk`` events
become one. The answer shows at most 20 updates a second anyway
(``stream_max_updates_per_second``), so a window under 50 ms hides nothing. Only chunks
holding nothing but text merge: a chunk with a role change, tool calls, reasoning,
logprobs, a finish reason or usage passes through as it came, in order, and ends the wait.
The first text after a pause is passed on at once; the end of the stream and errors are
passed on as soon as they are read, which is at most ``window`` after they arrive.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx2

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["DEFAULT_WINDOW", "CoalescingTransport", "local_http_client"]

DEFAULT_WINDOW = 0.04
"""Seconds: under the display's 50 ms between updates, and three tokens at 75 tokens/s."""

_DATA = b"data: "
_EVENT_END = b"\n\n"
_CHOICE_KEYS = frozenset({"index", "delta", "finish_reason", "logprobs"})
_DELTA_KEYS = frozenset({"content", "role"})
# Fields that differ between chunks of one stream without meaning anything to a client.
_VOLATILE_KEYS = frozenset({"choices", "created", "obfuscation"})


class CoalescingTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport that merges the text chunks of event streams (see the module)."""

    def __init__(
        self, window: float = DEFAULT_WINDOW, wrapped: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        self.window = window
        self._wrapped = wrapped if wrapped is not None else httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._wrapped.handle_async_request(request)
        if self.window > 0 and _is_plain_event_stream(response):
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = CoalescedStream(response.stream, self.window)
        return response

    async def aclose(self) -> None:
        await self._wrapped.aclose()


def local_http_client(window: float = DEFAULT_WINDOW) -> httpx2.AsyncClient:
    """pydantic-ai's usual HTTP client, for a model server on this machine."""
    from pydantic_ai.models import create_async_httpx2_client

    return create_async_httpx2_client(transport=CoalescingTransport(window))


def _is_plain_event_stream(response: httpx2.Response) -> bool:
    # The stream is still encoded here: only an uncompressed one can be read as events.
    content_type = response.headers.get("content-type", "")
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    return content_type.startswith("text/event-stream") and encoding in ("", "identity")


class CoalescedStream(httpx2.AsyncByteStream):
    """The body of one event stream, read in paced batches.

    While text flows, nothing is read for ``window`` after each batch is passed on: the
    tokens that arrive meanwhile wait in the socket and come in one read, and the text
    chunks among them become one event. Whatever has arrived is always taken at once,
    so a batch never waits for the network. Iterating the stream again continues where
    the last iteration stopped, as the transport's own stream does: the OpenAI SDK drains
    the rest of a stream after ``[DONE]`` that way.
    """

    def __init__(self, source: httpx2.AsyncByteStream, window: float) -> None:
        self._source = source
        self._window = window
        self._parts: AsyncIterator[bytes] | None = None
        self._read: asyncio.Task[bytes | None] | None = None
        """The read in flight, if any (a task, so that it can be left running)."""
        self._events = _EventMerger()
        self._done = False
        self._error: Exception | None = None
        self._last = float("-inf")

    async def _next_part(self) -> bytes | None:
        assert self._parts is not None
        try:
            return await anext(self._parts)
        except StopAsyncIteration:
            return None

    def _reading(self) -> asyncio.Task[bytes | None]:
        if self._read is None:
            self._read = asyncio.get_running_loop().create_task(self._next_part())
        return self._read

    def _take(self, read: asyncio.Task[bytes | None]) -> None:
        """Hand a finished read to the merger; note the end and any error."""
        self._read = None
        try:
            part = read.result()
        except Exception as exc:  # passed on after what arrived before it
            self._error = exc
            part = None
        if part is None:
            self._done = True
        else:
            self._events.feed(part)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        if self._parts is None:
            self._parts = self._source.__aiter__()
        try:
            while True:
                if not self._events.holding and not self._done:
                    # Nothing to pass on: wait for the server.
                    read = self._reading()
                    await asyncio.wait([read])
                    self._take(read)
                while not self._done:
                    # Take what has already arrived (parts the HTTP parser holds).
                    read = self._reading()
                    if not read.done():
                        await asyncio.sleep(0)  # a part that needs no network is ready now
                        if not read.done():
                            break
                    self._take(read)
                out = self._events.take()
                if self._done:
                    out += self._events.rest()
                if out:
                    self._last = loop.time()
                    yield out
                if self._done:
                    error, self._error = self._error, None
                    if error is not None:
                        raise error
                    return
                await self._pace(loop)
        except BaseException:
            # Abandoned (closed, cancelled): stop the read in flight now.
            if self._read is not None:
                self._read.cancel()
            raise

    async def _pace(self, loop: asyncio.AbstractEventLoop) -> None:
        """In the middle of text, let the next tokens gather until the window is over.

        The read already in flight may finish early: its text is held for the batch, but
        anything else (a tool call, the finish, the end) ends the wait at once.
        """
        while self._events.mid_text and not self._done:
            delay = self._last + self._window - loop.time()
            if delay <= 0:
                return
            if self._read is None:
                await asyncio.sleep(delay)
                return
            await asyncio.wait([self._read], timeout=delay)
            if not self._read.done():
                return
            self._take(self._read)

    async def aclose(self) -> None:
        read, self._read = self._read, None
        if read is not None and not read.done():
            read.cancel()
            # wait() rather than await: a cancellation of this task must still propagate.
            await asyncio.wait([read])
        parts = self._parts
        if isinstance(parts, AsyncGenerator):
            await parts.aclose()
        await self._source.aclose()


class _EventMerger:
    """Splits a byte stream into events and merges runs of text-only chunks.

    The run of text chunks at the end stays open across ``feed`` calls, so everything
    between two ``take`` calls merges into one event when it is all text.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._verbatim = False
        self._out: list[bytes] = []
        self._run: list[tuple[bytes, dict[str, Any], str]] = []
        self._run_key: Any = None
        self.mid_text = False
        """Whether the last complete event was text (the answer is streaming)."""

    @property
    def holding(self) -> bool:
        """Whether complete events wait to be taken."""
        return bool(self._out or self._run)

    def feed(self, data: bytes) -> None:
        buffer = self._buffer + data
        if self._verbatim or b"\r" in buffer:
            # CR line endings are valid SSE but not what these servers send: pass through.
            self._verbatim = True
            self._buffer = b""
            self.mid_text = False
            self._close_run()
            if buffer:
                self._out.append(buffer)
            return
        end = buffer.rfind(_EVENT_END)
        if end < 0:
            self._buffer = buffer
            return
        self._buffer = buffer[end + 2 :]
        for event in buffer[:end].split(_EVENT_END):
            parsed = _text_chunk(event)
            if parsed is None:
                self._close_run()
                self._out.append(event + _EVENT_END)
                self.mid_text = False
                continue
            obj, content, key = parsed
            if self._run and key != self._run_key:
                self._close_run()
            if not self._run:
                self._run_key = key
            self._run.append((event, obj, content))
            self.mid_text = True

    def take(self) -> bytes:
        """The complete events so far, text runs merged."""
        self._close_run()
        out = b"".join(self._out)
        self._out.clear()
        return out

    def rest(self) -> bytes:
        """An unfinished last event, as it came (the stream ended without its blank line)."""
        rest, self._buffer = self._buffer, b""
        return rest

    def _close_run(self) -> None:
        run, self._run = self._run, []
        if not run:
            return
        if len(run) == 1:
            self._out.append(run[0][0] + _EVENT_END)
            return
        obj = run[0][1]
        obj["choices"][0]["delta"]["content"] = "".join(content for _, _, content in run)
        encoded = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        self._out.append(_DATA + encoded + _EVENT_END)


def _text_chunk(event: bytes) -> tuple[dict[str, Any], str, Any] | None:
    """(chunk, its text, what must match to merge) for a text-only chunk, else None."""
    if not event.startswith(b"data: {") or b"\n" in event:
        return None
    try:
        obj: JsonValue = json.loads(event[len(_DATA) :])
    except ValueError:
        return None
    if (
        not isinstance(obj, dict)
        or obj.get("object") != "chat.completion.chunk"
        or obj.get("usage") is not None
    ):
        return None
    choices = obj.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        return None
    choice = choices[0]
    if (
        not isinstance(choice, dict)
        or not choice.keys() <= _CHOICE_KEYS
        or choice.get("finish_reason") is not None
        or choice.get("logprobs") is not None
    ):
        return None
    delta = choice.get("delta")
    if not isinstance(delta, dict) or not delta.keys() <= _DELTA_KEYS:
        return None
    content = delta.get("content")
    if not isinstance(content, str) or not content:
        return None
    rest = {k: v for k, v in obj.items() if k not in _VOLATILE_KEYS}
    return obj, content, (rest, choice.get("index"), delta.get("role"))
