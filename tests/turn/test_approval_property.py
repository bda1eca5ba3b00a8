"""Property: a side-effectful call runs only if approved, under yolo, or by safe prefix.

Hypothesis draws batches of shell calls (safe, unsafe, and unsafe ones disguised behind a
safe prefix), the person's answers, and whether the session starts in yolo. A real turn
runs them against the scripted model server; whether each call ran is observed from the
workspace (marker files) and from the tool results the model received.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from co_kernel.config import LoadedSettings, Settings
from co_kernel.replay import ScriptedModelServer
from co_kernel.turn import ChatSession, RecordingFrontend

KINDS = ("safe", "unsafe", "disguised")
DECISIONS = ("approve", "deny", "approve_all", "timed_out")


def command(kind: str, n: int) -> str:
    if kind == "safe":
        return f"echo RAN_{n}"  # a safe prefix: runs without asking
    if kind == "unsafe":
        return f"touch m_{n} && echo RAN_{n}"
    return f"echo RAN_{n}; touch m_{n}"  # starts like a safe command, but chains


def expected(
    batches: list[list[str]], answers: list[str], yolo: bool
) -> tuple[dict[int, bool], int]:
    """What must have run (by call number) and how many questions were asked."""
    answers = list(answers)
    ran: dict[int, bool] = {}
    asked = 0
    n = 0
    for batch in batches:
        for kind in batch:
            if yolo or kind == "safe":
                ran[n] = True
            else:
                asked += 1
                answer = answers.pop(0) if answers else "deny"
                ran[n] = answer in ("approve", "approve_all")
                yolo = yolo or answer == "approve_all"
            n += 1
    return ran, asked


async def play(session: ChatSession, frontend: RecordingFrontend) -> None:
    agent, _ = session.ensure_agent()
    try:
        async with agent:
            result = await session.run_prompt("go", cell_id=None, frontend=frontend)
            assert result is not None and result.error is None
    finally:
        if session.deps.sandbox is not None:
            await session.deps.sandbox.close()
        session.close()


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    batches=st.lists(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3), min_size=1, max_size=3),
    answers=st.lists(st.sampled_from(DECISIONS), max_size=8),
    yolo=st.booleans(),
)  # fmt: skip
def test_side_effects_run_only_when_allowed(
    batches: list[list[str]], answers: list[str], yolo: bool
) -> None:
    steps: list[dict[str, Any]] = []
    n = 0
    for batch in batches:
        calls = []
        for kind in batch:
            calls.append({"name": "run_shell_command", "arguments": {"cmd": command(kind, n)}})
            n += 1
        steps.append({"tool_calls": calls})
    steps.append({"text": "done"})

    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer(steps) as server:
        workspace = Path(tmp)
        values = {"model": "compat:scripted", "base_url": server.base_url, "sandbox": "subprocess"}
        session = ChatSession(
            LoadedSettings(Settings(**values)), workspace=workspace, kernel_id="property"
        )
        session.deps.auto_confirm = yolo
        frontend = RecordingFrontend(answers)  # type: ignore[arg-type]
        asyncio.run(play(session, frontend))

        tool_output = " ".join(
            str(m.get("content"))
            for request in server.requests
            for m in request["messages"]
            if m["role"] == "tool"
        )
        flat = [kind for batch in batches for kind in batch]
        must_run, asked = expected(batches, answers, yolo)
        for i, kind in enumerate(flat):
            ran = f"RAN_{i}" in tool_output
            if kind != "safe":
                assert (workspace / f"m_{i}").exists() == ran, f"call {i} half ran"
            assert ran == must_run[i], f"call {i} ({kind}) ran={ran}, expected {must_run[i]}"
        assert sum(1 for name, _ in frontend.events if name == "approval") == asked
        assert server.errors == []
