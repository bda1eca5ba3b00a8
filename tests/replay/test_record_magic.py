"""`%record`: start, state, stop, in a real kernel; the script grows as the cells run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CoKernel


def _lines(path: Path) -> int:
    return len([line for line in path.read_text().split("\n") if line.strip()])


def test_record_starts_reports_and_stops(
    kernel: CoKernel, model_server: ScriptedModelServer, workspace: Path
) -> None:
    script = workspace / "co-session.replay.jsonl"
    state = kernel.execute("%record").markdown()
    assert state.startswith("Not recording.") and "`co-session.replay.jsonl`" in state
    started = kernel.execute("%record start").markdown()
    assert "Recording the model's answers into `co-session.replay.jsonl`" in started

    model_server.extend([{"text": "Hi there."}])
    assert kernel.execute("Hello?").status == "ok"
    assert _lines(script) == 1, "each step is on disk as soon as its request completes"
    assert "1 step(s) so far" in kernel.execute("%record").markdown()
    stopped = kernel.execute("%record stop").markdown()
    assert "Stopped recording: 1 step(s) in `co-session.replay.jsonl`" in stopped
    assert "`CO_MODEL=replay:co-session.replay.jsonl`" in stopped

    model_server.extend([{"text": "Not recorded."}])
    assert kernel.execute("Again?").status == "ok"
    assert _lines(script) == 1
    assert kernel.execute("%record stop").markdown() == "Not recording; nothing to stop."

    assert kernel.execute("%model replay:co-session.replay.jsonl").status == "ok"
    refused = kernel.execute("%record co-session.replay.jsonl")
    assert refused.status == "error"
    assert "is the script this session replays" in refused.error_lines[0]
    unwritable = kernel.execute("%record /proc/co-record/x.jsonl")
    assert unwritable.status == "error" and "Cannot record into" in unwritable.error_lines[0]
    assert kernel.execute("Hello?").markdown() == "Hi there."


def test_a_headless_policy_denial_replays_by_the_policy_with_the_same_message(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, workspace: Path
) -> None:
    model_server.extend(
        [
            {"tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": "touch x"}}]},
            {"text": "I could not: approval_mode denies it."},
        ]
    )
    recording = start_kernel({"CO_RECORD_PATH": "rec.jsonl"})
    assert recording.execute("Make x.", mode="headless").status == "ok"
    recording.shutdown()
    lines = (workspace / "rec.jsonl").read_text().split("\n")
    steps = [json.loads(line) for line in lines if line.strip()]
    assert "decision" not in steps[0]["tool_calls"][0], "the policy's denial is not the person's"
    assert "approval_mode=deny" in steps[1]["expect"]["tool_result_contains"]

    replaying = start_kernel({"CO_MODEL": "replay:rec.jsonl"})
    replayed = replaying.execute("Make x.", mode="headless")
    assert replayed.status == "ok", replayed.text()
    assert "I could not: approval_mode denies it." in replayed.text()
    assert not (workspace / "x").exists()
