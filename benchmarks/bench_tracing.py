"""What tracing costs: scripted turns with tool calls, tracing on versus off, in one run.

Each turn is what a kernel runs for a cell (``SessionTelemetry.turn`` around
``run_turn``): a model request that calls two tools, the tools, and a second request
that answers, against the scripted model server over real HTTP on 127.0.0.1. The two
arms differ only in the ``tracing`` setting; each has its own audit log. Their turns
alternate one by one in the order off-on, on-off, off-on, ... (``--block`` turns at a
time), so drift in a busy machine (another program's burst, a slower core) falls on
both alike, and each turn's pair is measured under the same conditions. Every turn
starts from an empty history, so turns stay comparable.

Printed: the load average before and after; the time per turn of each arm (the
baseline is tracing off) and the added time, as the difference of the medians and as
the median of the paired differences (target < 3 %); the CPU per turn of the whole
process (every thread: the batch exporter's too); and the export cost per span,
measured on the spans the run produced (target < 1 ms). On a machine with more work
than cores, wall time stretches every CPU millisecond; the CPU row is the steadier one.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_tracing.py [--turns 200] [--block 1]

Reports and always exits 0, like the other benchmarks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _common import median, ms, print_table, verdict
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from pydantic_ai.toolsets import FunctionToolset

from co_kernel.config import Settings
from co_kernel.frontend import RecordingFrontend
from co_kernel.telemetry import Redactor, SessionTelemetry
from co_kernel.telemetry._exporter import SQLiteSpanExporter, TurnRegistry
from co_kernel.testing import ScriptedModelServer
from co_kernel.turn import CoDeps, run_turn
from co_kernel.turn._agent import build_agent
from co_kernel.turn._providers import build_model

STEPS = [
    {
        "text": "Let me count the words and the lines.",
        "tool_calls": [
            {"name": "count_words", "arguments": {"text": "the quick brown fox jumps"}},
            {"name": "count_lines", "arguments": {"text": "a\nb\nc"}},
        ],
        "usage": {"prompt_tokens": 420, "completion_tokens": 40},
    },
    {
        "text": "There are five words in three lines. " * 8,
        "usage": {"prompt_tokens": 520, "completion_tokens": 90},
    },
]


def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def count_lines(text: str) -> int:
    """Count the lines of a text."""
    return len(text.splitlines())


WARM_UP = 10
"""Turns each arm runs before measuring (imports, connections, caches)."""


class _Collect(SpanProcessor):
    """Keeps the finished spans for the export measurement: one list append per span.

    (An exporting processor here, even an in-memory one, would add its work to the
    traced turns and count it as tracing's.)
    """

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


class _Arm:
    """One side of the comparison: a session's agent with or without tracing."""

    def __init__(self, settings: Settings, workspace: Path, db: Path) -> None:
        self.settings = settings
        self.deps = CoDeps(
            settings=settings, session_id=uuid.uuid4().hex, kernel_id="bench", workspace=workspace
        )
        self.telemetry = SessionTelemetry(settings, kernel_id="bench", db_path=db)
        self.handle = build_model(settings, settings.model, base_dir=workspace)
        toolset: FunctionToolset[Any] = FunctionToolset([count_words, count_lines])
        self.agent = build_agent(
            self.handle.model, settings, [toolset], capabilities=self.telemetry.capabilities()
        )
        self.deps.audit = self.telemetry.audit_log()
        self.times: list[float] = []
        self.cpu: list[float] = []

    async def turn(self, index: int) -> None:
        started, cpu = time.perf_counter(), time.process_time()
        self.deps.turn_index = index
        prompt = f"Count the words, please ({index})."
        with self.telemetry.turn(
            session_id=self.deps.session_id, turn=index, model=self.handle.label, prompt=prompt
        ) as span:
            result = await run_turn(
                self.agent,
                prompt,
                deps=self.deps,
                history=[],
                frontend=RecordingFrontend(),
                provider=self.handle.provider,
                model_label=self.handle.label,
            )
            span.finish(result)
        self.times.append(time.perf_counter() - started)
        # Process CPU time counts every thread (the exporter's too) and is less swayed by
        # other programs on a busy machine than wall time.
        self.cpu.append(time.process_time() - cpu)
        if result.error:
            raise SystemExit(f"turn {index} failed: {result.error}")


async def _run(turns: int, block: int, tmp: Path) -> tuple[_Arm, _Arm, _Collect, TurnRegistry]:
    with ScriptedModelServer([]) as server:
        # Both arms' turns and their warm-up turns, two requests each.
        server.reset([step for _ in range(2 * (turns + block + WARM_UP)) for step in STEPS])
        base = {"model": "compat:scripted", "base_url": server.base_url, "api_key": "bench"}
        on = _Arm(Settings(**base, tracing=True), tmp, tmp / "on.db")
        off = _Arm(Settings(**base, tracing=False), tmp, tmp / "off.db")
        tracing = on.telemetry.tracing
        assert tracing is not None
        captured = _Collect()
        tracing.provider.add_span_processor(captured)
        for arm in (on, off):
            for i in range(WARM_UP):
                await arm.turn(-i - 1)
            arm.times.clear()
            arm.cpu.clear()
        captured.spans.clear()
        index = 0
        while index < turns:
            for arm in (off, on) if (index // block) % 2 == 0 else (on, off):
                for i in range(block):
                    await arm.turn(index + i)
            index += block
        turns_registry = tracing.turns
        on.telemetry.close()
        off.telemetry.close()
        if server.errors:
            raise SystemExit(f"script mismatch: {server.errors[:3]}")
    return on, off, captured, turns_registry


def _export_cost(spans: list[Any], db: Path, redactor: Redactor, turns: TurnRegistry) -> float:
    """Seconds per span to redact, serialise and write, in batches of 64 as in the kernel."""
    exporter = SQLiteSpanExporter(db, redactor, turns)
    started = time.perf_counter()
    for i in range(0, len(spans), 64):
        exporter.export(spans[i : i + 64])
    took = time.perf_counter() - started
    exporter.shutdown()
    return took / max(len(spans), 1)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def _added(on: float, off: float) -> str:
    return f"{(on - off) * 1000:+.2f} ms = {(on - off) / off * 100:+.2f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per arm")
    parser.add_argument("--block", type=int, default=1, help="turns per alternation")
    args = parser.parse_args()
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="co-bench-") as name:
        tmp = Path(name)
        on, off, captured, turns = asyncio.run(_run(args.turns, args.block, tmp))
        spans = captured.spans
        redactor = Redactor.from_settings(on.settings)
        per_span = _export_cost(spans, tmp / "export.db", redactor, turns)
    base, traced = median(off.times), median(on.times)
    # Turn i of each arm ran side by side (same pair of the alternation).
    paired = median([t_on - t_off for t_on, t_off in zip(on.times, off.times, strict=True)])
    cpu_base, cpu_traced = median(off.cpu), median(on.cpu)
    cpu_paired = median([c_on - c_off for c_on, c_off in zip(on.cpu, off.cpu, strict=True)])
    mean_base, mean_traced = statistics.fmean(off.times), statistics.fmean(on.times)
    print(f"load average before: {load_before}; after: {_load()}")
    print(
        f"{len(on.times)} turns per arm, alternating every {args.block} turn(s); "
        f"{len(spans) / max(len(on.times), 1):.1f} spans per traced turn "
        f"(turn, agent run, 2 model requests, 2 tool calls)"
    )
    print_table(
        "Tracing on versus off (same run)",
        ["measure", "target", "tracing on", "baseline (off)", "difference", "verdict"],
        [
            [
                "time per turn (difference of medians)",
                "< +3 %",
                ms(traced),
                ms(base),
                _added(traced, base),
                verdict((traced - base) / base < 0.03),
            ],
            [
                "time per turn (median of paired differences)",
                "< +3 %",
                "",
                "",
                f"{paired * 1000:+.2f} ms = {paired / base * 100:+.2f} %",
                verdict(paired / base < 0.03),
            ],
            [
                "time per turn (mean)",
                "",
                ms(mean_traced),
                ms(mean_base),
                _added(mean_traced, mean_base),
                "",
            ],
            [
                "CPU per turn (all threads, difference of medians)",
                "",
                ms(cpu_traced),
                ms(cpu_base),
                _added(cpu_traced, cpu_base),
                "",
            ],
            [
                "CPU per turn (median of paired differences)",
                "",
                "",
                "",
                f"{cpu_paired * 1000:+.2f} ms = {cpu_paired / cpu_base * 100:+.2f} %",
                "",
            ],
            [
                "export per span",
                "< 1 ms",
                f"{per_span * 1000:.3f} ms",
                "-",
                "redact + JSON + SQLite, batches of 64",
                verdict(per_span < 0.001),
            ],
        ],
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
