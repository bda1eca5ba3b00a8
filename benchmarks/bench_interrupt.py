"""Interrupt latency at each phase of a turn, beside interrupting plain Python in the same kernel.

Target: an interrupt during streaming, during a tool, during an approval wait
or during a backoff sleep stops the turn within a second. Measured from the moment the
harness sends the interrupt (SIGINT, like JupyterLab's Stop button) to the
execute_reply, in one real kernel talking to the scripted model server. The baseline is
the same kernel interrupting a `%%python` cell blocked in `time.sleep`: what IPython
itself takes to turn SIGINT into a reply.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_interrupt.py [--trials 5]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import median, ms, print_table, verdict

from co_kernel.replay import ScriptedModelServer
from tests.support.kernel_harness import CellResult, CoKernel, Mode
from tests.turn._fault_tools import calls
from tests.turn._faults import start_fault_kernel

TARGET_S = 1.0
SLOW = {"text": " ".join(f"word{i}" for i in range(600)), "tokens_per_second": 30}


def _shown(seen: list[dict[str, Any]], needle: str) -> bool:
    return any(needle in str(m["content"].get("data", {})) for m in seen)


def _trial(
    kernel: CoKernel,
    code: str,
    condition: Callable[[list[dict[str, Any]]], bool],
    mode: Mode = "notebook",
) -> float:
    seen: list[dict[str, Any]] = []
    result: CellResult = kernel.execute(
        code,
        mode=mode,
        timeout=120,
        interrupt_when=lambda: condition(seen),
        on_message=lambda _k, m: seen.append(m),
    )
    if not result.interrupt_sent or result.reply["content"].get("ename") != "KeyboardInterrupt":
        raise RuntimeError(f"{code[:40]!r} was not interrupted: {result.text()[:300]}")
    return result.replied_at - result.interrupted_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="co-bench-") as tmp, ScriptedModelServer([]) as server:
        kernel, workspace = start_fault_kernel(
            server,
            Path(tmp),
            approval_mode="approve",
            model_backoff_base=120,
            model_backoff_cap=120,
        )

        def ran(line: str) -> Callable[[list[dict[str, Any]]], bool]:
            before = len(calls(workspace))
            return lambda _seen: line in calls(workspace)[before:]

        def phase_streaming() -> float:
            server.reset([SLOW])
            return _trial(kernel, "Tell me a long story", lambda s: _shown(s, "word3"))

        def phase_tool() -> float:
            server.reset([{"tool_calls": [{"name": "wait", "arguments": {"seconds": 300}}]}])
            return _trial(kernel, "Wait for me", ran("wait 300"))

        def phase_approved_tool() -> float:
            server.reset(
                [{"tool_calls": [{"name": "approved_wait", "arguments": {"seconds": 300}}]}]
            )
            return _trial(kernel, "Approve a wait", ran("approved_wait 300"), mode="headless")

        def phase_approval_wait() -> float:
            # A notebook cell: the approval card waits for a click that never comes.
            server.reset([{"tool_calls": [{"name": "write_note", "arguments": {"text": "x"}}]}])
            return _trial(
                kernel, "Write a note", lambda s: any(m["msg_type"] == "comm_open" for m in s)
            )

        def phase_backoff() -> float:
            server.reset([{"fault": {"status": 503}}, {"text": "never sent"}])
            return _trial(kernel, "Try through an outage", lambda s: _shown(s, "in 120 s"))

        def baseline() -> float:
            return _trial(
                kernel,
                "%%python\nimport time\nprint('sleeping', flush=True)\ntime.sleep(300)",
                lambda s: any(m["msg_type"] == "stream" for m in s),
            )

        phases: dict[str, Callable[[], float]] = {
            "while streaming": phase_streaming,
            "during a tool": phase_tool,
            "during an approved tool": phase_approved_tool,
            "waiting for an approval": phase_approval_wait,
            "during a backoff sleep": phase_backoff,
        }
        try:
            times: dict[str, list[float]] = {name: [] for name in phases}
            base: list[float] = []
            for _ in range(args.trials):  # interleaved, so drift hits every phase alike
                base.append(baseline())
                for name, phase in phases.items():
                    times[name].append(phase())
        finally:
            kernel.shutdown()

    base_median = median(base)
    rows: list[list[object]] = [
        ["baseline: %%python time.sleep", "-", ms(base_median), ms(max(base)), "-", "-"]
    ]
    for name, values in times.items():
        rows.append(
            [
                name,
                f"< {TARGET_S:.0f} s",
                ms(median(values)),
                ms(max(values)),
                f"{median(values) / base_median:.2f}x",
                verdict(max(values) < TARGET_S),
            ]
        )
    print_table(
        f"Interrupt to execute_reply ({args.trials} trials per phase)",
        ["phase", "target", "median", "max", "vs baseline", "verdict"],
        rows,
    )


if __name__ == "__main__":
    main()
