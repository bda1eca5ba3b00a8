"""What tracing costs: a notebook conversation, turn by turn, tracing on versus off, in one run.

Each arm is a kernel session (``ChatSession``, what the kernel runs a cell with: every
toolset Co registers, the session store, the audit log, the conversation growing turn
after turn) against the scripted model server over real HTTP on 127.0.0.1. A turn is a
model request that calls two of Co's own tools (``read_file``, ``list_files``), the
tools, and a second request that answers. Only the Jupyter messages are left out (the
frontend records the events instead): they are the same with tracing on or off.

The arms differ only in the ``tracing`` setting. Their turns alternate one by one in
the order off-on, on-off, ... (``--block`` turns at a time), so drift in a busy machine
falls on both alike and each pair of turns is measured under the same conditions, at
the same length of conversation.

Two sessions in one process are not alike even when they are the same: run with tracing
off on both sides, their paired turns differed by 0.0, 1.6 and 2.9 ms (up to 2 %) in
three processes: by a different amount in each (where their objects land in memory,
which of them was created first). That is as large as what tracing costs, so the comparison is made in
``--rounds`` independent rounds, each a fresh Python process with its own two sessions,
the traced one created first in odd rounds and second in even ones. The verdict is on
the median of the rounds' results; each round and the pooled turns are shown too.

Printed: the load average before and after; for each round, the time per turn of the
baseline (tracing off) and the added time, as the median of the paired differences and
as the difference of the medians; then over all rounds: the added time per turn (target
< 3 %), also for the first and the last quarter of the conversation (a turn's cost must
not grow with the conversation); the CPU per turn of the thread that runs the turn, and
tracing's CPU in all: that plus the writing of the spans. Co writes a turn's spans on its
own thread as the turn ends, while the person reads the answer; here the next turn starts
at once, so after each traced turn the benchmark waits, untimed, until they are written,
and counts that work apart, from the export cost per span measured on the spans each
round produced (target < 1 ms). On a machine with more work than cores, wall time
stretches every CPU millisecond; the CPU rows are the steadier ones.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_tracing.py [--turns 200] [--rounds 3] [--block 1]

Reports and always exits 0, like the other benchmarks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import load_average, median, ms, print_table, verdict, with_repo_on_pythonpath
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from co_kernel.config import LoadedSettings, Settings
from co_kernel.replay import ScriptedModelServer
from co_kernel.telemetry import Redactor
from co_kernel.telemetry._exporter import SQLiteSpanExporter, TurnRegistry
from co_kernel.turn import RecordingFrontend
from co_kernel.turn._session import ChatSession

STEPS = [
    {
        "text": "Let me look at the files.",
        "tool_calls": [
            {"name": "read_file", "arguments": {"path": "notes.txt"}},
            {"name": "list_files", "arguments": {"glob": "*.txt"}},
        ],
        "usage": {"prompt_tokens": 420, "completion_tokens": 40},
    },
    {
        "text": "There are five words in three lines. " * 8,
        "usage": {"prompt_tokens": 520, "completion_tokens": 90},
    },
]

WARM_UP = 10
"""Turns each arm runs before measuring (imports, connections, caches); the conversation
starts from them."""


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
    """One side of the comparison: a kernel session with or without tracing."""

    def __init__(self, settings: Settings, workspace: Path) -> None:
        workspace.mkdir()
        (workspace / "notes.txt").write_text("the quick brown fox\njumps over\nthe lazy dog\n")
        self.session = ChatSession(LoadedSettings(settings), workspace=workspace, kernel_id="bench")
        self.times: list[float] = []
        self.cpu: list[float] = []

    async def turn(self, index: int) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        result = await self.session.run_prompt(
            f"What is in my notes? ({index})", cell_id=None, frontend=RecordingFrontend()
        )
        self.times.append(time.perf_counter() - started)
        # The CPU of the thread that runs the turn (the kernel's): steadier than wall time
        # on a busy machine, and free of the scripted server's work.
        self.cpu.append(time.thread_time() - cpu)
        if result is None or result.error:
            raise SystemExit(f"turn {index} failed: {result and result.error}")
        # The turn's spans are written as it ends, while a person reads; here the next turn
        # starts at once, so wait for them (untimed): the writing falls in no measured turn
        # of either arm, and is counted apart.
        self.session.telemetry.flush()


async def _run(
    turns: int, block: int, tmp: Path, traced_first: bool
) -> tuple[_Arm, _Arm, _Collect, TurnRegistry, Settings]:
    with ScriptedModelServer([]) as server:
        # Both arms' turns and their warm-up turns, two requests each.
        server.reset([step for _ in range(2 * (turns + block + WARM_UP)) for step in STEPS])
        base = {
            "model": "compat:scripted",
            "base_url": server.base_url,
            "api_key": "bench",
            "sandbox": "subprocess",
        }
        if traced_first:
            on = _Arm(Settings(**base, tracing=True), tmp / "on")
            off = _Arm(Settings(**base, tracing=False), tmp / "off")
        else:
            off = _Arm(Settings(**base, tracing=False), tmp / "off")
            on = _Arm(Settings(**base, tracing=True), tmp / "on")
        tracing = on.session.telemetry.tracing
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
        settings = on.session.settings
        on.session.close()
        off.session.close()
        if server.errors:
            raise SystemExit(f"script mismatch: {server.errors[:3]}")
    return on, off, captured, turns_registry, settings


def _export_cost(
    spans: list[Any], db: Path, redactor: Redactor, turns: TurnRegistry
) -> tuple[float, float]:
    """Seconds per span to redact, serialise and write, in batches of 64 as in the kernel:
    elapsed, and CPU of the exporting thread."""
    exporter = SQLiteSpanExporter(db, redactor, turns)
    started, cpu = time.perf_counter(), time.thread_time()
    for i in range(0, len(spans), 64):
        exporter.export(spans[i : i + 64])
    took, cpu = time.perf_counter() - started, time.thread_time() - cpu
    exporter.shutdown()
    count = max(len(spans), 1)
    return took / count, cpu / count


def _round(turns: int, block: int, traced_first: bool) -> dict[str, Any]:
    """One round, in this process: both arms' times per turn and the export cost."""
    with tempfile.TemporaryDirectory(prefix="co-bench-") as name:
        tmp = Path(name)
        # The sessions' store, audit log and spans go under the temporary directory.
        os.environ["CO_HOME"] = str(tmp / "home")
        on, off, captured, turns_registry, settings = asyncio.run(
            _run(turns, block, tmp, traced_first)
        )
        spans = captured.spans
        redactor = Redactor.from_settings(settings)
        per_span, cpu_per_span = _export_cost(spans, tmp / "export.db", redactor, turns_registry)
    return {
        "traced_first": traced_first,
        "on": on.times,
        "off": off.times,
        "on_cpu": on.cpu,
        "off_cpu": off.cpu,
        "spans_per_turn": len(spans) / max(len(on.times), 1),
        "per_span": per_span,
        "cpu_per_span": cpu_per_span,
    }


