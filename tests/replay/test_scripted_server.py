"""The scripted model server, driven over real HTTP by the openai SDK and by pydantic-ai."""

from __future__ import annotations

import asyncio
import ctypes
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI, OpenAI
from pydantic_ai import Agent
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelTimeoutError,
)
from pydantic_ai.messages import PartStartEvent, ThinkingPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from co_kernel.replay import Script, ScriptedModelServer, Step

USER = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([]) as running:
        yield running


@pytest.fixture
def client(server: ScriptedModelServer) -> Iterator[OpenAI]:
    # No SDK retries: each request consumes exactly one step, as the tests count them.
    with OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk_client:
        yield sdk_client


def make_agent(server: ScriptedModelServer, **settings: Any) -> Agent[None, str]:
    model = OpenAIChatModel(
        "scripted-model", provider=OpenAIProvider(base_url=server.base_url, api_key="test")
    )
    return Agent(model, model_settings={"max_retries": 0, **settings})


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def post_json(url: str, body: object) -> tuple[int, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as e:
        with e:
            return e.code, json.load(e)


# -- streaming and non-streaming answers ----------------------------------------------------


def test_streamed_text_arrives_in_chunks_and_joins_exactly(
    server: ScriptedModelServer, client: OpenAI
) -> None:
    text = "Hello,  world!\nThis line has\ttabs, ünïcode and a verylongwordthatsplits. "
    server.reset([{"text": text, "usage": {"prompt_tokens": 12, "completion_tokens": 34}}])

    stream = client.chat.completions.create(
        model="gpt-test", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)

    deltas = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(deltas) > 10
    assert "".join(deltas) == text
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ] == ["stop"]
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (12, 34)
    assert {c.model for c in chunks} == {"gpt-test"}
    assert server.errors == []


def test_stream_sends_usage_only_when_asked(server: ScriptedModelServer, client: OpenAI) -> None:
    server.reset([{"text": "hi"}])

    chunks = list(client.chat.completions.create(model="m", messages=USER, stream=True))

    assert all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_non_streaming_answer_carries_text_reasoning_tool_calls_and_usage(
    server: ScriptedModelServer, client: OpenAI
) -> None:
    server.reset(
        [
            {
                "text": "Let me check.",
                "reasoning": "The user wants the weather.",
                "tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}, "id": "call_w"}],
                "model": "scripted-4",
            }
        ]
    )

    completion = client.chat.completions.create(model="m", messages=USER)

    choice = completion.choices[0]
    assert completion.object == "chat.completion"
    assert completion.model == "scripted-4"
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me check."
    assert choice.message.model_extra == {"reasoning_content": "The user wants the weather."}
    [call] = choice.message.tool_calls or []
    assert call.type == "function"
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_w",
        "weather",
        {"city": "Paris"},
    )
    assert completion.usage is not None
    assert completion.usage.prompt_tokens > 0
    assert completion.usage.completion_tokens > 0
    assert (
        completion.usage.total_tokens
        == completion.usage.prompt_tokens + completion.usage.completion_tokens
    )


def test_streamed_tool_calls_open_with_name_then_send_argument_fragments(
    server: ScriptedModelServer, client: OpenAI
) -> None:
    server.reset(
        [
            {
                "tool_calls": [
                    {
                        "name": "search",
                        "arguments": {"query": "scripted model servers", "limit": 10},
                    },
                    {"name": "broken", "arguments": '{"not": json'},
                ]
            }
        ]
    )

    chunks = list(client.chat.completions.create(model="m", messages=USER, stream=True))

    tool_deltas = [d for c in chunks for d in (c.choices[0].delta.tool_calls or [])]
    first = tool_deltas[0]
    assert (first.index, first.type, first.id) == (0, "function", "call_1_0")
    assert first.function is not None
    assert (first.function.name, first.function.arguments) == ("search", "")
    arguments: dict[int, str] = {}
    for delta in tool_deltas:
        assert delta.function is not None
        arguments[delta.index] = arguments.get(delta.index, "") + (delta.function.arguments or "")
    assert len([d for d in tool_deltas if d.index == 0]) > 3
    assert json.loads(arguments[0]) == {"query": "scripted model servers", "limit": 10}
    assert arguments[1] == '{"not": json'
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_async_client_streams_reasoning_before_text(server: ScriptedModelServer) -> None:
    server.reset([{"reasoning": "Think first.", "text": "Then answer."}])

    async def collect() -> list[tuple[str, str]]:
        pieces: list[tuple[str, str]] = []
        async with AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0
        ) as async_client:
            stream = await async_client.chat.completions.create(
                model="m", messages=USER, stream=True
            )
            async for chunk in stream:
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta is not None and (
                    reasoning := (delta.model_extra or {}).get("reasoning_content")
                ):
                    pieces.append(("reasoning", reasoning))
                if delta is not None and delta.content:
                    pieces.append(("text", delta.content))
        return pieces

    pieces = asyncio.run(collect())

    kinds = [kind for kind, _ in pieces]
    assert kinds == sorted(kinds)  # every reasoning piece comes before any text
    assert "".join(p for k, p in pieces if k == "reasoning") == "Think first."
    assert "".join(p for k, p in pieces if k == "text") == "Then answer."


