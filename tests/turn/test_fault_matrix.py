"""The fault matrix: every provider fault and malformed reply, at every phase of a turn.

Faults {400, 401, 403, 404, 429 with and without Retry-After, 500, 502, 503, reset before
the first byte, drop mid-stream, malformed SSE chunk, stall past the read timeout, tool
args that are not JSON, an unknown tool} x phases {first request, after a tool call,
after an approval resume}, each against a real kernel and the scripted server over HTTP.
Both tool phases run twice: with the fault-tools plugin (``echo``; ``write_note``, which
needs approval) and with the shell tool (``echo``, approved by its safe prefix; a
command that writes a file, approved by the headless policy).

Every scenario checks that the cell shows the recovered answer or the expected message,
that the server saw exactly the requests the retry policy allows, that a tool that ran
before the fault is not run again, and that a follow-up turn works on the saved history
without the model receiving a dangling tool call. One kernel per phase serves all the
faults (``server.reset`` between them): a long session is what a person has anyway.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CellResult, CoKernel, Mode
from ._fault_tools import calls
from ._faults import follow_up, serialised, start_fault_kernel, tool_results

ANSWER = "Recovered: here is the answer."
REQUEST_TIMEOUT = 3.0
TOOL_RETRIES = 2
HTTP_RETRIES = 2

Phase = Literal["first", "tool", "approval", "shell", "shell-approval"]
PHASES: tuple[Phase, ...] = ("first", "tool", "approval", "shell", "shell-approval")
HEADLESS_PHASES = ("approval", "shell-approval")
"""Approvals there are decided by `approval_mode = approve`, as nbclient runs get them."""
SHELL_RUNS = "shell-runs.txt"


@dataclass(frozen=True)
class Fault:
    """One row of the matrix: what the server does and what the turn must make of it."""

    name: str
    steps: list[dict[str, Any]]
    """The faulty request(s) and, when the turn recovers, the answer."""
    recovers: bool
    """The turn ends with ANSWER; otherwise with an error message."""
    shows: list[str] = field(default_factory=list)
    """Text the cell must keep showing (besides ANSWER when it recovers)."""
    status: list[str] = field(default_factory=list)
    """Text of the retry status line, which live frontends show until the turn resumes."""
    requests: int = 2
    """Requests the fault part of the turn makes under the retry policy."""
    reaches_model: list[str] = field(default_factory=list)
    """Text the last request of the turn must carry (the reflected error, the retry prompt)."""
    model_replied: bool = False
    """The model answered (badly) before the turn stopped, so the turn stays in the history."""


def _status(status: int, **extra: Any) -> dict[str, Any]:
    return {"fault": {"status": status, **extra}}


_BODY_400 = {
    "error": {"message": "tool_calls args too long: shorten them", "type": "invalid_request_error"}
}
_NOT_JSON = {"tool_calls": [{"name": "echo", "arguments": "{not json"}]}
_UNKNOWN = {"tool_calls": [{"name": "no_such_tool", "arguments": {}}]}
_ANSWER = {"text": ANSWER}

FAULTS = [
    Fault(
        "400-with-body",
        [_status(400, body=_BODY_400), _ANSWER],
        recovers=True,
        reaches_model=["shorten them"],
    ),
    Fault(
        "400-twice",
        [_status(400, body=_BODY_400), _status(400, body=_BODY_400)],
        recovers=False,
        shows=["HTTP 400", "shorten them", "could not correct it"],
    ),
    Fault("401", [_status(401)], recovers=False, shows=["HTTP 401", "CO_API_KEY"], requests=1),
    Fault("403", [_status(403)], recovers=False, shows=["HTTP 403", "refused access"], requests=1),
    Fault(
        "404",
        [_status(404)],
        recovers=False,
        shows=["HTTP 404", "compat:scripted", "%model"],
        requests=1,
    ),
    Fault(
        "429-retry-after",
        [_status(429, headers={"Retry-After": "1"}), _ANSWER],
        recovers=True,
        status=["HTTP 429", "asked to wait 1 s", "retry 1 of 2 in 1 s"],
    ),
    Fault("429-no-retry-after", [_status(429), _ANSWER], recovers=True, status=["HTTP 429"]),
    Fault("500", [_status(500), _ANSWER], recovers=True, status=["HTTP 500", "retry 1 of 2"]),
    Fault("502", [_status(502), _ANSWER], recovers=True, status=["HTTP 502"]),
    Fault("503", [_status(503), _ANSWER], recovers=True, status=["HTTP 503"]),
    Fault(
        "500-persistent",
        [{**_status(500), "repeat": HTTP_RETRIES + 1}],
        recovers=False,
        shows=["HTTP 500", f"gave up after {HTTP_RETRIES + 1} attempts", "model_http_retries"],
        requests=HTTP_RETRIES + 1,
    ),
    Fault("reset", [{"fault": {"kind": "reset"}}, _ANSWER], recovers=True, status=["connection"]),
    Fault(
        "drop-mid-stream",
        [
            {
                "text": "A partial sentence that never ends",
                "fault": {"kind": "drop", "after_chunks": 4},
            },
            _ANSWER,
        ],
        recovers=True,
        shows=["cut off"],
        status=["Lost the connection"],
    ),
    Fault(
        "malformed-sse",
        [
            {"text": "Some text then garbage", "fault": {"kind": "malformed", "after_chunks": 3}},
            _ANSWER,
        ],
        recovers=True,
        status=["could not read"],
    ),
    Fault(
        "stall-past-timeout",
        [
            {
                "text": "Slow",
                "fault": {"kind": "stall", "seconds": REQUEST_TIMEOUT + 5, "after_chunks": 1},
            },
            _ANSWER,
        ],
        recovers=True,
        status=["did not answer in time", "request_timeout"],
    ),
    Fault(
        "tool-args-not-json",
        [_NOT_JSON, _ANSWER],
        recovers=True,
        reaches_model=["echo", "Invalid JSON"],
    ),
    Fault(
        "tool-args-not-json-persistent",
        [{**_NOT_JSON, "repeat": TOOL_RETRIES + 1}],
        recovers=False,
        shows=["could not be used", "tool_retries"],
        requests=TOOL_RETRIES + 1,
        model_replied=True,
    ),
    Fault("unknown-tool", [_UNKNOWN, _ANSWER], recovers=True, reaches_model=["Unknown tool name"]),
    Fault(
        "unknown-tool-persistent",
        [{**_UNKNOWN, "repeat": TOOL_RETRIES + 1}],
        recovers=False,
        shows=["could not be used", "no_such_tool"],
        requests=TOOL_RETRIES + 1,
        model_replied=True,
    ),
]


@dataclass
class PhaseKernel:
    kernel: CoKernel
    workspace: Path
    mode: Mode


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([]) as srv:
        yield srv


@pytest.fixture(scope="module")
def phase_kernels(
    server: ScriptedModelServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[Phase, PhaseKernel]]:
    """One kernel per phase, started on first use and shared by that phase's scenarios."""
    started: dict[Phase, PhaseKernel] = {}

    class Lazy(dict[Phase, PhaseKernel]):
        def __missing__(self, phase: Phase) -> PhaseKernel:
            kernel, workspace = start_fault_kernel(
                server,
                tmp_path_factory.mktemp(f"matrix-{phase}"),
                request_timeout=REQUEST_TIMEOUT,
                model_http_retries=HTTP_RETRIES,
                tool_retries=TOOL_RETRIES,
                model_backoff_base=0.05,
                model_backoff_cap=1.0,
                approval_mode="approve",
            )
            # The approval phases run headless (approvals decided by `approval_mode`);
            # the others in notebook mode, where the retry status line is live.
            started[phase] = PhaseKernel(
                kernel, workspace, "headless" if phase in HEADLESS_PHASES else "notebook"
            )
            self[phase] = started[phase]
            return started[phase]

    yield Lazy()
    for entry in started.values():
        entry.kernel.shutdown()


