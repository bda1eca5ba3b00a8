"""Tool failures reach the model as readable errors.

TERMINAL -> a result with ``error: true``; TRANSIENT -> a retry; MISUSE -> a retry with a
hint; an unexpected exception -> a readable retry; retries capped by ``tool_retries``,
after which the call gets a terminal result and the model still answers. Real kernel,
real tools (the fault-tools plugin), the scripted server over HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CoKernel
from ._fault_tools import calls
from ._faults import follow_up, serialised, start_fault_kernel, tool_results

TOOL_RETRIES = 2
DONE = "Done, despite the tool."


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args}]}


@dataclass(frozen=True)
class Case:
    name: str
    steps: list[dict[str, Any]]
    """The model's calls; a final answer is appended."""
    model_reads: list[str]
    """What the last tool message before the answer must say."""
    ran: list[str]
    """The tool executions, in order."""
    card_status: str = "error"
    extra: list[str] = field(default_factory=list)


CASES = [
    Case(
        "terminal",
        [_call("fail", kind="terminal", message="the API is not enabled")],
        ['"error":true', "the API is not enabled"],
        ["fail terminal"],
    ),
    Case(
        "transient-then-works",
        [_call("flaky", key="a", failures=1), _call("flaky", key="a", failures=1)],
        ["flaky a worked on attempt 2"],
        ["flaky a 1", "flaky a 2"],
        card_status="ok",
        extra=["try the same call again"],
    ),
    Case(
        "misuse-with-hint",
        [_call("fail", kind="misuse", message="no calendar with id 42")],
        ["no calendar with id 42", "Use an id from the list tool."],
        ["fail misuse"],
    ),
    Case(
        "unexpected-exception",
        [_call("fail", kind="crash", message="boom in the tool")],
        ["raised an unexpected error: RuntimeError: boom in the tool"],
        ["fail crash"],
    ),
    Case(
        "unexpected-exception-every-time",
        [_call("fail", kind="crash", message="still broken")] * (TOOL_RETRIES + 1),
        ['"error":true', "Gave up after 2 retries", "tool_retries"],
        ["fail crash"] * (TOOL_RETRIES + 1),
    ),
    Case(
        "transient-every-time",
        [_call("flaky", key="b", failures=99)] * (TOOL_RETRIES + 1),
        ['"error":true', "upstream busy", "Gave up after 2 retries"],
        ["flaky b 1", "flaky b 2", "flaky b 3"],
    ),
    Case(
        "model-retry-every-time",
        [_call("fail", kind="retry", message="wrong format")] * (TOOL_RETRIES + 1),
        ['"error":true', "failed too many times"],
        ["fail retry"] * (TOOL_RETRIES + 1),
    ),
]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([]) as srv:
        yield srv


@pytest.fixture(scope="module")
def tk(
    server: ScriptedModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[CoKernel, Path]]:
    kernel, workspace = start_fault_kernel(
        server, tmp_path_factory.mktemp("tool-errors"), tool_retries=TOOL_RETRIES
    )
    yield kernel, workspace
    kernel.shutdown()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_tool_error(case: Case, tk: tuple[CoKernel, Path], server: ScriptedModelServer) -> None:
    kernel, workspace = tk
    server.reset([*case.steps, {"text": DONE}])
    before = len(calls(workspace))

    result = kernel.execute(f"Use the tool ({case.name})")

    assert server.errors == []
    assert result.status == "ok", result.text()
    assert DONE in result.text() and "Traceback" not in result.text()
    assert calls(workspace)[before:] == case.ran
    requests = server.requests
    assert len(requests) == len(case.steps) + 1
    last_result = list(tool_results(requests[-1]).values())[-1]
    for needle in case.model_reads:
        assert needle in last_result, f"{needle!r} not in what the model read: {last_result!r}"
    for needle in case.extra:
        assert needle in serialised(requests[-1])
    cards = [
        m["content"]["data"]["application/vnd.co.tool-call+json"]
        for m in result.of_type("update_display_data")
        if "application/vnd.co.tool-call+json" in m["content"]["data"]
    ]
    assert cards and cards[-1]["status"] == case.card_status
    follow_up(kernel, server)