# -- pydantic-ai -------------------------------------------------------------------------------


def test_agent_tool_round_trip_streams_events_and_sends_the_tool_result(
    server: ScriptedModelServer,
) -> None:
    server.reset(
        [
            {
                "expect": {"last_user_contains": "What is 19 + 23?", "tools_include": ["add"]},
                "reasoning": "I should use the add tool.",
                "tool_calls": [{"name": "add", "arguments": {"a": 19, "b": 23}}],
            },
            {"expect": {"tool_result_contains": "42"}, "text": "The answer is 42."},
        ]
    )
    agent = make_agent(server)
    calls: list[tuple[int, int]] = []

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.append((a, b))
        return a + b

    async def run() -> tuple[str, list[object]]:
        events: list[object] = []
        async with agent, agent.run_stream_events("What is 19 + 23?") as stream:
            async for event in stream:
                events.append(event)
            assert stream.result is not None
            return stream.result.output, events

    output, events = asyncio.run(run())

    assert output == "The answer is 42."
    assert calls == [(19, 23)]
    assert any(isinstance(e, PartStartEvent) and isinstance(e.part, ThinkingPart) for e in events)
    assert server.errors == []
    first, second = server.requests
    assert first["stream"] is True
    assert first["stream_options"] == {"include_usage": True}
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [("call_1_0", "42")]


def test_agent_run_without_streaming_reports_scripted_usage(server: ScriptedModelServer) -> None:
    server.reset(
        [{"text": "Plain answer.", "usage": {"prompt_tokens": 120, "completion_tokens": 7}}]
    )
    agent = make_agent(server)

    async def run() -> Any:
        async with agent:
            return await agent.run("hi")

    result = asyncio.run(run())

    assert result.output == "Plain answer."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (120, 7)
    assert "stream" not in server.requests[0] or server.requests[0]["stream"] is False


@pytest.mark.parametrize(
    ("fault", "error_type"),
    [
        ({"status": 429, "headers": {"Retry-After": "2"}}, ModelRateLimitError),
        ({"kind": "reset"}, ModelConnectionError),
        ({"kind": "drop", "after_chunks": 3}, ModelConnectionError),
        ({"kind": "malformed", "after_chunks": 3}, ModelAPIError),
        ({"kind": "stall", "seconds": 5, "after_chunks": 2}, ModelTimeoutError),
    ],
    ids=["status", "reset", "drop", "malformed", "stall"],
)
def test_agent_sees_each_fault_as_a_model_api_error(
    server: ScriptedModelServer, fault: dict[str, Any], error_type: type[Exception]
) -> None:
    server.reset([{"text": "never finished: several tokens long", "fault": fault}])
    agent = make_agent(server, timeout=0.3)

    async def run() -> None:
        async with agent, agent.run_stream_events("hi") as stream:
            async for _ in stream:
                pass

    with pytest.raises(error_type) as caught:
        asyncio.run(run())

    if isinstance(caught.value, ModelHTTPError):
        assert caught.value.status_code == 429
        assert caught.value.retry_after == 2.0
    assert len(server.requests) == 1
    assert server.errors == []


# -- expectations, exhaustion, repeat ----------------------------------------------------------


