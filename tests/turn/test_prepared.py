"""Co's models rewrite a request's tool schemas once however often it is prepared, and send
exactly what pydantic-ai's own model sends, traced or not."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from co_kernel.config import Settings
from co_kernel.models._prepared import CustomizesOnce, customizing_once
from co_kernel.models._providers import build_model
from co_kernel.replay import ScriptedModelServer
from co_kernel.session_state import CoDeps
from co_kernel.telemetry import Redactor
from co_kernel.telemetry._tracing import Tracing
from co_kernel.turn import RecordingFrontend, run_turn
from co_kernel.turn._agent import build_agent
from tests.support.turn_support import make_session, run

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "A file"},
        "lines": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def _params() -> ModelRequestParameters:
    return ModelRequestParameters(
        function_tools=[
            ToolDefinition(name="read", description="Read", parameters_json_schema=SCHEMA)
        ]
    )


def _model(cls: type[OpenAIChatModel]) -> OpenAIChatModel:
    return cls("m", provider=OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="x"))


def test_equal_parameters_are_rewritten_once_and_changed_ones_afresh() -> None:
    model = _model(customizing_once(OpenAIChatModel))
    assert isinstance(model, CustomizesOnce) and isinstance(model, OpenAIChatModel)
    plain = _model(OpenAIChatModel)
    params = _params()
    first = model.customize_request_parameters(params)
    assert model.customize_request_parameters(params) is first
    assert first == plain.customize_request_parameters(params)
    # The next request of the conversation: equal content in another object, the same rewrite.
    assert model.customize_request_parameters(_params()) is first
    changed = replace(params, function_tools=[replace(params.function_tools[0], name="write")])
    assert model.customize_request_parameters(changed).function_tools[0].name == "write"
    # A schema changed in place of an equal one (same tool name) is rewritten from it.
    wider = {**SCHEMA, "properties": {**SCHEMA["properties"], "mode": {"type": "string"}}}
    grown = ModelRequestParameters(
        function_tools=[
            ToolDefinition(name="read", description="Read", parameters_json_schema=wider)
        ]
    )
    rewritten = model.customize_request_parameters(grown)
    assert "mode" in rewritten.function_tools[0].parameters_json_schema["properties"]
    assert rewritten == plain.customize_request_parameters(grown)
    # And back: the earlier tools are rewritten again, not mistaken for the grown ones.
    assert model.customize_request_parameters(_params()) == first
    # prepare_request as a whole gives what pydantic-ai's own model gives.
    assert model.prepare_request(None, params) == plain.prepare_request(None, params)


def test_one_subclass_per_model_class() -> None:
    assert customizing_once(OpenAIChatModel) is customizing_once(OpenAIChatModel)
    assert customizing_once(OpenAIChatModel).__name__ == "OpenAIChatModel"


def read(path: str, lines: int | None = None) -> str:
    """Read a file."""
    return f"{path}: the quick brown fox"


STEPS = [
    {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
    {"text": "A fox."},
]


def _bodies(tmp: Path, *, traced: bool, co_model: bool) -> list[dict[str, Any]]:
    """The request bodies the model server received for one turn."""
    with ScriptedModelServer(STEPS) as server:
        settings = Settings(model="compat:scripted", base_url=server.base_url, api_key="x")
        model = build_model(settings, base_dir=tmp).model
        if not co_model:
            model = OpenAIChatModel(
                "scripted", provider=OpenAIProvider(base_url=server.base_url, api_key="x")
            )
        else:
            assert isinstance(model, CustomizesOnce)
        tracing = Tracing(tmp / f"{uuid.uuid4().hex}.db", Redactor()) if traced else None
        capabilities = [tracing.instrumentation()] if tracing else []
        agent = build_agent(model, settings, [FunctionToolset([read])], capabilities=capabilities)
        deps = CoDeps(settings=settings, session_id="s", kernel_id="k", workspace=tmp)

        async def turn() -> Any:
            async with agent:  # closes the model's HTTP client
                return await run_turn(
                    agent,
                    "read a.txt",
                    deps=deps,
                    history=[],
                    frontend=RecordingFrontend(),
                    provider="compat",
                    model_label="compat:scripted",
                )

        result = asyncio.run(turn())
        if tracing:
            tracing.shutdown()
        assert result.error is None and result.output.endswith("A fox.")
        assert server.errors == []
        return server.requests


def test_requests_are_what_pydantic_ais_model_sends_traced_or_not(tmp_path: Path) -> None:
    plain = _bodies(tmp_path, traced=False, co_model=False)
    assert len(plain) == 2 and plain[0]["tools"][0]["function"]["name"] == "read"
    assert _bodies(tmp_path, traced=True, co_model=True) == plain
    assert _bodies(tmp_path, traced=False, co_model=True) == plain


def test_a_tool_rewritten_before_is_taken_as_it_was_when_the_request_changes() -> None:
    model = _model(customizing_once(OpenAIChatModel))
    plain = _model(OpenAIChatModel)
    first = model.customize_request_parameters(_params())
    # Another request: a tool more and other parameters. The tool rewritten before comes
    # back as it was (the very object), the new one is rewritten as pydantic-ai would.
    wider = {**SCHEMA, "properties": {**SCHEMA["properties"], "text": {"type": "string"}}}
    write = ToolDefinition(name="write", description="Write", parameters_json_schema=wider)
    params = replace(
        _params(), function_tools=[*_params().function_tools, write], allow_text_output=False
    )
    second = model.customize_request_parameters(params)
    assert second.function_tools[0] is first.function_tools[0]
    assert second == plain.customize_request_parameters(params)
    # A tool whose definition changed under the same name is rewritten from the new one.
    read = replace(params.function_tools[0], parameters_json_schema=wider)
    third = model.customize_request_parameters(replace(params, function_tools=[read, write]))
    assert third.function_tools[0] is not first.function_tools[0]
    assert third.function_tools[1] is second.function_tools[1]
    assert "text" in third.function_tools[0].parameters_json_schema["properties"]
    assert third == plain.customize_request_parameters(
        replace(params, function_tools=[read, write])
    )


def test_the_tools_rewritten_before_a_sessions_first_turn_are_the_ones_it_sends(
    tmp_path: Path,
) -> None:
    """The kernel's warm-up rewrites the session's tools for its model; the first turn
    (a tool call, then the answer) finds every tool it offers already rewritten."""
    with ScriptedModelServer(
        [{"tool_calls": [{"name": "read_todos", "arguments": {}}]}, {"text": "Nothing to do."}]
    ) as server:
        session = make_session(server, tmp_path)
        session.model.prewrite_tools()
        _, handle = session.ensure_agent()
        model = handle.model
        static = [
            tool.tool_def
            for build in session.model.toolsets
            if isinstance(build.toolset, FunctionToolset)
            for tool in build.toolset.tools.values()
        ]

        def rewritten() -> dict[str, ToolDefinition]:
            params = ModelRequestParameters(function_tools=static)
            return {t.name: t for t in model.customize_request_parameters(params).function_tools}

        before = rewritten()
        [result] = run(session, ("What is on my list?", RecordingFrontend()))
        assert result.error is None and result.output.endswith("Nothing to do.")
        assert server.errors == []
        sent = [t["function"] for t in server.requests[0]["tools"]]
        assert "read_todos" in {f["name"] for f in sent}
        after = rewritten()
    # No tool the turn sent was rewritten again: each is the one rewritten before it.
    assert all(after[f["name"]] is before[f["name"]] for f in sent)
    # And what was sent is each tool as pydantic-ai's own model rewrites it.
    plain = _model(OpenAIChatModel)
    expected = plain.customize_request_parameters(ModelRequestParameters(function_tools=static))
    schemas = {t.name: t.parameters_json_schema for t in expected.function_tools}
    assert all(f["parameters"] == schemas[f["name"]] for f in sent)
