"""What tracing costs a cell in a real kernel: two Co kernels, tracing on and off, one run.

The same turn as ``bench_tracing.py`` (a request that calls ``read_file`` and
``list_files``, the tools, an answer), sent as a cell over ZMQ to two kernel processes
that differ only in ``CO_TRACING``, each with its own scripted model server, workspace
and data directory. Cells alternate between the kernels (off-on, on-off, ...), each
kernel's conversation growing; a cell is timed from ``execute_request`` to the idle
status after it, as a notebook waits for it. Everything a kernel does is in: display
messages, the session store, and the writing of spans (on the kernel's own thread, a
moment after each turn, which here can overlap the other kernel's cell: two kernels share
the machine's cores).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_tracing_kernel.py [--cells 100]

Reports and always exits 0, like the other benchmarks.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import load_average, median, ms, print_table, verdict
from bench_tracing import STEPS

from co_kernel.testing import ScriptedModelServer
from tests.kernel_harness import CoKernel, ensure_kernelspec

WARM_UP = 8
"""Cells each kernel runs before measuring."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100, help="timed cells per kernel")
    args = parser.parse_args()
    ensure_kernelspec()
    load_before = load_average()
    times: dict[str, list[float]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory(prefix="co-bench-") as tmp:
        servers: dict[str, ScriptedModelServer] = {}
        kernels: dict[str, CoKernel] = {}
        try:
            for name, tracing in (("off", "false"), ("on", "true")):
                workspace, home = Path(tmp, f"ws-{name}"), Path(tmp, f"home-{name}")
                workspace.mkdir()
                home.mkdir()
                (workspace / "notes.txt").write_text("the quick brown fox\njumps over\n")
                server = servers[name] = ScriptedModelServer([]).start()
                server.reset([s for _ in range(args.cells + WARM_UP) for s in STEPS])
                env = {
                    "CO_HOME": str(home),
                    "CO_SANDBOX": "subprocess",
                    "CO_MODEL": "compat:scripted",
                    "CO_BASE_URL": server.base_url,
                    "CO_TRACING": tracing,
                }
                kernels[name] = CoKernel(env, workspace)
            for i in range(args.cells + WARM_UP):
                for name in ("off", "on") if i % 2 == 0 else ("on", "off"):
                    started = time.perf_counter()
                    result = kernels[name].execute(f"What is in my notes? ({i})")
                    took = time.perf_counter() - started
                    if result.status != "ok":
                        raise SystemExit(f"cell {i} failed in the {name} kernel: {result}")
                    if i >= WARM_UP:
                        times[name].append(took)
            for name, server in servers.items():
                if server.errors:
                    raise SystemExit(f"script mismatch ({name}): {server.errors[:3]}")
        finally:
            for kernel in kernels.values():
                kernel.shutdown()
            for server in servers.values():
                server.stop()
    on, off = times["on"], times["off"]
    base, traced = median(off), median(on)
    paired = median([a - b for a, b in zip(on, off, strict=True)])
    print(f"load average before: {load_before}; after: {load_average()}")
    print(f"{len(on)} cells per kernel after {WARM_UP} warm-up cells, alternating")
    print_table(
        "Tracing on versus off, real kernels (same run)",
        ["measure", "target", "tracing on", "baseline (off)", "difference", "verdict"],
        [
            [
                "time per cell (difference of medians)",
                "< +3 %",
                ms(traced),
                ms(base),
                f"{(traced - base) * 1000:+.2f} ms = {(traced - base) / base * 100:+.2f} %",
                verdict((traced - base) / base < 0.03),
            ],
            [
                "time per cell (median of paired differences)",
                "< +3 %",
                "",
                "",
                f"{paired * 1000:+.2f} ms = {paired / base * 100:+.2f} %",
                verdict(paired / base < 0.03),
            ],
        ],
    )


if __name__ == "__main__":
    main()