def _added(on: float, off: float) -> str:
    return f"{(on - off) * 1000:+.2f} ms = {(on - off) / off * 100:+.2f} %"


def _differences(on: list[float], off: list[float]) -> list[float]:
    """Differences of turns run side by side (same pair of the alternation)."""
    return [t_on - t_off for t_on, t_off in zip(on, off, strict=True)]


def _paired(on: list[float], off: list[float]) -> float:
    """Median of the differences of turns run side by side."""
    return median(_differences(on, off))


def _share(added: float, base: float) -> str:
    return f"{added * 1000:+.2f} ms = {added / base * 100:+.2f} %"


def _rounds(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each round in a fresh process, the traced arm created first in odd rounds."""
    rounds: list[dict[str, Any]] = []
    env = with_repo_on_pythonpath(os.environ)
    for number in range(1, args.rounds + 1):
        traced_first = number % 2 == 1
        command = [
            sys.executable,
            __file__,
            "--turns",
            str(args.turns),
            "--block",
            str(args.block),
            "--one-round",
            "traced-first" if traced_first else "traced-second",
        ]
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise SystemExit(f"round {number} failed:\n{done.stderr[-3000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rounds.append(result)
        base = median(result["off"])
        print(
            f"round {number}/{args.rounds}: "
            f"{_share(_paired(result['on'], result['off']), base)} per turn (paired)",
            flush=True,
        )
    return rounds


def _report(args: argparse.Namespace, rounds: list[dict[str, Any]], load_before: str) -> None:
    on = [t for r in rounds for t in r["on"]]
    off = [t for r in rounds for t in r["off"]]
    base, traced = median(off), median(on)
    pooled = median([d for r in rounds for d in _differences(r["on"], r["off"])])
    per_round = [_paired(r["on"], r["off"]) / median(r["off"]) for r in rounds]
    by_rounds = median(per_round)
    quarter = max(args.turns // 4, 1)
    first = [d for r in rounds for d in _differences(r["on"][:quarter], r["off"][:quarter])]
    last = [d for r in rounds for d in _differences(r["on"][-quarter:], r["off"][-quarter:])]
    base_first = median([t for r in rounds for t in r["off"][:quarter]])
    base_last = median([t for r in rounds for t in r["off"][-quarter:]])
    cpu_base = median([t for r in rounds for t in r["off_cpu"]])
    cpu_traced = median([t for r in rounds for t in r["on_cpu"]])
    cpu_paired = median([d for r in rounds for d in _differences(r["on_cpu"], r["off_cpu"])])
    spans_per_turn = median([r["spans_per_turn"] for r in rounds])
    cpu_per_span = median([r["cpu_per_span"] for r in rounds])
    per_span = median([r["per_span"] for r in rounds])
    export_per_turn = cpu_per_span * spans_per_turn
    cpu_all = cpu_paired + export_per_turn
    print(f"load average before: {load_before}; after: {load_average()}")
    print(
        f"{args.rounds} rounds, each a fresh process with two sessions; {args.turns} turns per "
        f"arm per round after {WARM_UP} warm-up turns, one conversation each, alternating "
        f"every {args.block} turn(s); {spans_per_turn:.1f} spans per traced turn "
        f"(turn, agent run, 2 model requests, 2 tool calls)"
    )
    print_table(
        "Each round",
        ["round", "traced session", "baseline (off)", "paired differences", "medians"],
        [
            [
                str(n),
                "created first" if r["traced_first"] else "created second",
                ms(median(r["off"])),
                _share(_paired(r["on"], r["off"]), median(r["off"])),
                _added(median(r["on"]), median(r["off"])),
            ]
            for n, r in enumerate(rounds, 1)
        ],
    )
    print_table(
        "Tracing on versus off (same runs)",
        ["measure", "target", "tracing on", "baseline (off)", "difference", "verdict"],
        [
            [
                "time per turn (median of the rounds' paired differences)",
                "< +3 %",
                "",
                "",
                f"{by_rounds * base * 1000:+.2f} ms = {by_rounds * 100:+.2f} %",
                verdict(by_rounds < 0.03),
            ],
            [
                "time per turn (paired differences, all rounds' turns)",
                "",
                "",
                ms(base),
                _share(pooled, base),
                "",
            ],
            [
                "time per turn (difference of medians, all rounds' turns)",
                "",
                ms(traced),
                ms(base),
                _added(traced, base),
                "",
            ],
            [
                f"  first {quarter} turns of each round (paired)",
                "",
                "",
                ms(base_first),
                _share(median(first), base_first),
                "",
            ],
            [
                f"  last {quarter} turns of each round (paired)",
                "",
                "",
                ms(base_last),
                _share(median(last), base_last),
                "",
            ],
            [
                "time per turn (mean)",
                "",
                ms(statistics.fmean(on)),
                ms(statistics.fmean(off)),
                _added(statistics.fmean(on), statistics.fmean(off)),
                "",
            ],
            [
                "kernel thread CPU per turn (difference of medians)",
                "",
                ms(cpu_traced),
                ms(cpu_base),
                _added(cpu_traced, cpu_base),
                "",
            ],
            [
                "kernel thread CPU per turn (paired differences)",
                "",
                "",
                "",
                _share(cpu_paired, cpu_base),
                "",
            ],
            [
                "  + writing the turn's spans (CPU, after the turn)",
                "",
                f"{export_per_turn * 1000:.2f} ms",
                "",
                f"{spans_per_turn:.1f} spans x {cpu_per_span * 1000:.3f} ms CPU per span",
                "",
            ],
            [
                "  = all of tracing's CPU per turn",
                "",
                "",
                ms(cpu_base),
                _share(cpu_all, cpu_base),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per arm and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each a fresh process")
    parser.add_argument("--block", type=int, default=1, help="turns per alternation")
    parser.add_argument(
        "--one-round",
        choices=["traced-first", "traced-second"],
        help="run one round here and print it as JSON (what each round's process does)",
    )
    args = parser.parse_args()
    if args.one_round:
        result = _round(args.turns, args.block, args.one_round == "traced-first")
        print(json.dumps(result))
        return
    load_before = load_average()
    _report(args, _rounds(args), load_before)


if __name__ == "__main__":
    main()