def test_expect_mismatch_answers_409_without_sdk_retries_and_records_the_error(
    server: ScriptedModelServer,
) -> None:
    server.reset([{"expect": {"last_user_contains": "weather"}, "text": "unused"}])

    # Default retries on: the server's `x-should-retry: false` keeps the SDK from retrying the 409.
    with (
        OpenAI(base_url=server.base_url, api_key="test") as retrying_client,
        pytest.raises(openai.ConflictError) as caught,
    ):
        retrying_client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "tell me a joke"}]
        )

    message = "step 1: expected last user message to contain 'weather', got 'tell me a joke'"
    assert caught.value.status_code == 409
    assert caught.value.body == {
        "message": message,
        "type": "script_mismatch",
        "param": None,
        "code": None,
    }
    assert server.errors == [message]
    assert len(server.requests) == 1


SYSTEM_TOOL_REQUEST: dict[str, Any] = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "You are Co, a notebook assistant."},
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "README.md\nsetup.py"},
    ],
    "tools": [
        {"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}
    ],
}


@pytest.mark.parametrize(
    ("expect", "problem"),
    [
        ({"last_user_contains": "list files"}, None),
        (
            {"last_user_contains": "List"},
            "expected last user message to contain 'List', got 'list files'",
        ),
        ({"system_contains": "notebook"}, None),
        ({"system_contains": "pirate"}, "expected system prompt to contain 'pirate'"),
        ({"tool_result_contains": "setup.py"}, None),
        ({"tool_result_contains": "Makefile"}, "expected last tool result to contain 'Makefile'"),
        ({"messages_contain": ['"tool_call_id": "c1"', "README"]}, None),
        ({"messages_contain": ["README", "LICENSE"]}, "expected messages to contain 'LICENSE'"),
        ({"tools_include": ["shell"], "tools_exclude": ["python"]}, None),
        (
            {"tools_include": ["shell", "python"]},
            "expected tools to include ['python'], got ['shell']",
        ),
        ({"tools_exclude": ["shell"]}, "expected tools to exclude ['shell'], got ['shell']"),
    ],
)
def test_expect_checks(
    server: ScriptedModelServer, expect: dict[str, Any], problem: str | None
) -> None:
    server.reset([{"expect": expect, "text": "ok"}])

    status, body = post_json(f"{server.base_url}/chat/completions", SYSTEM_TOOL_REQUEST)

    if problem is None:
        assert (status, server.errors) == (200, [])
        assert body["choices"][0]["message"]["content"] == "ok"
    else:
        assert status == 409
        assert body["error"]["type"] == "script_mismatch"
        assert body["error"]["message"].startswith(f"step 1: {problem}")
        assert server.errors == [body["error"]["message"]]


def test_exhausted_script_answers_500_and_records_the_error(server: ScriptedModelServer) -> None:
    server.reset([{"text": "only answer"}])

    with OpenAI(base_url=server.base_url, api_key="test") as retrying_client:
        assert (
            retrying_client.chat.completions.create(model="m", messages=USER)
            .choices[0]
            .message.content
        )
        with pytest.raises(openai.InternalServerError) as caught:
            retrying_client.chat.completions.create(model="m", messages=USER)

    assert caught.value.status_code == 500
    assert caught.value.body == {
        "message": "script exhausted after 1 requests",
        "type": "script_exhausted",
        "param": None,
        "code": None,
    }
    assert server.errors == ["script exhausted after 1 requests"]
    assert len(server.requests) == 2


def test_repeat_extend_and_reset(server: ScriptedModelServer, client: OpenAI) -> None:
    server.reset([{"text": "again", "repeat": 2}, {"text": "last"}])

    def ask() -> str | None:
        return client.chat.completions.create(model="m", messages=USER).choices[0].message.content

    assert [ask(), ask(), ask()] == ["again", "again", "last"]
    with pytest.raises(openai.InternalServerError):
        ask()
    server.extend([{"text": "extended"}, Step(text="as a Step")])
    assert [ask(), ask()] == ["extended", "as a Step"]
    assert len(server.requests) == 6
    assert server.errors == ["script exhausted after 3 requests"]

    server.reset([{"text": "fresh"}])
    assert (server.requests, server.errors) == ([], [])
    assert ask() == "fresh"


