"""One request budget per turn (`max_request_limit`), shared by every resume and retry.

A turn that reaches it stops with a clear note, keeps what it streamed and what its tools
did, and the next turn gets a fresh budget. Real kernel, real tools, scripted server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CellResult, CoKernel
from ._fault_tools import NOTES_NAME, calls
from ._faults import follow_up, serialised, start_fault_kernel

LIMIT = 3


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([]) as srv:
        yield srv


@pytest.fixture(scope="module")
def bk(
    server: ScriptedModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[CoKernel, Path]]:
    kernel, workspace = start_fault_kernel(
        server,
        tmp_path_factory.mktemp("budget"),
        max_request_limit=LIMIT,
        approval_mode="approve",
        model_backoff_base=0.01,
    )
    yield kernel, workspace
    kernel.shutdown()


def _stopped_on_budget(result: CellResult) -> None:
    assert result.status == "error"
    text = result.text()
    assert f"budget of {LIMIT} model requests" in text and "max_request_limit" in text
    assert "Traceback" not in text


def _step(text: str, tool: str, arg: str) -> dict[str, Any]:
    return {"text": text, "tool_calls": [{"name": tool, "arguments": {"text": arg}}]}


def test_a_tool_loop_stops_at_the_budget(
    bk: tuple[CoKernel, Path], server: ScriptedModelServer
) -> None:
    kernel, workspace = bk
    server.reset([_step(f"Step {i}.", "echo", f"loop-{i}") for i in range(1, 6)])
    before = len(calls(workspace))

    result = kernel.execute("Loop forever")

    _stopped_on_budget(result)
    assert len(server.requests) == LIMIT
    assert calls(workspace)[before:] == [f"echo loop-{i}" for i in range(1, LIMIT + 1)]
    for i in range(1, LIMIT + 1):
        assert f"Step {i}." in result.text(), "what was streamed stays in the cell"
    history = serialised(follow_up(kernel, server))
    assert "echo: loop-3" in history and "[Co stopped this turn]" in history


def test_approval_resumes_share_one_budget(
    bk: tuple[CoKernel, Path], server: ScriptedModelServer
) -> None:
    kernel, workspace = bk
    server.reset([_step(f"Note {i}.", "write_note", f"note-{i}") for i in range(1, 6)])

    result = kernel.execute("Write notes forever", mode="headless")

    _stopped_on_budget(result)
    # Each approval resumes the run; a budget per resume would have let a fourth request through.
    assert len(server.requests) == LIMIT
    assert (workspace / NOTES_NAME).read_text().splitlines()[-LIMIT:] == [
        f"note-{i}" for i in range(1, LIMIT + 1)
    ]
    follow_up(kernel, server, "headless")


def test_reflection_retries_share_the_budget(
    bk: tuple[CoKernel, Path], server: ScriptedModelServer
) -> None:
    kernel, workspace = bk
    rejected = {"fault": {"status": 400, "body": {"error": {"message": "bad tool schema"}}}}
    server.reset(
        [
            _step("One.", "echo", "r-1"),
            rejected,
            {**_step("Two.", "echo", "r-2"), "expect": {"messages_contain": ["bad tool schema"]}},
            _step("Three.", "echo", "r-3"),
            _step("Four.", "echo", "r-4"),
        ]
    )
    before = len(calls(workspace))

    result = kernel.execute("Loop through a rejection")

    _stopped_on_budget(result)
    assert server.errors == []
    # Three answered requests fill the budget; the rejected one is answered by nobody.
    assert len(server.requests) == LIMIT + 1
    assert calls(workspace)[before:] == ["echo r-1", "echo r-2", "echo r-3"]
    follow_up(kernel, server)
