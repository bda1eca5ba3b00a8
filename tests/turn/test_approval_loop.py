"""The approval loop of run_turn, driven in-process against the scripted model model_server.

A real agent with the real shell tool (subprocess sandbox in a temporary workspace) and a
RecordingFrontend that answers approvals from a list; effects are observed as files in
the workspace and as what the model model_server received.
"""

from __future__ import annotations

import asyncio
import json

from co_kernel.turn import ApprovalDecision, ApprovalRequest, RecordingFrontend, TurnResult
from tests.support.turn_support import (
    approvals,
    make_session,
    results,
    run,
    shell,
    tool_messages,
    turn,
    within,
)


def test_approve_runs_the_tool_and_the_answer_continues(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker && echo made")]},
            {"expect": {"tool_result_contains": "made"}, "text": "Done."},
        ]
    )
    frontend = RecordingFrontend(["approve"])
    [result] = run(make_session(model_server, workspace), ("make a marker", frontend))
    assert (workspace / "marker").exists()
    assert result.output == "Done." and result.error is None
    assert result.decisions == {"call_1_0": "approved"}
    assert results(frontend)["call_1_0"].decision == "approved"
    assert results(frontend)["call_1_0"].status == "ok"
    assert model_server.errors == []


def test_deny_does_not_run_and_the_model_reads_the_denial(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "The user denied this action"}, "text": "OK."},
        ]
    )
    frontend = RecordingFrontend(["deny"])
    [result] = run(make_session(model_server, workspace), ("make a marker", frontend))
    assert not (workspace / "marker").exists()
    assert result.decisions == {"call_1_0": "denied"}
    assert results(frontend)["call_1_0"].status == "denied"
    assert model_server.errors == []


def test_approve_all_covers_the_rest_of_the_batch_and_the_session(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch a"), shell("touch b"), shell("touch c")]},
            {"text": "Three files."},
            {"tool_calls": [shell("touch d")]},
            {"text": "And a fourth."},
        ]
    )
    session = make_session(model_server, workspace)
    frontend, second_frontend = RecordingFrontend(["approve_all"]), RecordingFrontend([])
    first, second = run(session, ("make three files", frontend), ("and one more", second_frontend))
    assert len(approvals(frontend)) == 1, "only the first call of the batch is asked"
    assert session.deps.auto_confirm is True
    assert first.decisions == {"call_1_0": "approved all", "call_1_1": "yolo", "call_1_2": "yolo"}
    assert approvals(second_frontend) == []
    assert second.decisions == {"call_3_0": "yolo"}
    assert all((workspace / name).exists() for name in "abcd")


def test_approval_is_a_while_loop_over_chained_calls(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch one")]},
            {"tool_calls": [shell("touch two")]},
            {"tool_calls": [shell("touch three")]},
            {"text": "All done."},
        ]
    )
    frontend = RecordingFrontend(["approve", "deny", "approve"])
    [result] = run(make_session(model_server, workspace), ("three steps", frontend))
    assert [a.call.args for a in approvals(frontend)] == [
        '{"cmd": "touch one"}',
        '{"cmd": "touch two"}',
        '{"cmd": "touch three"}',
    ]
    assert (workspace / "one").exists() and not (workspace / "two").exists()
    assert (workspace / "three").exists()
    assert result.output == "All done."
    assert result.requests == 4


def test_one_request_budget_is_shared_by_every_resume(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch one")]},
            {"tool_calls": [shell("touch two")]},
            {"text": "never reached"},
        ]
    )
    frontend = RecordingFrontend(["approve", "approve"])
    [result] = run(make_session(model_server, workspace, max_request_limit=2), ("go", frontend))
    assert result.error is not None and "budget" in result.error
    assert len(model_server.requests) == 2, "the resumed runs count against the same budget"
    assert (workspace / "one").exists() and (workspace / "two").exists()
    # The history stays valid for the next turn: every tool call has its answer.
    calls = [p for m in result.messages for p in m.parts if p.part_kind == "tool-call"]
    answered = {
        p.tool_call_id for m in result.messages for p in m.parts if p.part_kind == "tool-return"
    }
    assert {c.tool_call_id for c in calls} <= answered


def test_safe_prefix_runs_without_asking_but_chaining_asks(model_server, workspace):
    (workspace / "hello.txt").write_text("hi there\n")
    model_server.extend(
        [
            {"tool_calls": [shell("cat hello.txt"), shell("cat hello.txt; touch sneaky")]},
            {"expect": {"tool_result_contains": "denied"}, "text": "ok"},
        ]
    )
    frontend = RecordingFrontend(["deny"])
    [result] = run(make_session(model_server, workspace), ("read it", frontend))
    assert [a.call.call_id for a in approvals(frontend)] == ["call_1_1"]
    assert result.decisions == {"call_1_0": "safe-prefix", "call_1_1": "denied"}
    assert not (workspace / "sneaky").exists()
    assert any("hi there" in m for m in tool_messages(model_server, 1))
    auto_calls = [p for n, p in frontend.events if n == "tool_call" and p.decision]
    assert [(c.call_id, c.decision) for c in auto_calls] == [("call_1_0", "safe-prefix")]


def test_timeout_answer_denies_with_its_own_message(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "Nobody answered"}, "text": "ok"},
        ]
    )
    frontend = RecordingFrontend(["timed_out"])
    [result] = run(make_session(model_server, workspace, approval_timeout=5), ("go", frontend))
    assert result.decisions == {"call_1_0": "timed out"}
    assert results(frontend)["call_1_0"].status == "denied"
    assert not (workspace / "marker").exists()
    assert model_server.errors == []


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


def test_interrupt_while_waiting_cancels_the_turn_and_leaves_a_valid_history(
    model_server, workspace
):
    model_server.extend(
        [
            {"text": "Let me try.", "tool_calls": [shell("touch marker")]},
            {"expect": {"messages_contain": ["Interrupted by user."]}, "text": "Fine."},
        ]
    )
    session = make_session(model_server, workspace)

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
    sent = json.dumps(model_server.requests[1]["messages"])
    assert "Interrupted by user." in sent and "Let me try." in sent
    assert model_server.errors == []
