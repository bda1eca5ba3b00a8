"""What tracing costs a cell in a real kernel: two Co kernels, tracing on and off, one run.

The same turn as ``bench_tracing.py`` (a request that calls ``read_file`` and
``list_files``, the tools, an answer), sent as a cell over ZMQ to two kernel processes
that differ only in ``CO_TRACING``, each with its own scripted model server, workspace
and data directory; each kernel's conversation grows cell after cell. A cell is timed
from ``execute_request`` to the idle status after it, as a notebook waits for it.
Everything a kernel does is in: display messages, the session store, its own garbage
collection (two sessions in one process share it: ``bench_tracing.py`` cannot tell
whose objects a collection was for), and the writing of spans.

A kernel writes a turn's spans on its own thread a moment after the turn ends, while the
person reads the answer; their cost per span has its own target, measured by
``bench_tracing.py``. Each round has two parts:

- alternating: the kernels take turns cell by cell (off, on, off, on, ...), with a pause
  after each cell (``READ``, untimed) in which the last turn's spans are written, as
  while a person reads: what tracing adds to a turn (target < 3 %);
- back to back: each kernel runs two cells in a row (off, off, on, on, ...), as in "Run
  All" with a model that answers at once; each kernel's second cell follows its own
  first at once, so the traced kernel writes the first cell's spans during the second.
  The second cells are compared: tracing's added time with that writing.

Two kernel processes differ a little even when alike, so the comparison is made in
``--rounds`` rounds, each with two fresh kernels, the traced one started first in odd
rounds; the verdict is on the median of the rounds' results.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_tracing_kernel.py [--cells 100] [--rounds 3]

Reports and always exits 0, like the other benchmarks.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import load_average, median, ms, print_table, verdict
from bench_tracing import STEPS, _paired, _share

from co_kernel.replay import ScriptedModelServer
from tests.support.kernel_harness import CoKernel, ensure_kernelspec

WARM_UP = 8
"""Cells each kernel runs before measuring."""

READ = 0.3
"""Seconds after each alternating cell: the kernel writes the turn's spans 0.1 s after it
ends (``TurnSpanProcessor``'s ``SETTLE``), so they are written within this pause and take
no core from the next cell of either kernel."""

ARMS = (("off", "false"), ("on", "true"))

Times = dict[str, list[float]]
"""Seconds per cell: ``off`` and ``on`` (alternating), ``off2`` and ``on2`` (each
kernel's second cell of two in a row)."""


def _round(cells: int, traced_first: bool) -> Times:
    """One round with two fresh kernels: both parts, ``cells`` timed cells each."""
    times: Times = {"off": [], "on": [], "off2": [], "on2": []}
    with tempfile.TemporaryDirectory(prefix="co-bench-") as tmp:
        servers: dict[str, ScriptedModelServer] = {}
        kernels: dict[str, CoKernel] = {}
        try:
            for name, tracing in ARMS[::-1] if traced_first else ARMS:
                workspace, home = Path(tmp, f"ws-{name}"), Path(tmp, f"home-{name}")
                workspace.mkdir()
                home.mkdir()
                (workspace / "notes.txt").write_text("the quick brown fox\njumps over\n")
                server = servers[name] = ScriptedModelServer([]).start()
                # Warm-up, alternating, back to back (two cells per pair).
                server.reset([s for _ in range(WARM_UP + 3 * cells) for s in STEPS])
                env = {
                    "CO_HOME": str(home),
                    "CO_SANDBOX": "subprocess",
                    "CO_MODEL": "compat:scripted",
                    "CO_BASE_URL": server.base_url,
                    "CO_TRACING": tracing,
                }
                kernels[name] = CoKernel(env, workspace)

            def cell(name: str, index: int) -> float:
                started = time.perf_counter()
                result = kernels[name].execute(f"What is in my notes? ({index})")
                took = time.perf_counter() - started
                if result.status != "ok":
                    raise SystemExit(f"cell {index} failed in the {name} kernel: {result}")
                return took

            for i in range(WARM_UP):
                for name, _ in ARMS:
                    cell(name, i)
            for i in range(cells):
                for name, _ in ARMS:
                    times[name].append(cell(name, i))
                    time.sleep(READ)
            for i in range(cells):
                for name, _ in ARMS:
                    cell(name, 2 * i)
                    times[f"{name}2"].append(cell(name, 2 * i + 1))
            for name, server in servers.items():
                if server.errors:
                    raise SystemExit(f"script mismatch ({name}): {server.errors[:3]}")
        finally:
            for kernel in kernels.values():
                kernel.shutdown()
            for server in servers.values():
                server.stop()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100, help="timed cells per kernel and part")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each with fresh kernels")
    args = parser.parse_args()
    if args.cells < 1 or args.rounds < 1:
        raise SystemExit("--cells and --rounds must be at least 1")
    ensure_kernelspec()
    load_before = load_average()
    rounds: list[Times] = []
    for number in range(1, args.rounds + 1):
        r = _round(args.cells, traced_first=number % 2 == 1)
        rounds.append(r)
        print(
            f"round {number}/{args.rounds}: "
            f"{_share(_paired(r['on'], r['off']), median(r['off']))} per cell (alternating, paired)",
            flush=True,
        )
    print(f"load average before: {load_before}; after: {load_average()}")
    print(
        f"{args.rounds} rounds, each with two fresh kernels; after {WARM_UP} warm-up cells, "
        f"{args.cells} cells per kernel alternating ({READ} s apart), then {args.cells} pairs "
        "of cells back to back"
    )
    print_table(
        "Each round (paired differences)",
        ["round", "traced kernel", "baseline (off)", "alternating", "second of two in a row"],
        [
            [
                number,
                "started first" if number % 2 == 1 else "started second",
                ms(median(r["off"])),
                _share(_paired(r["on"], r["off"]), median(r["off"])),
                _share(_paired(r["on2"], r["off2"]), median(r["off2"])),
            ]
            for number, r in enumerate(rounds, 1)
        ],
    )

    def pooled(key: str) -> list[float]:
        return [t for r in rounds for t in r[key]]

    # Each round's added time per cell, and as a share of its own baseline.
    added = median([_paired(r["on"], r["off"]) for r in rounds])
    share = median([_paired(r["on"], r["off"]) / median(r["off"]) for r in rounds])
    base, traced = median(pooled("off")), median(pooled("on"))
    base2 = median(pooled("off2"))
    print_table(
        "Tracing on versus off, real kernels (same runs)",
        ["measure", "target", "tracing on", "baseline (off)", "difference", "verdict"],
        [
            [
                "time per cell, alternating (median of the rounds' paired differences)",
                "< +3 %",
                "",
                "",
                f"{added * 1000:+.2f} ms = {share * 100:+.2f} %",
                verdict(share < 0.03),
            ],
            [
                "  the same, all rounds' cells (paired)",
                "",
                "",
                ms(base),
                _share(_paired(pooled("on"), pooled("off")), base),
                "",
            ],
            [
                "  the same, all rounds' cells (difference of medians)",
                "",
                ms(traced),
                ms(base),
                _share(traced - base, base),
                "",
            ],
            [
                "time per cell right after the kernel's previous cell (its spans written meanwhile)",
                "",
                ms(median(pooled("on2"))),
                ms(base2),
                _share(_paired(pooled("on2"), pooled("off2")), base2),
                "",
            ],
        ],
    )


if __name__ == "__main__":
    main()
