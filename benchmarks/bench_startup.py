"""Kernel start to first kernel_info_reply: Co beside a stock ``python3`` ipykernel.

Both kernelspecs come from the same environment and start the same way, alternating:
``KernelManager.start_kernel``, a client, one ``kernel_info`` request sent at once (ZMQ
queues it until the kernel listens) and the clock stops when its reply arrives; then
``wait_for_ready`` confirms the kernel (untimed) and it is shut down.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_startup.py [--starts 7]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import kernel_env, median, ms, print_table, verdict
from jupyter_client.manager import KernelManager

from tests.kernel_harness import ensure_kernelspec

KERNELS = ("python3", "co")


def time_start(name: str, env: dict[str, str], cwd: Path) -> float:
    """Seconds from start_kernel to the first kernel_info_reply."""
    km = KernelManager(kernel_name=name)
    start = time.monotonic()
    km.start_kernel(env=env, cwd=str(cwd))
    kc = km.client()
    kc.start_channels()
    try:
        msg_id = kc.kernel_info()
        while True:
            reply = kc.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        elapsed = time.monotonic() - start
        if reply["msg_type"] != "kernel_info_reply":
            raise RuntimeError(f"{name}: expected kernel_info_reply, got {reply['msg_type']}")
        kc.wait_for_ready(timeout=60)
        return elapsed
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=7, help="timed starts of each kernel")
    args = parser.parse_args()
    ensure_kernelspec()

    times: dict[str, list[float]] = {name: [] for name in KERNELS}
    with tempfile.TemporaryDirectory(prefix="co-bench-") as tmp:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        home.mkdir()
        work.mkdir()
        # Co's model is never called here; the variables only make its settings realistic.
        env = kernel_env(home, "http://127.0.0.1:9/v1")
        for name in KERNELS:  # untimed: fill the OS file cache for both
            time_start(name, env, work)
        for n in range(args.starts):
            # Alternate who goes first so drift on a noisy machine hits both alike.
            order = KERNELS if n % 2 == 0 else KERNELS[::-1]
            for name in order:
                times[name].append(time_start(name, env, work))

    co, stock = median(times["co"]), median(times["python3"])
    print_table(
        f"3. Kernel start to first kernel_info_reply ({args.starts} alternating starts each)",
        [
            "target",
            "Co median",
            "python3 median",
            "ratio",
            "Co min..max",
            "python3 min..max",
            "verdict",
        ],
        [
            [
                "<= 1.5x",
                ms(co),
                ms(stock),
                f"{co / stock:.2f}x",
                f"{ms(min(times['co']))}..{ms(max(times['co']))}",
                f"{ms(min(times['python3']))}..{ms(max(times['python3']))}",
                verdict(co <= 1.5 * stock),
            ]
        ],
    )
    for name in KERNELS:
        print(f"{name} samples (ms):", " ".join(f"{t * 1000:.0f}" for t in times[name]))


if __name__ == "__main__":
    main()
