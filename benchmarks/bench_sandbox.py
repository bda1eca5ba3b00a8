"""`!true` through Co versus a bare docker SDK exec on the same container, same run.

Targets: a warm `!true` round trip (execute_request to execute_reply) adds
under 15 ms at the median to a bare `exec_run("true")` on the same container; the
first command including container creation takes under 1.5 s with the image present.
After each bind-mode command Co looks for what it left (set-id bits, FIFOs, links leading
outside, git repositories: `co_kernel/sandbox/_hazards.py`) in the folders inotify saw
change: in a workspace of `--files` files (10 000) the warm `!true` takes under 30 ms more
than in an empty one. The walk over the whole workspace, which replaces that look when the
watch lost track (a folder moved) or there is none, is timed beside it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _common import median, ms, print_table, verdict

from co_kernel.sandbox._hazards import survey
from tests.support.kernel_harness import CoKernel

IMAGE = os.environ.get("CO_TEST_SANDBOX_IMAGE", "co-sandbox-test:bookworm")


def _container_for(client, workspace: Path):
    for c in client.containers.list(filters={"label": ["co.kernel=1"]}):
        if any(m.get("Source") == str(workspace) for m in c.attrs.get("Mounts", [])):
            return c
    raise RuntimeError("the kernel's container was not found")


def main() -> None:
    import docker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--cold", type=int, default=5, help="kernels started for the first-command figure"
    )
    parser.add_argument(
        "--files", type=int, default=10_000, help="files in the workspace of the scan figure"
    )
    args = parser.parse_args()
    client = docker.from_env()
    client.images.get(IMAGE)  # fails loudly when the image is missing

    cold: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.chmod(root, 0o777)
        env = {"CO_HOME": str(root / "home"), "CO_SANDBOX": "docker", "CO_SANDBOX_IMAGE": IMAGE}
        for i in range(args.cold):
            ws = root / f"cold{i}"
            ws.mkdir()
            os.chmod(ws, 0o777)
            kernel = CoKernel(env, ws)
            kernel.execute("%help")  # the kernel's own warm-up is not the sandbox's cost
            result = kernel.execute("!true")
            cold.append(result.replied_at - result.sent_at)
            kernel.shutdown()

        ws = root / "warm"
        ws.mkdir()
        os.chmod(ws, 0o777)
        big = root / "big"
        for i in range(args.files):
            folder = big / f"d{i // 100}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{i}.txt").write_text("x")
        for top, _, _ in os.walk(big):
            os.chmod(top, 0o777)
        kernel = CoKernel(env, ws)
        kernel.execute("!true")
        kernel_big = CoKernel(env, big)
        kernel_big.execute("!true")
        container = _container_for(client, ws)
        co_times: list[float] = []
        big_times: list[float] = []
        bare_times: list[float] = []
        scan_times: list[float] = []
        for _ in range(args.runs):  # interleaved so load drifts hit all alike
            result = kernel.execute("!true")
            co_times.append(result.replied_at - result.sent_at)
            result = kernel_big.execute("!true")
            big_times.append(result.replied_at - result.sent_at)
            started = time.perf_counter()
            container.exec_run("true")
            bare_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            survey(str(big.resolve()), since_ns=time.time_ns())
            scan_times.append(time.perf_counter() - started)
        kernel.shutdown()
        kernel_big.shutdown()
    client.close()

    co_med, bare_med, cold_med = median(co_times), median(bare_times), median(cold)
    big_med, scan_med = median(big_times), median(scan_times)
    added = co_med - bare_med
    print_table(
        f"Sandbox round trips ({args.runs} warm runs, {args.cold} cold starts, image {IMAGE})",
        ["measure", "target", "Co", "baseline", "difference", "verdict"],
        [
            ["warm !true", "< +15 ms", ms(co_med), ms(bare_med), ms(added), verdict(added < 0.015)],
            [
                f"warm !true, {args.files} files (vs empty)",
                "< +30 ms",
                ms(big_med),
                ms(co_med),
                ms(big_med - co_med),
                verdict(big_med - co_med < 0.030),
            ],
            [f"full walk (no watch), {args.files} files", "-", ms(scan_med), "-", "-", "-"],
            [
                "first command incl. container",
                "< 1.5 s",
                ms(cold_med),
                "-",
                "-",
                verdict(cold_med < 1.5),
            ],
        ],
    )


if __name__ == "__main__":
    main()
