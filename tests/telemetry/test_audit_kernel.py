"""Spans and audit rows of real tool calls: a read-only call, an approved and a denied
side-effectful call (Slack's `send_slack_message`, against the local fake Slack API)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from co_kernel.telemetry import AuditLog

from ..tools._slack_server import Channel, FakeSlack
from .span_reader import telemetry_db, turns_done, wait_for_spans

LIST = {"name": "list_slack_channels", "arguments": {}}
POST = {"name": "send_slack_message", "arguments": {"channel": "#general", "text": "Deploy done"}}


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


def _slack_env(slack: FakeSlack, mode: str) -> dict[str, str]:
    return {
        "CO_SLACK_BOT_TOKEN": slack.token,
        "CO_SLACK_API_BASE_URL": slack.api_base_url,
        "CO_APPROVAL_MODE": mode,
    }


def _script() -> list[dict]:
    return [
        {"tool_calls": [LIST, POST], "usage": {"prompt_tokens": 300, "completion_tokens": 20}},
        {"text": "Posted.", "usage": {"prompt_tokens": 400, "completion_tokens": 3}},
    ]


def test_tool_calls_leave_spans_and_audit_rows_with_their_decisions(
    start_kernel, model_server, slack: FakeSlack, co_home
):
    slack.channels = [Channel("C0GENERAL1", "general")]
    db = telemetry_db(co_home)

    # Session 1 approves (headless policy `approve`); session 2 denies.
    model_server.extend(_script())
    approving = start_kernel(_slack_env(slack, "approve"))
    assert approving.execute("Tell #general the deploy is done", mode="headless").status == "ok"
    model_server.extend(_script())
    denying = start_kernel(_slack_env(slack, "deny"))
    assert denying.execute("Tell #general the deploy is done", mode="headless").status == "ok"
    assert model_server.errors == []
    assert [p["text"] for p in slack.posted] == ["Deploy done"], "only the approved post ran"

    spans = wait_for_spans(db, turns_done(2))
    turns = [s for s in spans if s.kind == "turn"]
    approved_turn, denied_turn = sorted(turns, key=lambda s: s.start_ns)

    # Audit: one row per call, with decision, status, target, size and duration.
    rows = AuditLog(db).query()
    # Each asking call also has rows for its question and its decision, before it ran.
    steps = sorted(
        (r for r in rows if r["session_id"] == approved_turn.session_id and r["action"] != "call"),
        key=lambda r: r["id"],
    )
    assert [(r["tool"], r["action"], r["decision"], r["status"]) for r in steps] == [
        ("send_slack_message", "ask", "waiting", "waiting"),
        ("send_slack_message", "decide", "approved", "running"),
    ]
    assert {r["call_id"] for r in steps} == {
        r["call_id"] for r in rows if r["action"] == "call" and r["tool"] == "send_slack_message"
        and r["session_id"] == approved_turn.session_id
    }  # fmt: skip
    rows = [r for r in rows if r["action"] == "call"]
    by_session = {
        sid: sorted((r for r in rows if r["session_id"] == sid), key=lambda r: r["id"])
        for sid in (approved_turn.session_id, denied_turn.session_id)
    }
    approved = [
        (r["tool"], r["decision"], r["status"]) for r in by_session[approved_turn.session_id]
    ]
    assert approved == [
        ("list_slack_channels", "auto", "ok"),
        ("send_slack_message", "approved", "ok"),
    ]
    denied = [(r["tool"], r["decision"], r["status"]) for r in by_session[denied_turn.session_id]]
    assert denied == [
        ("list_slack_channels", "auto", "ok"),
        ("send_slack_message", "denied", "denied"),
    ]
    post_row = by_session[approved_turn.session_id][1]
    assert post_row["target"] == "#general" and post_row["turn"] == 1
    assert post_row["result_size"] > 0 and post_row["duration_ms"] is not None

    # Spans: the calls that ran are tool spans inside the turn's agent runs.
    def tools_of(turn):
        return sorted(s.tool for s in spans if s.kind == "tool" and s.trace_id == turn.trace_id)

    assert tools_of(approved_turn) == ["list_slack_channels", "send_slack_message"]
    assert tools_of(denied_turn) == ["list_slack_channels"], "a denied call never runs"
    post_span = next(
        s for s in spans if s.tool == "send_slack_message" and s.trace_id == approved_turn.trace_id
    )
    assert "Deploy done" in post_span.attributes["gen_ai.tool.call.arguments"]
    parents = {s.span_id: s for s in spans}
    assert parents[post_span.parent_id].kind == "agent"
    assert parents[parents[post_span.parent_id].parent_id].span_id == approved_turn.span_id
    # Approval resumes the run: two agent runs under the one turn.
    runs = [s for s in spans if s.kind == "agent" and s.trace_id == approved_turn.trace_id]
    assert len(runs) == 2

    # Each decision is also an event on its turn's span, the denied one included.
    def decisions(turn):
        return [
            (
                e["attributes"]["co.tool"],
                e["attributes"]["co.action"],
                e["attributes"]["co.decision"],
            )
            for e in turn.events
            if e["name"] == "co.audit"
        ]

    # The trace tells the call's question and decision too, as the audit log does.
    assert decisions(approved_turn) == [
        ("list_slack_channels", "call", "auto"),
        ("send_slack_message", "ask", "waiting"),
        ("send_slack_message", "decide", "approved"),
        ("send_slack_message", "call", "approved"),
    ]
    assert decisions(denied_turn) == [
        ("list_slack_channels", "call", "auto"),
        ("send_slack_message", "ask", "waiting"),
        ("send_slack_message", "decide", "denied"),
        ("send_slack_message", "call", "denied"),
    ]


def test_a_call_cut_short_by_an_interrupt_is_audited(start_kernel, model_server, co_home):
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    code = "import asyncio\nawait asyncio.sleep(30)"
    model_server.extend(
        [
            {"text": "Ready."},
            {"tool_calls": [{"name": "run_python", "arguments": {"code": code}}]},
            {"text": "Still here."},
        ]
    )
    kernel.execute("warm up")  # the first cell also waits for the model stack's import
    stopped = kernel.execute("Wait a while in Python", interrupt_after=3.0, timeout=60)
    assert stopped.reply["content"]["ename"] == "KeyboardInterrupt"
    assert kernel.execute("Are you there?").markdown() == "Still here."
    rows = AuditLog(telemetry_db(co_home)).query(tool="run_python")
    (row,) = [r for r in rows if r["action"] == "call"]
    assert (row["decision"], row["status"], row["turn"]) == ("interrupted", "interrupted", 2)
    assert row["target"] == code
    spans = wait_for_spans(telemetry_db(co_home), turns_done(3))
    (turn,) = [s for s in spans if s.kind == "turn" and s.turn == 2]
    assert turn.attributes["co.status"] == "interrupted"
    events = [e["attributes"] for e in turn.events if e["name"] == "co.audit"]
    assert [(e["co.tool"], e["co.action"], e["co.status"]) for e in events][-1] == (
        "run_python",
        "call",
        "interrupted",
    )


def test_a_scope_refusal_is_audited_on_the_tool_span(start_kernel, model_server, co_home):
    kernel = start_kernel()
    model_server.extend(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "/etc/hostname"}}]},
            {"text": "I may not read that."},
        ]
    )
    assert kernel.execute("Read /etc/hostname", mode="headless").status == "ok"
    db = telemetry_db(co_home)
    refused = AuditLog(db).query(decision="scope-refused")
    assert [(r["tool"], r["status"], r["target"]) for r in refused] == [
        ("read_file", "refused", "/etc/hostname")
    ]
    spans = wait_for_spans(db, turns_done(1))
    (tool,) = [s for s in spans if s.kind == "tool"]
    assert tool.tool == "read_file"
    events = [e["attributes"] for e in tool.events if e["name"] == "co.audit"]
    assert [(e["co.decision"], e["co.target"]) for e in events] == [
        ("scope-refused", "/etc/hostname")
    ]
