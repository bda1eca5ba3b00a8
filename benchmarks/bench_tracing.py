"""What tracing costs: scripted turns with tool calls, tracing on versus off, in one run.

Each turn is what a kernel runs for a cell (``SessionTelemetry.turn`` around
``run_turn``): a model request that calls two tools, the tools, and a second request
that answers, against the scripted model server over real HTTP on 127.0.0.1. Blocks of
turns alternate between an agent with tracing and one without, so drift in the machine
affects both alike. Every turn starts from an empty history, so turns stay comparable.

Printed: the time per turn of each (the baseline is tracing off), the added time per
turn in ms and percent (target < 3 %), and the export cost per span measured on the
spans the run produced (target < 1 ms).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_tracing.py [--turns 200] [--block 20]

Reports and always exits 0, like the other benchmarks.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _common import median, ms, print_table, verdict
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai.toolsets import FunctionToolset

from co_kernel.config import Settings
from co_kernel.frontend import RecordingFrontend
from co_kernel.telemetry import Redactor, SessionTelemetry
from co_kernel.telemetry._exporter import SQLiteSpanExporter
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


async def _run(turns: int, block: int, tmp: Path) -> tuple[_Arm, _Arm, InMemorySpanExporter]:
    with ScriptedModelServer([]) as server:
        # Both arms' turns and their warm-up turns, two requests each.
        server.reset([step for _ in range(2 * turns + 2 * block) for step in STEPS])
        base = {"model": "compat:scripted", "base_url": server.base_url, "api_key": "bench"}
        # Same audit log in both arms: only tracing differs.
        on = _Arm(Settings(**base, tracing=True), tmp, tmp / "on.db")
        off = _Arm(Settings(**base, tracing=False), tmp, tmp / "off.db")
        tracing = on.telemetry.tracing
        assert tracing is not None
        captured = InMemorySpanExporter()
        tracing.provider.add_span_processor(SimpleSpanProcessor(captured))
        # Warm both (imports, connections) before measuring.
        for arm in (on, off):
            for i in range(block // 2 or 1):
                await arm.turn(-i - 1)
            arm.times.clear()
            arm.cpu.clear()
        captured.clear()
        index = 0
        while index < turns:
            for arm in (off, on) if (index // block) % 2 == 0 else (on, off):
                for i in range(block):
                    await arm.turn(index + i)
            index += block
        on.telemetry.close()
        off.telemetry.close()
        if server.errors:
            raise SystemExit(f"script mismatch: {server.errors[:3]}")
    return on, off, captured


def _export_cost(spans: list[Any], db: Path, redactor: Redactor) -> float:
    """Seconds per span to redact, serialise and write, in batches of 64 as in the kernel."""
    exporter = SQLiteSpanExporter(db, redactor)
    started = time.perf_counter()
    for i in range(0, len(spans), 64):
        exporter.export(spans[i : i + 64])
    took = time.perf_counter() - started
    exporter.shutdown()
    return took / max(len(spans), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per arm")
    parser.add_argument("--block", type=int, default=20, help="turns per alternating block")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="co-bench-") as name:
        tmp = Path(name)
        on, off, captured = asyncio.run(_run(args.turns, args.block, tmp))
        spans = list(captured.get_finished_spans())
        redactor = Redactor.from_settings(on.settings)
        per_span = _export_cost(spans, tmp / "export.db", redactor)
    base, traced = median(off.times), median(on.times)
    added = traced - base
    mean_base, mean_traced = statistics.fmean(off.times), statistics.fmean(on.times)
    print(
        f"{len(on.times)} turns per arm in alternating blocks of {args.block}; "
        f"{len(spans) / max(len(on.times), 1):.1f} spans per traced turn "
        f"(turn, agent run, 2 model requests, 2 tool calls)"
    )
    print_table(
        "Tracing on versus off (same run)",
        ["measure", "target", "tracing on", "baseline (off)", "difference", "verdict"],
        [
            [
                "time per turn (median)",
                "< +3 %",
                ms(traced),
                ms(base),
                f"{added * 1000:+.2f} ms = {added / base * 100:+.2f} %",
                verdict(added / base < 0.03),
            ],
            [
                "time per turn (mean)",
                "",
                ms(mean_traced),
                ms(mean_base),
                f"{(mean_traced - mean_base) / mean_base * 100:+.2f} %",
                "",
            ],
            [
                "CPU per turn (median, all threads)",
                "",
                ms(median(on.cpu)),
                ms(median(off.cpu)),
                f"{(median(on.cpu) - median(off.cpu)) * 1000:+.2f} ms = "
                f"{(median(on.cpu) - median(off.cpu)) / median(off.cpu) * 100:+.2f} %",
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
