"""Soak: 200 turns of random faults (seeded) in one kernel.

Every turn is answered, nothing shows a traceback, no request ever carries a tool call
without its result, and the kernel is alive at the end. The kernel's resident memory
before and after is printed (``pytest -s``); it includes the growing conversation, which
nothing compacts here.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CellResult, CoKernel, Mode
from ._faults import dangling_tool_calls, kernel_pid, start_fault_kernel, vm_rss_kib

TURNS = 200
SEED = 6
WARM_UP = 10

Scenario = tuple[list[dict[str, Any]], Mode, str, bool]
"""Steps, frontend mode, expected reply status ("ok", "error" or "interrupted"), interrupt on text."""


def _scenarios(tag: str) -> list[tuple[int, Callable[[], Scenario]]]:
    answer = {"text": f"Answer {tag}."}
    echo = {"tool_calls": [{"name": "echo", "arguments": {"text": tag}}]}
    note = {"tool_calls": [{"name": "write_note", "arguments": {"text": tag}}]}

    def fault(f: dict[str, Any]) -> dict[str, Any]:
        return {"fault": f}

    return [
        (20, lambda: ([answer], "notebook", "ok", False)),
        (10, lambda: ([echo, answer], "notebook", "ok", False)),
        (8, lambda: ([note, answer], "headless", "ok", False)),
        (
            6,
            lambda: (
                [fault({"status": 429, "headers": {"Retry-After": "0"}}), answer],
                "notebook",
                "ok",
                False,
            ),
        ),
        (6, lambda: ([echo, fault({"status": 500}), answer], "notebook", "ok", False)),
        (5, lambda: ([fault({"kind": "reset"}), answer], "console", "ok", False)),
        (
            5,
            lambda: (
                [{"text": "partial words", "fault": {"kind": "drop", "after_chunks": 3}}, answer],
                "notebook",
                "ok",
                False,
            ),
        ),
        (
            4,
            lambda: (
                [note, {"text": "bad", "fault": {"kind": "malformed", "after_chunks": 2}}, answer],
                "headless",
                "ok",
                False,
            ),
        ),
        (4, lambda: ([fault({"status": 400, "body": "fix it"}), answer], "notebook", "ok", False)),
        (
            4,
            lambda: (
                [{"tool_calls": [{"name": "echo", "arguments": "{not json"}]}, answer],
                "notebook",
                "ok",
                False,
            ),
        ),
        (
            4,
            lambda: (
                [{"tool_calls": [{"name": "nope", "arguments": {}}]}, answer],
                "notebook",
                "ok",
                False,
            ),
        ),
        (
            3,
            lambda: (
                [
                    {
                        "tool_calls": [
                            {"name": "fail", "arguments": {"kind": "crash", "message": "x"}}
                        ]
                    },
                    answer,
                ],
                "notebook",
                "ok",
                False,
            ),
        ),
        (3, lambda: ([echo, {**fault({"status": 503}), "repeat": 3}], "notebook", "error", False)),
        (3, lambda: ([fault({"status": 401})], "notebook", "error", False)),
        (
            2,
            lambda: (
                [
                    {"text": "slow", "fault": {"kind": "stall", "seconds": 3, "after_chunks": 1}},
                    answer,
                ],
                "notebook",
                "ok",
                False,
            ),
        ),
        (
            4,
            lambda: (
                [echo, {"text": " ".join(["long"] * 400), "tokens_per_second": 40}],
                "notebook",
                "interrupted",
                True,
            ),
        ),
    ]


def _pick(rng: random.Random, tag: str) -> Scenario:
    options = _scenarios(tag)
    weights = [w for w, _ in options]
    return rng.choices([make for _, make in options], weights)[0]()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_200_turns_of_random_faults(tmp_path_factory: pytest.TempPathFactory) -> None:
    rng = random.Random(SEED)
    with ScriptedModelServer([]) as server:
        kernel, _ = start_fault_kernel(
            server,
            tmp_path_factory.mktemp("soak"),
            approval_mode="approve",
            request_timeout=1.5,
            model_backoff_base=0.01,
            model_backoff_cap=0.05,
        )
        try:
            _soak(kernel, server, rng)
        finally:
            kernel.shutdown()


def _execute(kernel: CoKernel, prompt: str, mode: Mode, interrupt: bool) -> CellResult:
    """Run a cell; with ``interrupt``, stop it once the long answer is streaming."""
    seen: list[str] = []
    return kernel.execute(
        prompt,
        mode=mode,
        timeout=60,
        interrupt_when=(lambda: any("long long" in s for s in seen)) if interrupt else None,
        on_message=lambda _k, m: seen.append(str(m["content"].get("data", ""))),
    )


def _soak(kernel: CoKernel, server: ScriptedModelServer, rng: random.Random) -> None:
    pid = kernel_pid(kernel)
    outcomes: dict[str, int] = {}
    rss_start = 0
    for turn in range(TURNS):
        if turn == WARM_UP:
            rss_start = vm_rss_kib(pid)
        tag = f"t{turn}"
        steps, mode, expected, interrupt = _pick(rng, tag)
        server.reset(steps)
        result = _execute(kernel, f"Turn {tag}", mode, interrupt)
        status = result.status
        if status == "error" and result.reply["content"]["ename"] == "KeyboardInterrupt":
            status = "interrupted"
        where = f"turn {turn} ({steps!r:.200}): {result.text()[-300:]!r}"
        assert status == expected, where
        assert "Traceback" not in result.text(), where
        assert server.errors == [], where
        for body in server.requests:
            assert dangling_tool_calls(body) == [], where
        outcomes[expected] = outcomes.get(expected, 0) + 1

    server.reset([{"text": "Still here."}])
    final = kernel.execute("Are you still there?")
    assert final.status == "ok" and "Still here." in final.text()
    assert kernel.is_alive()
    rss_end = vm_rss_kib(pid)
    messages = len(server.requests[0]["messages"])
    print(
        f"\nsoak: {TURNS} turns {outcomes}; kernel RSS after {WARM_UP} turns {rss_start / 1024:.1f} MiB, "
        f"after {TURNS}: {rss_end / 1024:.1f} MiB (+{(rss_end - rss_start) / 1024:.1f} MiB, "
        f"{(rss_end - rss_start) / (TURNS - WARM_UP):.0f} KiB/turn); history sent: {messages} messages"
    )
