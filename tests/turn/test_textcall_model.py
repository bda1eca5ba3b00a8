"""Text-written tool calls become real tool calls: pydantic-ai over real HTTP, run_turn's flow."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from co_kernel.config import Settings
from co_kernel.models._textcall_model import TextToolCallModel
from co_kernel.replay import ScriptedModelServer
from co_kernel.session_state import CoDeps
from co_kernel.turn import RecordingFrontend, run_turn

CALL_TEXT = (
    "I will delete the old log.\n\n"
    '```json\n{"name": "delete_file", "arguments": {"path": "old.log"}}\n```\n'
)


def _agent(server: ScriptedModelServer, calls: list[str]) -> Agent[CoDeps, Any]:
    chat = OpenAIChatModel("qwen", provider=OpenAIProvider(base_url=server.base_url, api_key="x"))
    agent: Agent[CoDeps, Any] = Agent(
        TextToolCallModel(chat),
        deps_type=CoDeps,
        output_type=[str, DeferredToolRequests],
        model_settings={"max_retries": 0},
    )

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file in the workspace."""
        calls.append(path)
        return f"deleted {path}"

    @agent.tool_plain
    def list_files() -> str:
        """List the workspace."""
        calls.append("list")
        return "alpha.txt beta.txt"

    return agent


def _turn(agent: Agent[CoDeps, Any], frontend: RecordingFrontend, tmp_path: Path) -> Any:
    deps = CoDeps(settings=Settings(), session_id="s", kernel_id="k", workspace=tmp_path)

    async def scenario() -> Any:
        async with agent:  # closes the HTTP client with the loop
            return await run_turn(
                agent,
                "Delete old.log",
                deps=deps,
                history=[],
                frontend=frontend,
                provider="local",
                model_label="local:qwen",
            )

    return asyncio.run(scenario())


@pytest.mark.parametrize("rate", [None, 400.0], ids=["one-chunk", "token-by-token"])
def test_a_fenced_call_goes_through_approval_and_runs(tmp_path: Path, rate: float | None) -> None:
    calls: list[str] = []
    with ScriptedModelServer(
        [
            {"text": CALL_TEXT, "expect": {"tools_include": ["delete_file"]}},
            {
                "text": "Done: old.log is gone.",
                "expect": {"tool_result_contains": "deleted old.log"},
            },
        ],
        tokens_per_second=rate,
    ) as server:
        frontend = RecordingFrontend(decisions=["approve"])
        result = _turn(_agent(server, calls), frontend, tmp_path)
        assert server.errors == []
    assert calls == ["old.log"]
    approvals = [p for name, p in frontend.events if name == "approval"]
    assert [a.call.name for a in approvals] == ["delete_file"]
    assert approvals[0].call.args == {"path": "old.log"}
    # The prose streamed; the JSON never reached the cell as text.
    assert "I will delete the old log." in frontend.text
    assert "```json" not in frontend.text and '"arguments"' not in frontend.text
    assert result.output.endswith("Done: old.log is gone.")
    assert result.decisions and set(result.decisions.values()) == {"approved"}


def test_a_denied_call_does_not_run(tmp_path: Path) -> None:
    calls: list[str] = []
    with ScriptedModelServer(
        [
            {"text": CALL_TEXT},
            {"text": "Understood, I left it.", "expect": {"tool_result_contains": "denied"}},
        ],
        tokens_per_second=400.0,
    ) as server:
        frontend = RecordingFrontend(decisions=["deny"])
        result = _turn(_agent(server, calls), frontend, tmp_path)
        assert server.errors == []
    assert calls == []
    assert result.output.endswith("Understood, I left it.")


def test_a_bare_call_to_a_tool_without_approval_runs_at_once(tmp_path: Path) -> None:
    calls: list[str] = []
    with ScriptedModelServer(
        [
            {"text": '{"name": "list_files", "parameters": {}}'},
            {"text": "Two files.", "expect": {"tool_result_contains": "alpha.txt"}},
        ],
        tokens_per_second=400.0,
    ) as server:
        frontend = RecordingFrontend()
        result = _turn(_agent(server, calls), frontend, tmp_path)
        assert server.errors == []
    assert calls == ["list"]
    assert not [e for e in frontend.events if e[0] == "approval"]
    assert [p.name for n, p in frontend.events if n == "tool_call"] == ["list_files"]
    assert result.output == "Two files."