def test_concurrent_requests_each_take_one_step(
    server: ScriptedModelServer, client: OpenAI
) -> None:
    server.reset([{"text": "x", "repeat": 20}])

    def ask(_: int) -> int:
        try:
            client.chat.completions.create(model="m", messages=USER)
        except openai.InternalServerError:
            return 500
        return 200

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(ask, range(24)))

    assert sorted(statuses) == [200] * 20 + [500] * 4
    assert len(server.requests) == 24
    assert server.errors == ["script exhausted after 20 requests"] * 4


# -- faults, seen by the openai SDK ------------------------------------------------------------


def test_status_fault_with_headers_and_default_body(
    server: ScriptedModelServer, client: OpenAI
) -> None:
    server.reset([{"fault": {"status": 429, "headers": {"Retry-After": "2"}}}])

    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="m", messages=USER, stream=True)

    assert isinstance(caught.value, openai.RateLimitError)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "2"
    assert caught.value.body == {
        "message": "scripted fault: HTTP 429",
        "type": "scripted_fault",
        "param": None,
        "code": None,
    }


def test_status_fault_with_text_body(server: ScriptedModelServer, client: OpenAI) -> None:
    server.reset([{"fault": {"status": 503, "body": "upstream overloaded"}}])

    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="m", messages=USER)

    assert caught.value.status_code == 503
    assert caught.value.response.text == "upstream overloaded"
    assert caught.value.response.headers["content-type"].startswith("text/plain")


@pytest.mark.parametrize("stream", [True, False])
def test_reset_fault_is_a_connection_error(
    server: ScriptedModelServer, client: OpenAI, stream: bool
) -> None:
    server.reset([{"fault": {"kind": "reset"}}, {"text": "after the reset"}])

    with pytest.raises(openai.APIConnectionError) as caught:
        client.chat.completions.create(model="m", messages=USER, stream=stream)

    assert not isinstance(caught.value, openai.APITimeoutError)
    causes: list[BaseException] = []
    error: BaseException | None = caught.value
    while error is not None:
        causes.append(error)
        error = error.__cause__ or error.__context__
    assert any(isinstance(cause, ConnectionResetError) for cause in causes)
    # The server carries on with the next step.
    assert (
        client.chat.completions.create(model="m", messages=USER).choices[0].message.content
        == "after the reset"
    )


def test_drop_fault_ends_the_stream_after_n_chunks(
    server: ScriptedModelServer, client: OpenAI
) -> None:
    server.reset(
        [{"text": "one two three four five six", "fault": {"kind": "drop", "after_chunks": 3}}]
    )

    received: list[object] = []
    stream = client.chat.completions.create(model="m", messages=USER, stream=True)
    with pytest.raises(openai.APIConnectionError):
        for chunk in stream:
            received.append(chunk)

    assert len(received) == 3


def test_malformed_fault_sends_data_that_is_not_json(
    server: ScriptedModelServer, client: OpenAI
) -> None:
    server.reset(
        [{"text": "one two three four five six", "fault": {"kind": "malformed", "after_chunks": 2}}]
    )

    received: list[object] = []
    stream = client.chat.completions.create(model="m", messages=USER, stream=True)
    with pytest.raises(json.JSONDecodeError):
        for chunk in stream:
            received.append(chunk)

    assert len(received) == 2


def test_stall_fault_trips_a_short_read_timeout(server: ScriptedModelServer) -> None:
    server.reset(
        [{"text": "one two three", "fault": {"kind": "stall", "seconds": 5, "after_chunks": 2}}]
    )

    received: list[object] = []
    started = time.monotonic()
    with OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=0.3) as impatient:
        stream = impatient.chat.completions.create(model="m", messages=USER, stream=True)
        with pytest.raises(openai.APITimeoutError):
            for chunk in stream:
                received.append(chunk)

    assert len(received) == 2
    # The read timeout cut the 5 s stall short (the APITimeoutError above says so).
    assert time.monotonic() - started >= 0.3


def test_stall_fault_then_continues_normally(server: ScriptedModelServer, client: OpenAI) -> None:
    server.reset(
        [{"text": "slow start", "fault": {"kind": "stall", "seconds": 0.3, "after_chunks": 1}}]
    )

    started = time.monotonic()
    chunks = list(client.chat.completions.create(model="m", messages=USER, stream=True))

    assert time.monotonic() - started >= 0.3
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "slow start"


