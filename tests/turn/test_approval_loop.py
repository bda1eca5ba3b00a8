"""The approval loop of run_turn, driven in-process against the scripted model server.

A real agent with the real shell tool (subprocess sandbox in a temporary workspace) and a
RecordingFrontend that answers approvals from a list; effects are observed as files in
the workspace and as what the model server received.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from co_kernel.config import LoadedSettings, Settings
from co_kernel.frontend import RecordingFrontend
from co_kernel.testing import ScriptedModelServer
from co_kernel.turn import ApprovalDecision, ApprovalRequest, ChatSession, TurnResult


def shell(cmd: str, **extra: Any) -> dict[str, Any]:
    return {"name": "run_shell_command", "arguments": {"cmd": cmd, **extra}}


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([]) as s:
        yield s


def make_session(server: ScriptedModelServer, workspace: Path, **settings: Any) -> ChatSession:
    values: dict[str, Any] = {
        "model": "compat:scripted",
        "base_url": server.base_url,
        "sandbox": "subprocess",
    }
    values.update(settings)
    return ChatSession(LoadedSettings(Settings(**values)), workspace=workspace, kernel_id="test")


async def within(session: ChatSession, scenario: Any) -> Any:
    """Run ``scenario()`` with the agent entered, so its HTTP client is closed at the end."""
    agent, _ = session.ensure_agent()
    try:
        async with agent:
            return await scenario()
    finally:
        if session.deps.sandbox is not None:
            await session.deps.sandbox.close()
        session.close()


async def turn(session: ChatSession, prompt: str, frontend: Any) -> TurnResult:
    result = await session.run_prompt(prompt, cell_id=None, frontend=frontend)
    assert result is not None
    return result


def run(session: ChatSession, *turns: tuple[str, Any]) -> list[TurnResult]:
    """Run turns one after the other on one event loop; one result per turn."""

    async def scenario() -> list[TurnResult]:
        return [await turn(session, prompt, frontend) for prompt, frontend in turns]

    return asyncio.run(within(session, scenario))


def approvals(frontend: RecordingFrontend) -> list[ApprovalRequest]:
    return [payload for name, payload in frontend.events if name == "approval"]


def tool_messages(server: ScriptedModelServer, request: int) -> list[str]:
    return [
        m["content"]
        for m in server.requests[request]["messages"]
        if m["role"] == "tool" and isinstance(m["content"], str)
    ]


def results(frontend: RecordingFrontend) -> dict[str, Any]:
    return {p.call_id: p for name, p in frontend.events if name == "tool_result"}


def test_approve_runs_the_tool_and_the_answer_continues(server, workspace):
    server.extend(
        [
            {"tool_calls": [shell("touch marker && echo made")]},
            {"expect": {"tool_result_contains": "made"}, "text": "Done."},
        ]
    )
    frontend = RecordingFrontend(["approve"])
    [result] = run(make_session(server, workspace), ("make a marker", frontend))
    assert (workspace / "marker").exists()
    assert result.output == "Done." and result.error is None
    assert result.decisions == {"call_1_0": "approved"}
    assert results(frontend)["call_1_0"].decision == "approved"
    assert results(frontend)["call_1_0"].status == "ok"
    assert server.errors == []


def test_deny_does_not_run_and_the_model_reads_the_denial(server, workspace):
    server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "The user denied this action"}, "text": "OK."},
        ]
    )
    frontend = RecordingFrontend(["deny"])
    [result] = run(make_session(server, workspace), ("make a marker", frontend))
    assert not (workspace / "marker").exists()
    assert result.decisions == {"call_1_0": "denied"}
    assert results(frontend)["call_1_0"].status == "denied"
    assert server.errors == []


def test_approve_all_covers_the_rest_of_the_batch_and_the_session(server, workspace):
    server.extend(
        [
            {"tool_calls": [shell("touch a"), shell("touch b"), shell("touch c")]},
            {"text": "Three files."},
            {"tool_calls": [shell("touch d")]},
            {"text": "And a fourth."},
        ]
    )
    session = make_session(server, workspace)
    frontend, second_frontend = RecordingFrontend(["approve_all"]), RecordingFrontend([])
    first, second = run(session, ("make three files", frontend), ("and one more", second_frontend))
    assert len(approvals(frontend)) == 1, "only the first call of the batch is asked"
    assert session.deps.auto_confirm is True
    assert first.decisions == {"call_1_0": "approved all", "call_1_1": "yolo", "call_1_2": "yolo"}
    assert approvals(second_frontend) == []
    assert second.decisions == {"call_3_0": "yolo"}
    assert all((workspace / name).exists() for name in "abcd")


def test_approval_is_a_while_loop_over_chained_calls(server, workspace):
    server.extend(
        [
            {"tool_calls": [shell("touch one")]},
            {"tool_calls": [shell("touch two")]},
            {"tool_calls": [shell("touch three")]},
            {"text": "All done."},
        ]
    )
    frontend = RecordingFrontend(["approve", "deny", "approve"])
    [result] = run(make_session(server, workspace), ("three steps", frontend))
    assert [a.call.args for a in approvals(frontend)] == [
        '{"cmd": "touch one"}',
        '{"cmd": "touch two"}',
        '{"cmd": "touch three"}',
    ]
    assert (workspace / "one").exists() and not (workspace / "two").exists()
    assert (workspace / "three").exists()
    assert result.output == "All done."
    assert result.requests == 4


def test_one_request_budget_is_shared_by_every_resume(server, workspace):
    server.extend(
        [
            {"tool_calls": [shell("touch one")]},
            {"tool_calls": [shell("touch two")]},
            {"text": "never reached"},
        ]
    )
    frontend = RecordingFrontend(["approve", "approve"])
    [result] = run(make_session(server, workspace, max_request_limit=2), ("go", frontend))
    assert result.error is not None and "budget" in result.error
    assert len(server.requests) == 2, "the resumed runs count against the same budget"
    assert (workspace / "one").exists() and (workspace / "two").exists()
    # The history stays valid for the next turn: every tool call has its answer.
    calls = [p for m in result.messages for p in m.parts if p.part_kind == "tool-call"]
    answered = {
        p.tool_call_id for m in result.messages for p in m.parts if p.part_kind == "tool-return"
    }
    assert {c.tool_call_id for c in calls} <= answered


def test_safe_prefix_runs_without_asking_but_chaining_asks(server, workspace):
    (workspace / "hello.txt").write_text("hi there\n")
    server.extend(
        [
            {"tool_calls": [shell("cat hello.txt"), shell("cat hello.txt; touch sneaky")]},
            {"expect": {"tool_result_contains": "denied"}, "text": "ok"},
        ]
    )
    frontend = RecordingFrontend(["deny"])
    [result] = run(make_session(server, workspace), ("read it", frontend))
    assert [a.call.call_id for a in approvals(frontend)] == ["call_1_1"]
    assert result.decisions == {"call_1_0": "safe-prefix", "call_1_1": "denied"}
    assert not (workspace / "sneaky").exists()
    assert any("hi there" in m for m in tool_messages(server, 1))
    auto_calls = [p for n, p in frontend.events if n == "tool_call" and p.decision]
    assert [(c.call_id, c.decision) for c in auto_calls] == [("call_1_0", "safe-prefix")]


def test_timeout_answer_denies_with_its_own_message(server, workspace):
    server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "Nobody answered"}, "text": "ok"},
        ]
    )
    frontend = RecordingFrontend(["timed_out"])
    [result] = run(make_session(server, workspace, approval_timeout=5), ("go", frontend))
    assert result.decisions == {"call_1_0": "timed out"}
    assert results(frontend)["call_1_0"].status == "denied"
    assert not (workspace / "marker").exists()
    assert server.errors == []


def test_arguments_the_model_can_fix_are_retried_before_anyone_is_asked(server, workspace):
    server.extend(
        [
            {"tool_calls": [shell("   ")]},
            {"expect": {"messages_contain": ["The command is empty"]}, "tool_calls": [shell("ls", timeout=99999)]},
            {"expect": {"messages_contain": ["over the ceiling"]}, "text": "giving up"},
        ]
    )  # fmt: skip
    frontend = RecordingFrontend([])
    [result] = run(make_session(server, workspace), ("go", frontend))
    assert approvals(frontend) == []
    assert result.output == "giving up"
    assert server.errors == []


def test_unavailable_sandbox_is_a_readable_tool_result(server, tmp_path):
    not_a_dir = tmp_path / "file-not-dir"
    not_a_dir.write_text("")
    server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "sandbox is unavailable"}, "text": "No sandbox."},
        ]
    )
    frontend = RecordingFrontend(["approve"])
    session = make_session(server, not_a_dir, sandbox="docker")
    [result] = run(session, ("go", frontend))
    assert result.output == "No sandbox."
    content = results(frontend)["call_1_0"].content
    assert content["error"] is True and content["exit_code"] is None
    assert server.errors == []


class WaitingFrontend(RecordingFrontend):
    """Never answers: the person walked away (or is about to press interrupt)."""

    def __init__(self) -> None:
        super().__init__([])
        self.asked = asyncio.Event()

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.events.append(("approval", request))
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_interrupt_while_waiting_cancels_the_turn_and_leaves_a_valid_history(server, workspace):
    server.extend(
        [
            {"text": "Let me try.", "tool_calls": [shell("touch marker")]},
            {"expect": {"messages_contain": ["Interrupted by user."]}, "text": "Fine."},
        ]
    )
    session = make_session(server, workspace)

    async def scenario() -> tuple[TurnResult, TurnResult]:
        frontend = WaitingFrontend()
        task = asyncio.ensure_future(turn(session, "go", frontend))
        await asyncio.wait_for(frontend.asked.wait(), 20)
        task.cancel()
        first = await task
        second = await turn(session, "never mind", RecordingFrontend([]))
        return first, second

    first, second = asyncio.run(within(session, scenario))
    assert first.interrupted and first.decisions == {"call_1_0": "interrupted"}
    assert not (workspace / "marker").exists()
    assert second.output == "Fine."
    sent = json.dumps(server.requests[1]["messages"])
    assert "Interrupted by user." in sent and "Let me try." in sent
    assert server.errors == []