def test_json_for_an_unknown_tool_stays_an_answer(tmp_path: Path) -> None:
    text = '```json\n{"name": "web_search", "arguments": {"q": "x"}}\n```'
    calls: list[str] = []
    with ScriptedModelServer([{"text": text}], tokens_per_second=400.0) as server:
        frontend = RecordingFrontend()
        result = _turn(_agent(server, calls), frontend, tmp_path)
        assert server.errors == [] and len(server.requests) == 1
    assert calls == []
    assert frontend.text == text and result.output == text


def test_the_non_streamed_path_recognises_calls_too(tmp_path: Path) -> None:
    calls: list[str] = []
    with ScriptedModelServer(
        [
            {"text": "```json\n[" + '{"name": "list_files", "arguments": {}}' + "]\n```"},
            {"text": "Listed.", "expect": {"tool_result_contains": "beta.txt"}},
        ]
    ) as server:
        agent = _agent(server, calls)
        deps = CoDeps(settings=Settings(), session_id="s", kernel_id="k", workspace=tmp_path)

        async def scenario() -> Any:
            async with agent:
                return await agent.run("List", deps=deps)

        result = asyncio.run(scenario())
        assert server.errors == []
    assert calls == ["list"] and result.output == "Listed."


# -- with Co's own agent and shell tool ---------------------------------------------------


def _shell_turn(server: ScriptedModelServer, frontend: RecordingFrontend, workspace: Path) -> Any:
    """One turn through Co's agent factory with the real shell tool (subprocess sandbox)."""
    from co_kernel.tools import shell
    from co_kernel.turn._agent import build_agent

    settings = Settings(sandbox="subprocess")
    build = shell.build(settings)
    assert build.toolset is not None
    chat = OpenAIChatModel("qwen", provider=OpenAIProvider(base_url=server.base_url, api_key="x"))
    agent = build_agent(TextToolCallModel(chat), settings, [build.toolset])
    deps = CoDeps(settings=settings, session_id="s", kernel_id="k", workspace=workspace)

    async def scenario() -> Any:
        try:
            async with agent:
                return await run_turn(
                    agent,
                    "Make a file",
                    deps=deps,
                    history=[],
                    frontend=frontend,
                    provider="local",
                    model_label="local:qwen",
                )
        finally:
            if deps.sandbox is not None:
                await deps.sandbox.close()

    return asyncio.run(scenario())


def _shell_call(cmd: str) -> str:
    return f'```json\n{{"name": "run_shell_command", "arguments": {{"cmd": "{cmd}"}}}}\n```'


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_a_written_shell_call_waits_for_the_person(tmp_path: Path, decision: str) -> None:
    with ScriptedModelServer(
        [
            {"text": _shell_call("echo made by co > note.txt")},
            {
                "text": "Finished.",
                "expect": {"tool_result_contains": "" if decision == "approve" else "denied"},
            },
        ],
        tokens_per_second=400.0,
    ) as server:
        frontend = RecordingFrontend(decisions=[decision])
        result = _shell_turn(server, frontend, tmp_path)
        assert server.errors == []
    asked = [p for n, p in frontend.events if n == "approval"]
    assert [a.call.name for a in asked] == ["run_shell_command"]
    assert asked[0].call.args == {"cmd": "echo made by co > note.txt"}
    note = tmp_path / "note.txt"
    if decision == "approve":
        assert note.read_text() == "made by co\n"
        assert set(result.decisions.values()) == {"approved"}
    else:
        assert not note.exists()
        assert set(result.decisions.values()) == {"denied"}


def test_a_written_safe_command_runs_without_asking(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a,b\n")
    with ScriptedModelServer(
        [
            {"text": _shell_call("ls")},
            {"text": "One file.", "expect": {"tool_result_contains": "data.csv"}},
        ],
        tokens_per_second=400.0,
    ) as server:
        frontend = RecordingFrontend()
        result = _shell_turn(server, frontend, tmp_path)
        assert server.errors == []
    assert not [e for e in frontend.events if e[0] == "approval"]
    assert set(result.decisions.values()) == {"safe-prefix"}
