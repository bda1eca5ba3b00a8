"""The activity panel's data, read from a real SQLite audit log."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from co_kernel.server import ActivityQuery, parse_query, read_activity
from co_kernel.telemetry import AuditEvent, AuditLog


def _log(path: Path, *events: AuditEvent) -> None:
    log = AuditLog(path)
    for event in events:
        log.record(event)
    log.close()


def test_missing_database_is_an_empty_log_and_stays_missing(tmp_path: Path) -> None:
    db = tmp_path / "data" / "telemetry.db"
    data = read_activity(db, ActivityQuery())
    assert data["rows"] == [] and data["sessions"] == [] and data["tools"] == []
    assert "approved" in data["decisions"]
    assert not db.exists() and not db.parent.exists()


def test_filters_and_session_summary(tmp_path: Path) -> None:
    db = tmp_path / "telemetry.db"
    _log(
        db,
        AuditEvent("s1", "run_shell_command", "approved", turn=1, target="ls", ts=1000.0),
        AuditEvent("s1", "run_shell_command", "denied", turn=2, status="denied", ts=1010.0),
        AuditEvent("s1", "read_file", "auto", turn=2, target="a.md", ts=1020.0),
        AuditEvent("s2", "web_fetch", "scope-refused", turn=1, status="refused", ts=2000.0),
    )
    everything = read_activity(db, ActivityQuery())
    assert [r["tool"] for r in everything["rows"]] == [
        "web_fetch",
        "read_file",
        "run_shell_command",
        "run_shell_command",
    ]
    assert everything["tools"] == ["read_file", "run_shell_command", "web_fetch"]
    s2, s1 = everything["sessions"]
    assert (s1["session_id"], s1["turns"], s1["calls"], s1["refused"]) == ("s1", 2, 3, 1)
    assert (s1["first"], s1["last"]) == (1000.0, 1020.0)
    assert (s2["session_id"], s2["calls"], s2["refused"]) == ("s2", 1, 1)

    denied = read_activity(db, ActivityQuery(decision="denied"))
    assert [(r["session_id"], r["turn"]) for r in denied["rows"]] == [("s1", 2)]
    # The choices ignore the other filters, so a person can switch without clearing.
    assert len(denied["sessions"]) == 2

    one_tool = read_activity(db, ActivityQuery(session_id="s1", tool="run_shell_command"))
    assert [r["decision"] for r in one_tool["rows"]] == ["denied", "approved"]

    recent = read_activity(db, ActivityQuery(since=1015.0))
    assert [r["tool"] for r in recent["rows"]] == ["web_fetch", "read_file"]
    assert [s["session_id"] for s in recent["sessions"]] == ["s2", "s1"]
    assert recent["sessions"][1]["calls"] == 1

    assert len(read_activity(db, ActivityQuery(limit=1))["rows"]) == 1


def test_unknown_decisions_are_offered_after_the_known_ones(tmp_path: Path) -> None:
    db = tmp_path / "telemetry.db"
    _log(db, AuditEvent("s", "model_request", "rate-limited", status="refused"))
    decisions = read_activity(db, ActivityQuery())["decisions"]
    assert decisions[-1] == "rate-limited"
    assert decisions.index("approved") < decisions.index("rate-limited")


def test_parse_query_accepts_the_filters() -> None:
    query = parse_query(
        {"session": "s1", "tool": "t", "decision": "denied", "since": "12.5", "limit": "10"}
    )
    assert query == ActivityQuery("s1", "t", "denied", 12.5, 10)
    assert parse_query({"session": "", "since": ""}) == ActivityQuery()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"since": "yesterday"}, "since must be a Unix time in seconds, not 'yesterday'"),
        ({"since": "nan"}, "since must be a Unix time"),
        ({"since": "-5"}, "since must be a Unix time"),
        ({"limit": "0"}, "limit must be a whole number from 1 to 2000"),
        ({"limit": "many"}, "limit must be a whole number from 1 to 2000"),
        ({"user": "x"}, "unknown filter user; use session, tool, decision, since or limit"),
    ],
)
def test_parse_query_names_the_bad_filter(args: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        parse_query(args)


def test_guard_checks_are_detail_of_their_call_and_the_final_decision_wins(tmp_path: Path) -> None:
    db = tmp_path / "telemetry.db"
    _log(
        db,
        # One write_file: the scope guard's two checks, then the call's own row.
        AuditEvent("s", "write_file", "auto", turn=1, action="read", target="/w/a.md", ts=10.0),
        AuditEvent("s", "write_file", "auto", turn=1, action="create", target="/w/a.md", ts=10.1),
        AuditEvent("s", "write_file", "approved", turn=1, target="a.md", ts=10.2),
        # An approved call the guard then refused.
        AuditEvent(
            "s", "write_file", "scope-refused", turn=2, action="create", target="/etc/x",
            status="refused", detail="outside the workspace", ts=20.0,
        ),
        AuditEvent("s", "write_file", "approved", turn=2, target="/etc/x", status="error", ts=20.1),
        # A check whose call never got its row (the turn was stopped mid-call).
        AuditEvent("s", "read_file", "auto", turn=3, action="read", target="/w/b.md", ts=30.0),
    )  # fmt: skip
    data = read_activity(db, ActivityQuery())
    assert [(r["tool"], r["turn"], r["decision"]) for r in data["rows"]] == [
        ("read_file", 3, "auto"),
        ("write_file", 2, "scope-refused"),
        ("write_file", 1, "approved"),
    ]
    orphan, refused, written = data["rows"]
    assert written["target"] == "a.md" and written["status"] == "ok"
    assert [(c["action"], c["target"]) for c in written["checks"]] == [
        ("read", "/w/a.md"),
        ("create", "/w/a.md"),
    ]
    assert written["detail"] == "read /w/a.md; create /w/a.md"
    assert refused["status"] == "refused" and refused["detail"] == "outside the workspace"
    assert orphan["checks"] == []
    [session] = data["sessions"]
    assert (session["calls"], session["refused"], session["turns"]) == (3, 1, 3)
    # A filter sees each call's final decision, not its checks'.
    only_refused = read_activity(db, ActivityQuery(decision="scope-refused"))["rows"]
    assert [(r["turn"], r["action"]) for r in only_refused] == [(2, "call")]
    assert read_activity(db, ActivityQuery(decision="approved"))["rows"] == [written]


def test_turns_count_turns_without_tool_calls(tmp_path: Path) -> None:
    db = tmp_path / "telemetry.db"
    _log(db, AuditEvent("s", "read_file", "auto", turn=2, target="a.md", ts=20.0))
    log = AuditLog(db)
    for turn, ts in ((1, 10.0), (2, 19.0), (3, 30.0)):
        log.record_turn("s", turn, ts=ts)
    log.record_turn("quiet", 1, ts=40.0)  # a session that never called a tool
    log.close()
    quiet, busy = read_activity(db, ActivityQuery())["sessions"]
    assert (quiet["session_id"], quiet["turns"], quiet["calls"]) == ("quiet", 1, 0)
    assert (busy["turns"], busy["calls"], busy["first"], busy["last"]) == (3, 1, 10.0, 30.0)
    assert read_activity(db, ActivityQuery(since=25.0))["sessions"][1]["turns"] == 1


def test_a_call_is_its_latest_step_until_its_result_replaces_it(tmp_path: Path) -> None:
    """A question, then a decision, then the result: one row that says where the call is."""
    db = tmp_path / "telemetry.db"

    def step(call_id: str, action: str, decision: str, status: str, ts: float) -> AuditEvent:
        return AuditEvent(
            "s1", "write_file", decision, turn=1, action=action, target="a.md",
            status=status, call_id=call_id, ts=ts,
        )  # fmt: skip

    # The guard's check made as the call asked (an allowed write), then the question.
    _log(
        db,
        AuditEvent("s1", "write_file", "auto", turn=1, action="write", target="a.md", ts=1.0),
        step("c1", "ask", "waiting", "waiting", 2.0),
    )
    (row,) = read_activity(db, ActivityQuery())["rows"]
    assert (row["decision"], row["status"], row["call_id"]) == ("waiting", "waiting", "c1")
    assert row["checks"] == [
        {"action": "write", "target": "a.md", "decision": "auto", "status": "ok", "detail": None}
    ]
    assert [
        r["decision"] for r in read_activity(db, ActivityQuery(decision="waiting"))["rows"]
    ] == ["waiting"]

    _log(db, step("c1", "decide", "approved", "running", 3.0))
    (row,) = read_activity(db, ActivityQuery())["rows"]
    assert (row["decision"], row["status"], row["ts"]) == ("approved", "running", 2.0)

    _log(db, step("c1", "call", "approved", "ok", 4.0))
    (row,) = read_activity(db, ActivityQuery())["rows"]
    assert (row["action"], row["decision"], row["status"]) == ("call", "approved", "ok")
    assert row["ts"] == 4.0


def test_sessions_name_their_notebook_and_a_gone_kernel_leaves_no_call_waiting(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    db = tmp_path / "telemetry.db"
    root = tmp_path / "server-root"
    log = AuditLog(db)
    log.record_session("live", str(root / "work" / "analysis.ipynb"), os.getpid())
    log.record_session("dead", str(tmp_path / "elsewhere.ipynb"), gone.pid)
    log.record_session("console", None, os.getpid())
    for session in ("live", "dead", "console"):
        log.record(
            AuditEvent(
                session, "run_shell_command", "waiting", turn=1, action="ask",
                status="waiting", call_id=f"{session}-1",
            )
        )  # fmt: skip
    log.close()

    data = read_activity(db, ActivityQuery(), root)
    sessions = {s["session_id"]: (s["notebook"], s["console"]) for s in data["sessions"]}
    assert sessions == {
        "live": ("work/analysis.ipynb", False),
        "dead": (str(tmp_path / "elsewhere.ipynb"), False),
        "console": (None, True),
    }
    rows = {r["session_id"]: (r["status"], r["notebook"]) for r in data["rows"]}
    assert rows["live"] == ("waiting", "work/analysis.ipynb")
    assert rows["dead"][0] == "kernel ended"
    assert rows["console"] == ("waiting", None)
