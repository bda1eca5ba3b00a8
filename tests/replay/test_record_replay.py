"""Record a session's model exchanges, replay them in another session.

Real sessions, the real shell tool in a subprocess sandbox, the scripted server standing in
for a provider over HTTP; the recording is the file the session writes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from co_kernel.config import LoadedSettings, Settings
from co_kernel.replay import Script, ScriptedModelServer, Step, step_from_exchange
from co_kernel.replay._script import check_expect
from co_kernel.turn import ChatSession, RecordingFrontend

from ..support.turn_support import make_session, run, shell, within

SECRET = "sk-recordtest-0123456789abcdefXYZ"


def _steps(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def _record(
    workspace: Path, script: list[dict[str, Any]], *turns: tuple[str, Any], **settings: Any
) -> Path:
    """Run the turns against a scripted provider with `record_path` set; the recording."""
    with ScriptedModelServer(script) as server:
        session = make_session(server, workspace, record_path="rec.jsonl", **settings)
        run(session, *turns)
    return workspace / "rec.jsonl"


def _replayer(workspace: Path, script: Path, **settings: Any) -> ChatSession:
    """A session whose model is `replay:` the script (no provider at all)."""
    values = {"model": f"replay:{script}", "sandbox": "subprocess", **settings}
    return ChatSession(LoadedSettings(Settings(**values)), workspace=workspace, kernel_id="t")


_SCRIPT = [
    {"text": "Hello! Ask me anything."},
    {"tool_calls": [{**shell("touch made.txt"), "id": "call_touch"}]},
    {"text": "Created made.txt."},
]


def test_a_recording_replays_answers_and_approvals_in_another_session(tmp_path: Path) -> None:
    recorded = _record(
        tmp_path,
        _SCRIPT,
        ("Say hello.", RecordingFrontend()),
        ("Create made.txt.", RecordingFrontend(["approve"])),
    )
    steps = _steps(recorded)
    assert [s.get("expect") for s in steps] == [
        {"last_user_is": "Say hello."},
        {"last_user_is": "Create made.txt."},
        {"tool_result_contains": steps[2]["expect"]["tool_result_contains"]},
    ]
    assert steps[1]["tool_calls"] == [
        {
            "name": "run_shell_command",
            "arguments": {"cmd": "touch made.txt"},
            "id": "call_touch",
            "decision": "approved",
        }
    ]
    assert [s.get("text") for s in steps] == ["Hello! Ask me anything.", None, "Created made.txt."]
    (tmp_path / "made.txt").unlink()

    # With recorded approvals turned on by the person, the replay asks nobody (a frontend
    # that would deny): the recorded decision runs the call.
    replayer = _replayer(tmp_path, recorded, replay_approvals=True)
    first, second = RecordingFrontend(), RecordingFrontend()
    results = run(replayer, ("Say hello.", first), ("Create made.txt.", second))
    assert first.text == "Hello! Ask me anything."
    assert second.text == "Created made.txt."
    assert results[1].decisions == {"call_touch": "approved (recorded)"}
    assert not [e for e in second.events if e[0] == "approval"], "nobody was asked"
    assert (tmp_path / "made.txt").exists()


def test_recorded_approvals_are_off_unless_turned_on(tmp_path: Path) -> None:
    recorded = _record(tmp_path, _SCRIPT[1:], ("Create made.txt.", RecordingFrontend(["approve"])))
    (tmp_path / "made.txt").unlink()
    replayer = _replayer(tmp_path, recorded)
    (result,) = run(replayer, ("Create made.txt.", RecordingFrontend(["deny"])))
    assert result.decisions == {"call_touch": "denied"}
    assert not (tmp_path / "made.txt").exists()


def test_an_edited_prompt_fails_the_turn_naming_step_expected_and_actual(tmp_path: Path) -> None:
    recorded = _record(tmp_path, _SCRIPT[:1], ("Say hello.", RecordingFrontend()))
    (result,) = run(_replayer(tmp_path, recorded), ("Say goodbye.", RecordingFrontend()))
    assert result.error is not None
    assert f"The replay script {recorded} does not match this request at step 1" in result.error
    assert "expected last user message to be 'Say hello.', got 'Say goodbye.'" in result.error
    assert "replay_mode" in result.error and "409" not in result.error
    (past_the_end,) = run(
        _replayer(tmp_path, recorded),
        ("Say hello.", RecordingFrontend()),
        ("One more?", RecordingFrontend()),
    )[1:]
    assert past_the_end.error is not None
    assert "has no step for this request (script exhausted after 1 requests)" in past_the_end.error


def test_record_missing_asks_the_fallback_only_for_what_changed(tmp_path: Path) -> None:
    recorded = _record(
        tmp_path,
        [{"text": "One."}, {"text": "Two."}, {"text": "Three."}],
        ("First?", RecordingFrontend()),
        ("Second?", RecordingFrontend()),
        ("Third?", RecordingFrontend()),
    )
    before = _steps(recorded)
    with ScriptedModelServer([{"text": "Deux."}]) as fallback:
        replayer = make_session(
            fallback,
            tmp_path,
            model=f"replay:{recorded}",
            replay_mode="record-missing",
            replay_fallback_model="compat:scripted",
        )
        frontends = [RecordingFrontend() for _ in range(3)]
        run(replayer, *zip(["First?", "Second, edited?", "Third?"], frontends, strict=True))
        assert len(fallback.requests) == 1
    assert [f.text for f in frontends] == ["One.", "Deux.", "Three."]
    after = _steps(recorded)
    assert [after[0], after[2]] == [before[0], before[2]], "only the changed step is new"
    assert after[1]["text"] == "Deux."
    assert after[1]["expect"] == {"last_user_is": "Second, edited?"}

    # The script now matches the edited notebook in a strict replay.
    strict = _replayer(tmp_path, recorded)
    results = run(
        strict,
        *[(p, RecordingFrontend()) for p in ["First?", "Second, edited?", "Third?"]],
    )
    assert [r.error for r in results] == [None, None, None]


def test_record_missing_without_a_fallback_says_which_setting_to_set(tmp_path: Path) -> None:
    recorded = _record(tmp_path, _SCRIPT[:1], ("Say hello.", RecordingFrontend()))
    replayer = _replayer(tmp_path, recorded, replay_mode="record-missing")
    (result,) = run(replayer, ("Say goodbye.", RecordingFrontend()))
    assert result.error is not None
    assert "does not match this request at step 1" in result.error
    assert "set `replay_fallback_model`" in result.error


def test_secrets_never_reach_the_recording(tmp_path: Path) -> None:
    script = [
        {"text": f"Your key is {SECRET}.", "tool_calls": [shell(f"echo {SECRET}")]},
        {"text": "Done."},
    ]
    with ScriptedModelServer(script) as server:
        session = make_session(server, tmp_path, record_path="rec.jsonl", openai_api_key=SECRET)
        run(session, (f"Remember my key {SECRET} please.", RecordingFrontend(["deny"])))
    text = (tmp_path / "rec.jsonl").read_text()
    assert SECRET not in text
    assert "[REDACTED]" in text
    steps = _steps(tmp_path / "rec.jsonl")
    # The prompt's check keeps a clean piece, so the replayed (unredacted) prompt matches.
    assert steps[0]["expect"] == {"last_user_contains": "Remember my key "}


def test_failed_requests_and_retries_are_not_steps(tmp_path: Path) -> None:
    recorded = _record(
        tmp_path,
        [
            {"fault": {"status": 500}},
            {"text": "A partial answer", "fault": {"kind": "drop", "after_chunks": 2}},
            {"text": "Ok."},
        ],
        ("Hello?", RecordingFrontend()),
        model_backoff_base=0.01,
    )
    (step,) = _steps(recorded)
    assert step["text"] == "Ok." and step["expect"] == {"last_user_is": "Hello?"}


def test_the_script_is_written_as_the_session_goes(tmp_path: Path) -> None:
    with ScriptedModelServer([{"text": "One."}, {"text": "Two."}]) as server:
        session = make_session(server, tmp_path, record_path="rec.jsonl")
        lines: list[int] = []

        class Watching(RecordingFrontend):
            def on_turn_end(self, summary: Any) -> None:
                lines.append(len(_steps(tmp_path / "rec.jsonl")))
                super().on_turn_end(summary)

        run(session, ("First?", Watching()), ("Second?", Watching()))
    assert lines == [1, 2]


_PROMPTS = st.text(min_size=1, max_size=200).filter(lambda s: s.strip())


@settings(max_examples=60, deadline=None)
@given(prompt=_PROMPTS, other=_PROMPTS)
def test_a_recorded_step_matches_its_own_prompt_and_no_other(prompt: str, other: str) -> None:
    step = Step.model_validate(
        step_from_exchange(
            [ModelRequest(parts=[UserPromptPart(prompt)])], ModelResponse(parts=[TextPart("x")])
        )
    )
    assert step.expect is not None

    def body(text: str) -> dict[str, Any]:
        return {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": text}]}

    assert check_expect(step.expect, body(prompt)) is None
    assert (check_expect(step.expect, body(other)) is None) == (other == prompt)


def test_a_subagents_requests_are_recorded_and_replayed_even_with_a_model_of_its_own(
    tmp_path: Path,
) -> None:
    writer = {"name": "writer", "description": "Writes prose.", "instructions": "Write plainly."}
    delegate = {
        "name": "delegate_task",
        "arguments": {"description": "A line on cats", "subagent": "writer"},
    }
    recorded = _record(
        tmp_path,
        [{"tool_calls": [delegate]}, {"text": "Cats nap."}, {"text": "Done: cats nap."}],
        ("Write about cats.", RecordingFrontend()),
        subagents=[writer],
    )
    steps = _steps(recorded)
    assert [s.get("text") for s in steps] == [None, "Cats nap.", "Done: cats nap."]
    assert steps[1]["expect"] == {"last_user_is": "A line on cats"}

    # No provider at all: a subagent's own model is answered by the replay too.
    own_model = {**writer, "model": "compat:writer-model", "tools": []}
    replayer = _replayer(tmp_path, recorded, subagents=[own_model])
    frontend = RecordingFrontend()
    (result,) = run(replayer, ("Write about cats.", frontend))
    assert result.error is None
    assert frontend.text == "Done: cats nap."


def test_a_recorded_approve_all_turns_yolo_on_again_in_the_replay(tmp_path: Path) -> None:
    two_calls = [
        {"tool_calls": [{**shell("touch one.txt"), "id": "call_one"}]},
        {"tool_calls": [{**shell("touch two.txt"), "id": "call_two"}]},
        {"text": "Both made."},
    ]
    recorded = _record(tmp_path, two_calls, ("Make two files.", RecordingFrontend(["approve_all"])))
    decisions = [c.get("decision") for s in _steps(recorded) for c in s.get("tool_calls", [])]
    assert decisions == ["approved all", None], "the second call ran under yolo: no one decided"
    for name in ("one.txt", "two.txt"):
        (tmp_path / name).unlink()

    replayer = _replayer(tmp_path, recorded, replay_approvals=True)
    (result,) = run(replayer, ("Make two files.", RecordingFrontend()))
    assert result.decisions == {"call_one": "approved all (recorded)", "call_two": "yolo"}
    assert replayer.deps.auto_confirm
    assert (tmp_path / "one.txt").exists() and (tmp_path / "two.txt").exists()


def test_a_compaction_summary_is_recorded_and_replayed(tmp_path: Path) -> None:
    """The summary request (not streamed) is a step like the others; in the replay, a
    `summarization_model` of its own is answered by the replay too."""
    prompts = ["Tell me about alpha.", "And beta?"]

    def scenario(session: ChatSession) -> Any:
        async def go() -> tuple[list[str], str]:
            texts = []
            for prompt in prompts:
                frontend = RecordingFrontend()
                await session.run_prompt(prompt, cell_id=None, frontend=frontend)
                texts.append(frontend.text)
            report = await session.compact()
            return texts, report.summary

        return asyncio.run(within(session, go))

    answers = [{"text": "Alpha is first."}, {"text": "Beta is second."}, {"text": "A, then B."}]
    with ScriptedModelServer(answers) as server:
        recording = make_session(server, tmp_path, record_path="rec.jsonl", compact_keep_turns=1)
        assert scenario(recording) == (["Alpha is first.", "Beta is second."], "A, then B.")
    assert [s["text"] for s in _steps(tmp_path / "rec.jsonl")] == [a["text"] for a in answers]

    replayer = _replayer(
        tmp_path,
        tmp_path / "rec.jsonl",
        compact_keep_turns=1,
        summarization_model="compat:summariser",
    )
    assert scenario(replayer) == (["Alpha is first.", "Beta is second."], "A, then B.")


def test_record_path_never_overwrites_the_script_the_session_replays(tmp_path: Path) -> None:
    recorded = _record(tmp_path, _SCRIPT[:1], ("Say hello.", RecordingFrontend()))
    before = recorded.read_text()
    replayer = _replayer(tmp_path, recorded, record_path="rec.jsonl")
    frontend = RecordingFrontend()
    (result,) = run(replayer, ("Say hello.", frontend))
    assert result.error is None and frontend.text == "Hello! Ask me anything."
    notices = [payload[1] for kind, payload in frontend.events if kind == "notice"]
    assert any("not recording into" in n and "this session replays" in n for n in notices)
    assert recorded.read_text() == before


_SECRETS = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
    min_size=8,
    max_size=40,
)
_AROUND = st.text(max_size=30)


@settings(max_examples=60, deadline=None)
@given(secret=_SECRETS, before=_AROUND, after=_AROUND)
@example(secret="0123456789", before="", after="\u2028\x85")  # line breaks to splitlines
def test_a_secret_anywhere_in_an_exchange_never_reaches_the_file(
    tmp_path_factory: pytest.TempPathFactory, secret: str, before: str, after: str
) -> None:
    folder = tmp_path_factory.mktemp("rec")
    # A "secret" that is one of the recording's own words ("approved", a tool's name) is
    # in the file whatever the exchange held: not a leak.
    assume(secret not in _written(folder / "format.jsonl", ".", "not-a-secret-value"))
    written = _written(folder / "rec.jsonl", f"{before}{secret}{after}", secret)
    assert secret not in written
    # The replay reads it back whole, whatever characters the answers hold.
    replayed = Script.from_file(folder / "rec.jsonl")
    assert len(replayed) == 2 and replayed.steps[0].tool_calls[0].decision == "approved"


def _written(path: Path, text: str, secret: str) -> str:
    """What the recorder writes of an exchange whose every part holds ``text``."""
    from pydantic_ai.messages import ThinkingPart, ToolCallPart, ToolReturnPart

    from co_kernel.replay import Recorder
    from co_kernel.telemetry import Redactor

    recorder = Recorder(redact=Redactor([secret]).redact)
    recorder.start(path)
    for request, response in (
        (
            ModelRequest(parts=[UserPromptPart(text)]),
            ModelResponse(
                parts=[
                    ThinkingPart(text),
                    TextPart(text),
                    ToolCallPart("run_shell_command", {"cmd": text}, tool_call_id="c1"),
                ]
            ),
        ),
        (
            ModelRequest(parts=[ToolReturnPart("run_shell_command", text, tool_call_id="c1")]),
            ModelResponse(parts=[TextPart("done")]),
        ),
    ):
        recorder.record([request], response)
    recorder.record_decision("c1", "approved")
    return path.read_text(encoding="utf-8")
