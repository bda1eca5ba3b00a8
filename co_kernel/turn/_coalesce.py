"""Fewer, larger stream events from a model that runs on this machine.

A local model server (llama.cpp, Ollama) sends one Server-Sent Event per token, and every
event costs the kernel the same fixed work however short its text: a wake-up, the OpenAI
SDK's decoding, pydantic-ai's event layers, Co's own handler. On a CPU shared with the
model that work is taken from generation (measured with SmolLM2 on 2 cores: about 1 ms of
kernel CPU per token, and llama.cpp decoding 13 % slower while Co streamed than while a bare
client did).

``CoalescingTransport`` reads the server's stream as it arrives, but while text flows it
hands it on at most once per ``window``, merging the text-only ``chat.completion.chunk``
events that arrived meanwhile into one. The answer shows at most 20 updates a second anyway
(``stream_max_updates_per_second``), so a window under 50 ms hides nothing. Only chunks
holding nothing but text merge: a chunk with a role change, tool calls, reasoning, logprobs,
a finish reason or usage passes through as it came, in order. Text after a pause is
passed on at once, and the end of the stream (or an error) at once too, so only the text
in the middle of a fast stream waits, at most ``window``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2

__all__ = ["DEFAULT_WINDOW", "CoalescingTransport", "local_http_client", "merge_events"]

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
    """The body of one event stream, read by a task and passed on in paced batches.

    Iterating it again continues where the last iteration stopped, as the transport's
    own stream does: the OpenAI SDK drains the rest of a stream after ``[DONE]`` that way.
    """

    def __init__(self, source: httpx2.AsyncByteStream, window: float) -> None:
        self._source = source
        self._window = window
        self._parts: list[bytes] = []
        self._arrived = asyncio.Event()
        self._ended: asyncio.Future[None] | None = None
        self._error: Exception | None = None
        self._reader: asyncio.Task[None] | None = None
        self._events = _EventMerger()
        self._last = float("-inf")

    async def _read(self) -> None:
        assert self._ended is not None
        try:
            async for part in self._source:
                self._parts.append(part)
                self._arrived.set()
        except Exception as exc:  # handed to the consumer after what arrived before it
            self._error = exc
        finally:
            if not self._ended.done():
                self._ended.set_result(None)
            self._arrived.set()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        if self._ended is None:
            self._ended = loop.create_future()
            self._reader = loop.create_task(self._read(), name="co-stream-reader")
        ended = self._ended
        try:
            while True:
                if not self._parts and not ended.done():
                    await self._arrived.wait()
                if self._events.pace and not ended.done():
                    # Text is flowing: let the next tokens gather, but wake at the end.
                    delay = self._last + self._window - loop.time()
                    if delay > 0:
                        await asyncio.wait([ended], timeout=delay)
                self._arrived.clear()
                data = b"".join(self._parts)
                self._parts.clear()
                done = ended.done()
                out = self._events.feed(data)
                if done:
                    out += self._events.rest()
                if out:
                    self._last = loop.time()
                    yield out
                if done:
                    error, self._error = self._error, None
                    if error is not None:
                        raise error
                    return
        except BaseException:
            # Abandoned (closed, cancelled): stop reading now rather than at aclose().
            self._stop_reader()
            raise

    def _stop_reader(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()

    async def aclose(self) -> None:
        reader = self._reader
        self._stop_reader()
        if reader is not None and not reader.done():
            # wait() rather than await: a cancellation of this task must still propagate.
            await asyncio.wait([reader])
        await self._source.aclose()


class _EventMerger:
    """Splits a byte stream into events and merges runs of text-only chunks."""

    def __init__(self) -> None:
        self._buffer = b""
        self._verbatim = False
        self.pace = False
        """Whether the last batch carried text (so the next one may wait a little)."""

    def feed(self, data: bytes) -> bytes:
        buffer = self._buffer + data
        if self._verbatim or b"\r" in buffer:
            # CR line endings are valid SSE but not what these servers send: pass through.
            self._verbatim = True
            self._buffer = b""
            self.pace = False
            return buffer
        end = buffer.rfind(_EVENT_END)
        if end < 0:
            self._buffer = buffer
            return b""
        self._buffer = buffer[end + 2 :]
        merged, self.pace = merge_events(buffer[:end].split(_EVENT_END))
        return merged

    def rest(self) -> bytes:
        rest, self._buffer = self._buffer, b""
        return rest


def merge_events(events: list[bytes]) -> tuple[bytes, bool]:
    """The events (without their blank-line ends) with runs of text chunks merged.

    Returns the bytes to pass on, each event ended by a blank line, and whether any text
    chunk was among them.
    """
    out: list[bytes] = []
    run: list[tuple[bytes, dict[str, Any], str]] = []
    run_key: Any = None
    text = False
    for event in events:
        parsed = _text_chunk(event)
        if parsed is None:
            _flush(run, out)
            run = []
            out.append(event + _EVENT_END)
            continue
        text = True
        obj, content, key = parsed
        if run and key != run_key:
            _flush(run, out)
            run = []
        if not run:
            run_key = key
        run.append((event, obj, content))
    _flush(run, out)
    return b"".join(out), text


def _flush(run: list[tuple[bytes, dict[str, Any], str]], out: list[bytes]) -> None:
    if not run:
        return
    if len(run) == 1:
        out.append(run[0][0] + _EVENT_END)
        return
    obj = run[0][1]
    obj["choices"][0]["delta"]["content"] = "".join(content for _, _, content in run)
    encoded = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    out.append(_DATA + encoded + _EVENT_END)


def _text_chunk(event: bytes) -> tuple[dict[str, Any], str, Any] | None:
    """(chunk, its text, what must match to merge) for a text-only chunk, else None."""
    if not event.startswith(b"data: {") or b"\n" in event:
        return None
    try:
        obj = json.loads(event[len(_DATA) :])
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