def test_client_hanging_up_mid_stream_is_quiet(capfd: pytest.CaptureFixture[str]) -> None:
    with ScriptedModelServer([{"text": "word " * 200}], tokens_per_second=200) as paced:
        with OpenAI(base_url=paced.base_url, api_key="test", max_retries=0) as sdk_client:
            stream = sdk_client.chat.completions.create(model="m", messages=USER, stream=True)
            for index, _ in enumerate(stream):
                if index == 3:
                    break
            stream.close()
        time.sleep(0.1)  # let the server write into the closed connection
        assert paced.errors == []

    captured = capfd.readouterr()
    assert (captured.out, captured.err) == ("", "")


# -- pacing --------------------------------------------------------------------------------------


def content_arrival_times(server: ScriptedModelServer) -> tuple[float, list[float]]:
    with OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk_client:
        started = time.monotonic()
        stream = sdk_client.chat.completions.create(model="m", messages=USER, stream=True)
        arrivals = [
            time.monotonic() - started
            for chunk in stream
            if chunk.choices and chunk.choices[0].delta.content
        ]
    return started, arrivals


def test_tokens_per_second_spreads_chunks_over_time() -> None:
    with ScriptedModelServer([{"text": "abcd" * 40}], tokens_per_second=200) as paced:
        _, arrivals = content_arrival_times(paced)

    assert len(arrivals) == 40
    assert arrivals[-1] >= 0.15
    assert arrivals[-1] - arrivals[0] >= 0.1  # tokens really arrive one by one, not in one burst


def test_step_tokens_per_second_overrides_the_server_default() -> None:
    with ScriptedModelServer([{"text": "abcd" * 20, "tokens_per_second": 100}]) as paced:
        _, arrivals = content_arrival_times(paced)

    assert arrivals[-1] >= 0.15


# -- endpoints and connections -------------------------------------------------------------------


def test_models_endpoint_lists_script_models_or_scripted(
    server: ScriptedModelServer, client: OpenAI
) -> None:
    assert [m.id for m in client.models.list()] == ["scripted"]

    server.reset([{"model": "alpha"}, {"model": "beta"}, {"model": "alpha"}, {}])

    assert [m.id for m in client.models.list()] == ["alpha", "beta"]


def test_control_endpoints_expose_requests_errors_and_replace_the_script(
    server: ScriptedModelServer, client: OpenAI
) -> None:
    root = server.base_url.removesuffix("/v1")
    server.reset([{"text": "first", "expect": {"last_user_contains": "nope"}}])
    with pytest.raises(openai.ConflictError):
        client.chat.completions.create(model="m", messages=USER)

    assert get_json(f"{root}/_co/requests") == [{"model": "m", "messages": USER}]
    assert get_json(f"{root}/_co/errors") == server.errors
    assert len(server.errors) == 1

    assert post_json(f"{root}/_co/script", [{"text": "replaced"}]) == (200, {"steps": 1})
    assert get_json(f"{root}/_co/requests") == []
    assert get_json(f"{root}/_co/errors") == []
    assert (
        client.chat.completions.create(model="m", messages=USER).choices[0].message.content
        == "replaced"
    )

    status, body = post_json(f"{root}/_co/script", [{"txt": "typo"}])
    assert status == 400
    assert "unknown key 'txt'" in body["error"]["message"]
    status, body = post_json(f"{root}/_co/nothing", {})
    assert (status, body["error"]["type"]) == (404, "not_found")


def test_keep_alive_serves_consecutive_requests_on_one_connection(
    server: ScriptedModelServer,
) -> None:
    server.reset([{"text": "streamed"}, {"text": "plain"}])
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        body = json.dumps({"model": "m", "messages": USER, "stream": True})
        connection.request(
            "POST", "/v1/chat/completions", body, {"Content-Type": "application/json"}
        )
        streamed = connection.getresponse()
        events = streamed.read().decode()
        first_socket = connection.sock

        body = json.dumps({"model": "m", "messages": USER})
        connection.request(
            "POST", "/v1/chat/completions", body, {"Content-Type": "application/json"}
        )
        plain = json.loads(connection.getresponse().read())
        second_socket = connection.sock
    finally:
        connection.close()

    assert streamed.getheader("Transfer-Encoding") == "chunked"
    assert events.endswith("data: [DONE]\n\n")
    assert not streamed.will_close
    # http.client opens a new socket only if the server closed the first one.
    assert second_socket is first_socket is not None
    assert plain["choices"][0]["message"]["content"] == "plain"
    assert server.errors == []