def _prefix(phase: Phase, tag: str) -> list[dict[str, Any]]:
    call = {
        "first": None,
        "tool": ("echo", {"text": tag}),
        "approval": ("write_note", {"text": tag}),
        "shell": ("run_shell_command", {"cmd": f"echo {tag}"}),
        "shell-approval": ("run_shell_command", {"cmd": f"printf '%s\\n' {tag} >> {SHELL_RUNS}"}),
    }[phase]
    if call is None:
        return []
    name, args = call
    return [{"tool_calls": [{"name": name, "arguments": args}]}]


def _runs(
    phase: Phase, workspace: Path, tag: str, before: list[str], body: dict[str, Any]
) -> list[str]:
    """What the phase's tool did during the turn, to check it ran exactly once."""
    if phase == "shell":
        return [r for r in tool_results(body).values() if f"$ echo {tag}" in r]
    if phase == "shell-approval":
        runs = workspace / SHELL_RUNS
        return (
            [line for line in runs.read_text().splitlines() if line == tag] if runs.exists() else []
        )
    return calls(workspace)[len(before) :]


_ONE_RUN: dict[Phase, int] = {"first": 0, "tool": 1, "approval": 1, "shell": 1, "shell-approval": 1}


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_fault(
    phase: Phase, fault: Fault, server: ScriptedModelServer, phase_kernels: dict[Phase, PhaseKernel]
) -> None:
    pk = phase_kernels[phase]
    tag = f"{fault.name}-{uuid.uuid4().hex[:6]}"
    prefix = _prefix(phase, tag)
    server.reset([*prefix, *fault.steps])
    before = calls(pk.workspace)

    result = pk.kernel.execute(f"Please help with {tag}", mode=pk.mode, timeout=60)
    text = result.text()

    assert server.errors == [], server.errors
    assert "Traceback" not in text
    if fault.recovers:
        assert result.status == "ok", text
        assert ANSWER in text
    else:
        assert result.status == "error", text
        assert result.reply["content"]["ename"] == "CoError"
        assert ANSWER not in text
    for needle in fault.shows:
        assert needle in text, f"{needle!r} not shown in {text!r}"
    if pk.mode == "notebook":
        for needle in fault.status:
            assert needle in _status_lines(result), f"no status line with {needle!r}"
        assert _status_cleared(result), "the retry status line outlived the turn"
    requests = server.requests
    assert len(requests) == len(prefix) + fault.requests, "requests do not match the retry policy"
    for needle in fault.reaches_model:
        assert needle in serialised(requests[-1]), f"{needle!r} did not reach the model"

    if phase in HEADLESS_PHASES:
        assert "approved" in text

    body = follow_up(pk.kernel, server, pk.mode)
    history = serialised(body)
    # A tool that ran before the fault ran exactly once: retries continue from the
    # failed request instead of starting the turn again.
    assert len(_runs(phase, pk.workspace, tag, before, body)) == _ONE_RUN[phase]
    if phase != "first":
        assert tag in history, "the tool call that ran is kept in the conversation"
    if fault.recovers:
        assert ANSWER in history
    elif phase == "first" and not fault.model_replied:
        # Nothing came back, so the failed turn left no trace the model must explain.
        assert f"Please help with {tag}" not in history
    else:
        assert "[Co stopped this turn]" in history


def _status_ids(result: CellResult) -> set[str]:
    """Display ids the notebook frontend used for its transient status line."""
    ids = set()
    for m in result.of_type("display_data", "update_display_data"):
        did = m["content"].get("transient", {}).get("display_id")
        data = m["content"]["data"]
        if did and data.get("text/plain", "").endswith("…") and "<em>" in data.get("text/html", ""):
            ids.add(did)
    return ids


def _status_lines(result: CellResult) -> str:
    """Every text the status line showed during the turn."""
    ids = _status_ids(result)
    return "\n".join(
        m["content"]["data"].get("text/plain", "")
        for m in result.of_type("display_data", "update_display_data")
        if m["content"].get("transient", {}).get("display_id") in ids
    )


def _status_cleared(result: CellResult) -> bool:
    """The status line, if there was one, ends empty: replaced once the turn resumed or ended."""
    final = result.final_displays()
    return all(not final[did].get("text/plain") for did in _status_ids(result))
