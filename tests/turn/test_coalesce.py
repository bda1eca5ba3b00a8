"""The coalescing transport of local models, against real SSE streams over HTTP."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import pytest
from pydantic_ai import Agent, AgentRunResultEvent, DeferredToolRequests
from pydantic_ai.messages import PartDeltaEvent, TextPartDelta
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from co_kernel.models._coalesce import CoalescingTransport, local_http_client
from co_kernel.replay import ScriptedModelServer

from ..support.coalesce import merge_events

STORY = " ".join(
    "The keeper climbed the tower as the storm rolled in, and the lamp turned all night."
    for _ in range(12)
)
BODY = {
    "model": "scripted",
    "messages": [{"role": "user", "content": "a story"}],
    "stream": True,
    "stream_options": {"include_usage": True},
}


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    obj = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return b"data: " + json.dumps(obj).encode()


def events_of(stream: bytes) -> list[bytes]:
    assert stream.endswith(b"\n\n"), "every event ends with a blank line"
    return stream[:-2].split(b"\n\n")


def payloads(stream: bytes) -> list[Any]:
    return [
        json.loads(e[6:]) if e != b"data: [DONE]" else "[DONE]"
        for e in events_of(stream)
        if e.startswith(b"data: ")
    ]


def text_of(stream: bytes) -> str:
    return "".join(
        c["choices"][0]["delta"].get("content") or ""
        for c in payloads(stream)
        if isinstance(c, dict) and c["choices"]
    )


# -- which events merge ---------------------------------------------------------------


def test_runs_of_text_chunks_merge_and_keep_their_text() -> None:
    events = [chunk({"content": t}) for t in ("Hel", "lo", ", wor", "ld")]
    merged = merge_events(events)
    (only,) = payloads(merged)
    assert only["choices"][0]["delta"] == {"content": "Hello, world"}
    assert only["id"] == "c1" and only["object"] == "chat.completion.chunk"


def test_a_single_text_chunk_passes_byte_for_byte() -> None:
    event = chunk({"content": "héllo"})
    assert merge_events([event]) == event + b"\n\n"


def test_role_tool_call_reasoning_finish_and_usage_chunks_pass_untouched() -> None:
    role = chunk({"role": "assistant", "content": None})
    call = chunk(
        {
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
            ]
        }
    )
    args = [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]})
        for a in ('{"pa', 'th": ', '"x"}')
    ]
    reasoning = [chunk({"reasoning_content": r}) for r in ("hm", "m")]
    finish = chunk({}, "tool_calls")
    usage = b'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"completion_tokens":9}}'
    events = [role, *reasoning, chunk({"content": "A"}), chunk({"content": "B"}), call, *args]
    events += [finish, usage, b"data: [DONE]"]
    merged = merge_events(events)
    out = events_of(merged)
    # Everything but the two text chunks arrives as it was sent, in order.
    assert out[:3] == [role, *reasoning]
    assert json.loads(out[3][6:])["choices"][0]["delta"] == {"content": "AB"}
    assert out[4:] == [call, *args, finish, usage, b"data: [DONE]"]


def test_text_never_merges_across_another_event() -> None:
    events = [chunk({"content": "a"}), b": keep-alive", chunk({"content": "b"})]
    merged = merge_events(events)
    assert events_of(merged) == events


def test_chunks_that_differ_in_more_than_text_do_not_merge() -> None:
    first = chunk({"content": "a"})
    other_choice = (
        b"data: "
        + json.dumps(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 1, "delta": {"content": "b"}, "finish_reason": None}],
            }
        ).encode()
    )
    with_logprobs = chunk({"content": "c"})
    with_logprobs = with_logprobs.replace(
        b'"finish_reason": null', b'"finish_reason": null, "logprobs": {"content": []}'
    )
    timings = chunk({"content": "d"}, timings={"predicted_n": 4})
    merged = merge_events([first, other_choice, with_logprobs, timings])
    assert events_of(merged) == [first, other_choice, with_logprobs, timings]


def test_ollama_chunks_that_repeat_the_role_merge() -> None:
    # Ollama's OpenAI API repeats the role in every chunk.
    events = [chunk({"role": "assistant", "content": t}) for t in ("Hi", " there")]
    merged = merge_events(events)
    (only,) = payloads(merged)
    assert only["choices"][0]["delta"] == {"role": "assistant", "content": "Hi there"}


# -- over HTTP ------------------------------------------------------------------------


async def read_stream(client: httpx2.AsyncClient, url: str) -> list[bytes]:
    parts = []
    async with client.stream("POST", f"{url}/chat/completions", json=BODY) as response:
        async for part in response.aiter_bytes():
            parts.append(part)
    return parts


def both_ways(url: str) -> tuple[bytes, bytes]:
    async def run() -> tuple[bytes, bytes]:
        async with httpx2.AsyncClient() as plain, local_http_client() as merging:
            return b"".join(await read_stream(plain, url)), b"".join(
                await read_stream(merging, url)
            )

    return asyncio.run(run())


def test_a_fast_stream_arrives_in_fewer_events_with_the_same_text() -> None:
    # Unpaced: the server writes the whole answer at once, so tokens pile up.
    steps = [{"text": STORY, "usage": {"completion_tokens": 200}}] * 2
    with ScriptedModelServer(steps) as server:
        plain, merged = both_ways(server.base_url)
    assert text_of(merged) == text_of(plain) == STORY
    assert len(events_of(merged)) < len(events_of(plain))
    # The role chunk, the finish chunk, usage and [DONE] are all still there.
    first, *_, finish, usage, done = payloads(merged)
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert finish["choices"][0]["finish_reason"] == "stop"
    assert usage["usage"]["completion_tokens"] == 200 and done == "[DONE]"


def test_tool_call_chunks_arrive_exactly_as_sent() -> None:
    step = {
        "text": "Let me look.",
        "tool_calls": [{"name": "read_file", "arguments": {"path": "notes/today.md"}}],
    }
    with ScriptedModelServer([step, step]) as server:
        plain, merged = both_ways(server.base_url)

    def calls(stream: bytes) -> list[bytes]:
        # Each request numbers its ids and has its own time: make the second's the first's.
        return [
            re.sub(rb'"created": \d+', b"", e)
            .replace(b"call_2_", b"call_1_")
            .replace(b"scripted-2", b"scripted-1")
            for e in events_of(stream)
            if b'"tool_calls"' in e
        ]

    assert calls(merged) == calls(plain) and len(calls(plain)) > 1
    assert text_of(merged) == "Let me look."


def test_a_paced_stream_keeps_its_text_and_order() -> None:
    with ScriptedModelServer([{"text": STORY}] * 2, tokens_per_second=400) as server:
        plain, merged = both_ways(server.base_url)
    assert text_of(merged) == text_of(plain) == STORY


class _HeldStream(BaseHTTPRequestHandler):
    """Sends the role and one token, then holds the stream until the test lets it go."""

    release: threading.Event
    closed: threading.Event

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in (chunk({"role": "assistant", "content": None}), chunk({"content": "Hi"})):
                self._send(event + b"\n\n")
            self.release.wait(30)
            for _ in range(50):  # until the client's close shows as a broken pipe
                self._send(chunk({"content": " more"}) + b"\n\n")
                time.sleep(0.02)
        except (BrokenPipeError, ConnectionResetError):
            self.closed.set()

    def _send(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def held_server() -> Iterator[tuple[str, type[_HeldStream]]]:
    handler = type(
        "Handler", (_HeldStream,), {"release": threading.Event(), "closed": threading.Event()}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        handler.release.set()
        server.shutdown()
        server.server_close()


def test_the_first_token_is_passed_on_while_the_server_still_holds_the_rest(
    held_server: tuple[str, type[_HeldStream]],
) -> None:
    url, handler = held_server

    async def run() -> str:
        async with (
            local_http_client(window=0.05) as client,
            client.stream("POST", f"{url}/chat/completions", json=BODY) as response,
        ):
            seen = b""
            async for part in response.aiter_bytes():
                seen += part
                if b'"Hi"' in seen:
                    # Nothing more exists yet: the transport did not sit on the token.
                    assert not handler.release.is_set()
                    return text_of(seen)
        return ""

    assert asyncio.run(asyncio.wait_for(run(), 20)) == "Hi"


def test_cancelling_the_reader_closes_the_connection(
    held_server: tuple[str, type[_HeldStream]],
) -> None:
    url, handler = held_server

    async def run() -> None:
        async with local_http_client() as client:

            async def consume() -> None:
                async with client.stream("POST", f"{url}/chat/completions", json=BODY) as r:
                    async for part in r.aiter_bytes():
                        if b'"Hi"' in part:
                            started.set()

            started = asyncio.Event()
            task = asyncio.create_task(consume())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(asyncio.wait_for(run(), 20))
    handler.release.set()
    # The server finds out on its next write: the stream it was sending is gone.
    assert handler.closed.wait(10)


def test_a_dropped_connection_delivers_what_came_then_the_same_error() -> None:
    step = {"text": "one two three four five", "fault": {"kind": "drop", "after_chunks": 4}}

    async def run(client: httpx2.AsyncClient) -> tuple[bytes, BaseException | None]:
        seen = b""
        async with client:
            try:
                async with client.stream(
                    "POST", f"{server.base_url}/chat/completions", json=BODY
                ) as response:
                    async for part in response.aiter_bytes():
                        seen += part
            except httpx2.HTTPError as exc:
                return seen, exc
        return seen, None

    with ScriptedModelServer([step, step]) as server:
        plain, plain_error = asyncio.run(run(httpx2.AsyncClient()))
        merged, error = asyncio.run(run(local_http_client()))
    assert type(error) is type(plain_error) is httpx2.RemoteProtocolError
    assert text_of(merged) == text_of(plain) and text_of(plain).startswith("one two")


def test_other_responses_are_not_touched() -> None:
    async def run(url: str) -> Any:
        async with httpx2.AsyncClient(transport=CoalescingTransport()) as client:
            response = await client.get(f"{url}/models")
            return response.json()

    with ScriptedModelServer([]) as server:
        listing = asyncio.run(run(server.base_url))
    assert listing["data"][0]["id"] == "scripted"


# -- through pydantic-ai --------------------------------------------------------------


def test_pydantic_ai_streams_the_same_answer_and_tool_call_through_it() -> None:
    steps = [
        # Paced, so the answer arrives in several reads however busy the machine is (at
        # full speed a loaded run can read it whole: one part, no deltas).
        {"text": STORY, "tokens_per_second": 400},
        {"text": "Checking.", "tool_calls": [{"name": "lookup", "arguments": {"q": "storm"}}]},
    ]

    async def run(url: str) -> tuple[Any, list[str], Any]:
        client = local_http_client()
        model = OpenAIChatModel(
            "scripted", provider=OpenAIProvider(base_url=url, http_client=client)
        )
        agent = Agent(model, output_type=[str, DeferredToolRequests])

        @agent.tool_plain(requires_approval=True)
        def lookup(q: str) -> str:
            return q

        deltas: list[str] = []
        first = None
        async with client:
            async with agent.run_stream_events("tell me") as events:
                async for event in events:
                    if isinstance(event, AgentRunResultEvent):
                        first = event.result.output
                    elif isinstance(event, PartDeltaEvent) and isinstance(
                        event.delta, TextPartDelta
                    ):
                        deltas.append(event.delta.content_delta)
            second = await agent.run("look it up")
        return first, deltas, second.output

    with ScriptedModelServer(steps) as server:
        text, deltas, output = asyncio.run(run(server.base_url))
    assert text == STORY and deltas and STORY.endswith("".join(deltas))
    assert isinstance(output, DeferredToolRequests)
    (call,) = output.approvals
    assert call.tool_name == "lookup" and call.args_as_dict() == {"q": "storm"}
