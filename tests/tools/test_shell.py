"""The shell tool: runs in the session sandbox once approved; fixable mistakes go back
to the model before anyone is asked; an unavailable sandbox is a readable result."""

from __future__ import annotations

from co_kernel.turn import RecordingFrontend
from tests.support.turn_support import (
    approvals,
    make_session,
    results,
    run,
    shell,
)


def test_result_carries_output_exit_code_and_display(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("echo out; echo err >&2; exit 3")]},
            {"expect": {"tool_result_contains": "exit code 3"}, "text": "It failed with 3."},
        ]
    )
    frontend = RecordingFrontend(["approve"])
    [result] = run(make_session(model_server, workspace), ("run it", frontend))
    content = results(frontend)["call_1_0"].content
    assert content["exit_code"] == 3 and content["timed_out"] is False
    assert "out" in content["output"] and "err" in content["output"]
    assert content["display"].startswith("$ echo out; echo err >&2; exit 3\n")
    assert content["display"].endswith("[exit code 3 · ran on the host, not in a sandbox]")
    assert result.output == "It failed with 3."
    assert model_server.errors == []


def test_timeout_kills_the_command(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("sleep 30; touch late", timeout=1)]},
            {"expect": {"tool_result_contains": "timeout"}, "text": "Too slow."},
        ]
    )
    frontend = RecordingFrontend(["approve"])
    run(make_session(model_server, workspace), ("run it", frontend))
    content = results(frontend)["call_1_0"].content
    assert content["timed_out"] is True and content["exit_code"] is None
    assert not (workspace / "late").exists()
    assert model_server.errors == []


def test_the_sandbox_is_created_once_per_session(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch one")]},
            {"tool_calls": [shell("touch two")]},
            {"text": "ok"},
        ]
    )
    session = make_session(model_server, workspace)
    seen = []

    class Watching(RecordingFrontend):
        def on_tool_result(self, result):  # type: ignore[no-untyped-def]
            seen.append(session.deps.sandbox)
            super().on_tool_result(result)

    run(session, ("go", Watching(["approve", "approve"])))
    assert len(seen) == 2 and seen[0] is not None and seen[0] is seen[1]


def test_arguments_the_model_can_fix_are_retried_before_anyone_is_asked(model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("   ")]},
            {"expect": {"messages_contain": ["The command is empty"]}, "tool_calls": [shell("ls", timeout=99999)]},
            {"expect": {"messages_contain": ["over the ceiling"]}, "text": "giving up"},
        ]
    )  # fmt: skip
    frontend = RecordingFrontend([])
    [result] = run(make_session(model_server, workspace), ("go", frontend))
    assert approvals(frontend) == []
    assert result.output == "giving up"
    assert model_server.errors == []


def test_unavailable_sandbox_is_a_readable_tool_result(model_server, tmp_path):
    not_a_dir = tmp_path / "file-not-dir"
    not_a_dir.write_text("")
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "sandbox is unavailable"}, "text": "No sandbox."},
        ]
    )
    frontend = RecordingFrontend(["approve"])
    session = make_session(model_server, not_a_dir, sandbox="docker")
    [result] = run(session, ("go", frontend))
    assert result.output == "No sandbox."
    content = results(frontend)["call_1_0"].content
    assert content["error"] is True and content["exit_code"] is None
    assert model_server.errors == []
