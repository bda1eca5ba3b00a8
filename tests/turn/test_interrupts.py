"""Interrupts at every phase of a turn, against a real kernel (SIGINT, like the Stop button).

While streaming, during a tool, after a tool call, after an approval resume, during an
approved tool and during a backoff sleep: the cell ends marked as interrupted, the partial
answer stays, the history keeps it with a marker, every dangling tool call gets the
synthetic "Interrupted by user." return, and the next cell carries on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from co_kernel.replay import ScriptedModelServer
from co_kernel.turn import INTERRUPTED_TOOL_RETURN

from ..support.kernel_harness import CellResult, CoKernel, WidgetClicker
from ._fault_tools import NOTES_NAME, calls
from ._faults import follow_up, serialised, start_fault_kernel, tool_results

LONG = " ".join(f"word{i}" for i in range(600))
SLOW = {"text": LONG, "tokens_per_second": 30}
"""An answer that takes far longer than any test waits: only an interrupt ends it early."""


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([]) as srv:
        yield srv


@pytest.fixture(scope="module")
def ik(
    server: ScriptedModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[CoKernel, Path]]:
    kernel, workspace = start_fault_kernel(
        server,
        tmp_path_factory.mktemp("interrupts"),
        approval_mode="approve",
        # Long waits: an interrupt is the only way these cells end in time.
        model_backoff_base=120,
        model_backoff_cap=120,
    )
    yield kernel, workspace
    kernel.shutdown()


def _seen_text(seen: list[dict[str, Any]], needle: str) -> bool:
    return any(needle in str(m["content"].get("data", {})) for m in list(seen))


def _run_interrupted(
    kernel: CoKernel, prompt: str, condition: Any, seen: list[dict[str, Any]], **kw: Any
) -> CellResult:
    result = kernel.execute(
        prompt,
        timeout=60,
        interrupt_when=condition,
        on_message=lambda _k, m: seen.append(m),
        **kw,
    )
    _assert_interrupted(result)
    return result


def _assert_interrupted(result: CellResult) -> None:
    assert result.interrupt_sent, "the turn ended before the interrupt"
    assert result.status == "error"
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert "Traceback" not in result.text()
    assert "Interrupted" in result.text()


def _partial_kept(result: CellResult, history: str) -> None:
    """The cell shows a strict prefix of the long answer, and the history keeps it, marked."""
    shown = result.text()
    assert "word0" in shown and LONG not in shown
    assert "word0" in history and "[interrupted]" in history and LONG not in history


def test_interrupt_while_streaming_the_first_answer(
    ik: tuple[CoKernel, Path], server: ScriptedModelServer
) -> None:
    kernel, _ = ik
    server.reset([SLOW])
    seen: list[dict[str, Any]] = []
    result = _run_interrupted(
        kernel, "Tell me a long story", lambda: _seen_text(seen, "word3"), seen
    )
    assert len(server.requests) == 1
    history = serialised(follow_up(kernel, server))
    _partial_kept(result, history)
    assert "Tell me a long story" in history


def test_interrupt_during_a_tool(ik: tuple[CoKernel, Path], server: ScriptedModelServer) -> None:
    kernel, workspace = ik
    server.reset(
        [{"text": "Let me wait.", "tool_calls": [{"name": "wait", "arguments": {"seconds": 300}}]}]
    )
    before = len(calls(workspace))
    seen: list[dict[str, Any]] = []
    _run_interrupted(kernel, "Wait for me", lambda: "wait 300" in calls(workspace)[before:], seen)
    assert calls(workspace)[before:] == ["wait 300"], "the tool was cancelled, not finished"
    assert len(server.requests) == 1
    body = follow_up(kernel, server)
    assert INTERRUPTED_TOOL_RETURN in tool_results(body).values()
    assert "Let me wait." in serialised(body)


def test_interrupt_while_streaming_after_a_tool_call(
    ik: tuple[CoKernel, Path], server: ScriptedModelServer
) -> None:
    kernel, workspace = ik
    server.reset(
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "before-interrupt"}}]}, SLOW]
    )
    before = len(calls(workspace))
    seen: list[dict[str, Any]] = []
    result = _run_interrupted(kernel, "Echo then talk", lambda: _seen_text(seen, "word3"), seen)
    assert calls(workspace)[before:] == ["echo before-interrupt"]
    assert len(server.requests) == 2
    body = follow_up(kernel, server)
    assert "echo: before-interrupt" in tool_results(body).values()
    _partial_kept(result, serialised(body))


def test_interrupt_while_streaming_after_an_approval_resume(
    ik: tuple[CoKernel, Path], server: ScriptedModelServer
) -> None:
    kernel, workspace = ik
    server.reset(
        [{"tool_calls": [{"name": "write_note", "arguments": {"text": "approved-note"}}]}, SLOW]
    )
    # Approved on the card, as a person does; the interrupt waits until the resumed run's
    # answer shows in the cell (only then has the kernel a partial answer to keep).
    seen: list[dict[str, Any]] = []
    clicker = WidgetClicker(["Approve"])

    def on_message(k: CoKernel, m: dict[str, Any]) -> None:
        seen.append(m)
        clicker(k, m)

    result = kernel.execute(
        "Note then talk",
        timeout=60,
        interrupt_when=lambda: _seen_text(seen, "word3"),
        on_message=on_message,
    )
    _assert_interrupted(result)
    assert [label for label, _ in clicker.clicked] == ["Approve"]
    assert (workspace / NOTES_NAME).read_text().splitlines()[-1] == "approved-note"
    assert len(server.requests) == 2
    body = follow_up(kernel, server)
    assert "noted: approved-note" in tool_results(body).values()
    _partial_kept(result, serialised(body))


def test_interrupt_during_an_approved_tool(
    ik: tuple[CoKernel, Path], server: ScriptedModelServer
) -> None:
    kernel, workspace = ik
    server.reset([{"tool_calls": [{"name": "approved_wait", "arguments": {"seconds": 300}}]}])
    before = len(calls(workspace))
    seen: list[dict[str, Any]] = []
    _run_interrupted(
        kernel,
        "Approve a wait",
        lambda: "approved_wait 300" in calls(workspace)[before:],
        seen,
        mode="headless",
    )
    assert calls(workspace)[before:] == ["approved_wait 300"]
    body = follow_up(kernel, server, "headless")
    assert INTERRUPTED_TOOL_RETURN in tool_results(body).values()


def test_interrupt_during_a_backoff_sleep(
    ik: tuple[CoKernel, Path], server: ScriptedModelServer
) -> None:
    kernel, _ = ik
    server.reset([{"fault": {"status": 503}}, {"text": "never sent"}])
    seen: list[dict[str, Any]] = []
    result = _run_interrupted(
        kernel, "Try through an outage", lambda: _seen_text(seen, "in 120 s"), seen
    )
    assert len(server.requests) == 1, "the retry never happened"
    final = result.final_displays()
    assert not any("in 120 s" in d.get("text/plain", "") for d in final.values()), (
        "status line left behind"
    )
    history = serialised(follow_up(kernel, server))
    assert "Try through an outage" in history and "[interrupted]" in history


def test_interrupt_during_a_backoff_sleep_after_a_tool_call(
    ik: tuple[CoKernel, Path], server: ScriptedModelServer
) -> None:
    kernel, workspace = ik
    server.reset(
        [
            {"tool_calls": [{"name": "echo", "arguments": {"text": "pre-outage"}}]},
            {"fault": {"status": 500}},
        ]
    )
    before = len(calls(workspace))
    seen: list[dict[str, Any]] = []
    _run_interrupted(kernel, "Echo through an outage", lambda: _seen_text(seen, "in 120 s"), seen)
    assert calls(workspace)[before:] == ["echo pre-outage"]
    body = follow_up(kernel, server)
    assert "echo: pre-outage" in tool_results(body).values()
