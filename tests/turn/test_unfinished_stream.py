"""A model answer that ends without a finish reason is a dropped stream.

The scripted server sends the whole answer, cleanly ended, but with no finish reason (a
proxy that lost the last chunk). The turn must not show it as a complete answer: it is
retried like a dropped stream, and what it asked for does not run.
"""

from __future__ import annotations

from co_kernel.turn import RecordingFrontend
from tests.support.turn_support import make_session, results, run, shell

UNFINISHED = {"kind": "unfinished"}


def statuses(frontend: RecordingFrontend) -> list[str]:
    return [p for name, p in frontend.events if name == "status"]


def notices(frontend: RecordingFrontend) -> str:
    return " ".join(p[1] for name, p in frontend.events if name == "notice")


def test_an_unfinished_answer_is_retried(model_server, workspace) -> None:
    model_server.extend(
        [{"text": "The first half of an answ", "fault": UNFINISHED}, {"text": "Whole answer."}]
    )
    frontend = RecordingFrontend()
    [result] = run(make_session(model_server, workspace, model_backoff_base=0), ("hi", frontend))

    assert result.error is None
    assert result.output == "Whole answer."
    assert len(model_server.requests) == 2
    assert any("without finishing" in s and "retry 1 of 2" in s for s in statuses(frontend))
    assert "cut off" in notices(frontend)
    assert "first half" not in str(result.messages)


def test_tool_calls_of_an_unfinished_answer_do_not_run(model_server, workspace) -> None:
    model_server.extend(
        [
            {"tool_calls": [shell("echo ran >> runs.txt")], "fault": UNFINISHED},
            {"tool_calls": [shell("echo ran >> runs.txt")]},
            {"text": "Ran once."},
        ]
    )
    frontend = RecordingFrontend(["approve"])
    [result] = run(make_session(model_server, workspace, model_backoff_base=0), ("go", frontend))

    assert result.error is None and result.output == "Ran once."
    assert (workspace / "runs.txt").read_text() == "ran\n"
    assert list(results(frontend)) == ["call_2_0"]


def test_answers_that_never_finish_end_the_turn_with_a_reason(model_server, workspace) -> None:
    model_server.extend([{"text": "Never quite", "fault": UNFINISHED, "repeat": 3}])
    frontend = RecordingFrontend()
    [result] = run(make_session(model_server, workspace, model_backoff_base=0), ("hi", frontend))

    assert result.error is not None
    assert "without finishing" in result.error and "gave up after 3 attempts" in result.error
    assert "Never quite" not in result.output
    assert len(model_server.requests) == 3