# -- scripts -------------------------------------------------------------------------------------


def test_script_files_load_from_json_and_jsonl(tmp_path: Path) -> None:
    steps = [{"text": "one"}, {"tool_calls": [{"name": "t", "arguments": "{}"}], "repeat": 2}]
    json_file = tmp_path / "script.json"
    json_file.write_text(json.dumps(steps))
    jsonl_file = tmp_path / "script.jsonl"
    jsonl_file.write_text(f"{json.dumps(steps[0])}\n\n{json.dumps(steps[1])}\n")

    from_json = Script.from_file(json_file)
    from_jsonl = Script.coerce(str(jsonl_file))

    assert from_json.steps == from_jsonl.steps == tuple(Step.model_validate(s) for s in steps)
    with (
        ScriptedModelServer(str(jsonl_file)) as from_path,
        OpenAI(base_url=from_path.base_url, api_key="test", max_retries=0) as sdk_client,
    ):
        assert (
            sdk_client.chat.completions.create(model="m", messages=USER).choices[0].message.content
            == "one"
        )


def test_unknown_step_key_names_the_line_and_key(tmp_path: Path) -> None:
    jsonl_file = tmp_path / "bad.jsonl"
    jsonl_file.write_text('{"text": "fine"}\n\n{"text": "oops", "tool_call": []}\n')

    with pytest.raises(ValueError, match=r"bad\.jsonl, line 3: unknown key 'tool_call'"):
        ScriptedModelServer(jsonl_file)
    with pytest.raises(ValueError, match=r"step 2 \(index 1\): unknown key 'txt'"):
        ScriptedModelServer([{"text": "fine"}, {"txt": "oops"}])


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"fault": {"kind": "explode"}}], "step 1 \\(index 0\\): fault: a fault needs 'status'"),
        (
            [{"fault": {"status": 429, "retry": 1}}],
            "fault.status.retry: Extra inputs are not permitted",
        ),
        ([{"repeat": 0}], "repeat: Input should be greater than or equal to 1"),
        ([{"tool_calls": [{"arguments": {}}]}], "tool_calls.0.name: Field required"),
        (["just text"], "a step is a JSON object, got str"),
    ],
)
def test_invalid_steps_are_rejected_with_their_position(steps: list[Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Script.from_steps(steps)


def test_invalid_json_line_is_rejected(tmp_path: Path) -> None:
    jsonl_file = tmp_path / "broken.jsonl"
    jsonl_file.write_text('{"text": "fine"}\n{"text": \n')

    with pytest.raises(ValueError, match=r"broken\.jsonl, line 2: not valid JSON"):
        Script.from_file(jsonl_file)


# -- command line ----------------------------------------------------------------------------------


def _cli(script: Path, **popen: Any) -> subprocess.Popen[str]:
    """``python -m co_kernel.replay SCRIPT`` on a free port; its first line is the URL."""
    return subprocess.Popen(
        [sys.executable, "-m", "co_kernel.replay", str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def test_command_line_serves_until_interrupted(tmp_path: Path) -> None:
    script = tmp_path / "cli.jsonl"
    script.write_text('{"text": "from the CLI", "model": "cli-model"}\n')

    with _cli(script) as process:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        try:
            assert get_json(f"{base_url}/models")["data"][0]["id"] == "cli-model"
            with OpenAI(base_url=base_url, api_key="test", max_retries=0) as sdk_client:
                answer = sdk_client.chat.completions.create(model="m", messages=USER)
        finally:
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=10)

    assert base_url.startswith("http://127.0.0.1:")
    assert answer.choices[0].message.content == "from the CLI"
    assert (process.returncode, stderr) == (0, "")


def _as_a_background_job() -> None:
    # What a non-interactive shell does to a command it starts with `&`.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)


@pytest.mark.parametrize("stop_with", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_command_line_stops_on_a_signal_even_started_in_the_background(
    tmp_path: Path, stop_with: signal.Signals
) -> None:
    script = tmp_path / "cli.jsonl"
    script.write_text('{"text": "one"}\n{"text": "never asked for"}\n')
    with _cli(script, preexec_fn=_as_a_background_job) as process:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        try:
            with OpenAI(base_url=base_url, api_key="test", max_retries=0) as sdk_client:
                sdk_client.chat.completions.create(model="m", messages=USER)
            process.send_signal(stop_with)
            _, stderr = process.communicate(timeout=10)
        finally:
            process.kill()
    # It stopped as on Ctrl+C: the server closed, nothing reported (an unused step is fine).
    assert (process.returncode, stderr) == (0, "")


def _other_threads(pid: int) -> list[int]:
    return [int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_command_line_stops_when_another_thread_receives_the_interrupt(tmp_path: Path) -> None:
    # A signal for the process may be handed to any of its threads that does not block it
    # (here, with tgkill, the server's): the main thread must still act on it and exit.
    script = tmp_path / "cli.jsonl"
    script.write_text('{"text": "from the CLI"}\n')
    libc = ctypes.CDLL(None, use_errno=True)
    with _cli(script) as process:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("http://127.0.0.1:")
        threads = _other_threads(process.pid)
        assert threads, "the server runs on a thread of its own"
        try:
            for tid in threads:
                assert libc.tgkill(process.pid, tid, signal.SIGINT) == 0, ctypes.get_errno()
            _, stderr = process.communicate(timeout=10)
        finally:
            process.kill()
    assert (process.returncode, stderr) == (0, "")


def test_server_starts_fast_and_stops_with_a_stalled_stream_open() -> None:
    started = time.monotonic()
    with ScriptedModelServer([{"fault": {"kind": "stall", "seconds": 30}}]) as stalled:
        startup = time.monotonic() - started
        results: list[BaseException] = []

        def consume() -> None:
            with OpenAI(base_url=stalled.base_url, api_key="test", max_retries=0) as sdk_client:
                try:
                    list(sdk_client.chat.completions.create(model="m", messages=USER, stream=True))
                except openai.APIError as e:
                    results.append(e)

        reader = threading.Thread(target=consume)
        reader.start()
        while not stalled.requests:
            time.sleep(0.01)
        stopping = time.monotonic()
    stop_time = time.monotonic() - stopping
    reader.join(timeout=5)

    # Deadlines, not measures of speed (a loaded machine must pass): no fixed wait on start,
    # and stopping does not wait out the 30 s stall.
    assert startup < 10
    assert stop_time < 15
    assert not reader.is_alive()
    assert len(results) == 1


# -- record-missing (keep_unmatched) ------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "c", "d", "x", "y"])


def _is_subsequence(part: list[str], whole: list[str]) -> bool:
    rest = iter(whole)
    return all(item in rest for item in part)


@settings(max_examples=40, deadline=None)
@given(recorded=st.lists(_NAMES, min_size=1, max_size=5), run=st.lists(_NAMES, max_size=6))
def test_record_missing_keeps_the_script_in_step_with_the_run(
    recorded: list[str], run: list[str]
) -> None:
    """Whatever the run asks, in whatever order: every answer is the one recorded for that
    prompt or a new one put in its place; the script ends as the run's prompts in order,
    then only recorded steps no request reached; an unchanged run asks for nothing new."""
    script = [{"expect": {"last_user_is": p}, "text": f"old {p}"} for p in recorded]
    with ScriptedModelServer(script, keep_unmatched=True) as server:
        url = server.base_url + "/chat/completions"
        new = 0
        for prompt in run:
            body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
            status, answer = post_json(url, body)
            if status == 200:
                assert answer["choices"][0]["message"]["content"] == f"old {prompt}"
            else:
                assert status in (409, 500)
                new += 1
                server.insert(Step(expect={"last_user_is": prompt}, text=f"new {prompt}"))
        server.drop_superseded()
        final = [s.expect.last_user_is for s in server.steps if s.expect is not None]
    assert final[: len(run)] == run
    assert _is_subsequence(final[len(run) :], recorded)
    if run == recorded:
        assert new == 0 and server.revision == 0
