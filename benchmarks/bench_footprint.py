"""Memory to plan a JupyterHub host with: a Co kernel's RSS at start and after 100 turns,
beside a plain IPython kernel's after 100 cells, and a sandbox container's memory.

The Co kernel is a fresh interpreter (not forked from a warm parent), its model the
scripted server on 127.0.0.1 answering each turn with about 2,000 characters of Markdown;
its RSS (the kernel process and any children) is read from /proc after it starts, after
its first turn and after its last. The baseline is ipykernel's own ``python3`` kernel in
the same run, after start and after as many small cells. Then a Co kernel runs one ``!``
cell in the Docker sandbox, with the workspace bind-mounted and copied
(``sandbox_workspace``), and ``docker stats --no-stream`` gives each container's memory.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_footprint.py [--turns 100]
     [--image co-sandbox-test:bookworm] [--no-sandbox]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import kernel_env, load_average, markdown_answer, print_table
from jupyter_client import KernelManager

from co_kernel.replay import ScriptedModelServer
from tests.support.kernel_harness import CoKernel, ensure_kernelspec


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants, in MB."""
    total_kb = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except OSError:
            continue
        todo += _children(p)
    return total_kb / 1024


def co_kernel_figures(turns: int, tmp: Path) -> list[float]:
    """Co's RSS after start, after turn 1 and after the last turn."""
    home, workspace = tmp / "home", tmp / "workspace"
    home.mkdir()
    workspace.mkdir()
    steps = [{"text": markdown_answer(2000, seed=i)} for i in range(turns)]
    with ScriptedModelServer(steps) as server:
        env = kernel_env(home, server.base_url) | {"CO_SANDBOX": "subprocess"}
        kernel = CoKernel(env, workspace, fork=False)
        try:
            pid = kernel.km.provisioner.pid
            figures = [rss_mb(pid)]
            for i in range(turns):
                result = kernel.execute(f"question {i}: tell me about the notebook", timeout=120)
                if result.status != "ok":
                    raise RuntimeError(f"turn {i} failed: {result.text()}")
                if i in (0, turns - 1):
                    figures.append(rss_mb(pid))
        finally:
            kernel.shutdown()
        if server.errors:
            raise RuntimeError(f"script errors: {server.errors}")
    return figures


def ipython_figures(cells: int) -> list[float]:
    """A plain IPython kernel's RSS after start, after cell 1 and after the last cell."""
    ipc = tempfile.mkdtemp(prefix="co-bench-ipc-")
    km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(ipc, "kernel"))
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        pid = km.provisioner.pid
        figures = [rss_mb(pid)]
        for i in range(cells):
            kc.execute_interactive(f"answer_{i % 10} = 'x' * 2000", timeout=60)
            if i in (0, cells - 1):
                figures.append(rss_mb(pid))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        shutil.rmtree(ipc, ignore_errors=True)
    return figures


def sandbox_memory(image: str, mode: str, tmp: Path) -> str:
    """``docker stats`` memory of the container of a Co kernel that ran one ``!`` cell."""
    home, workspace = tmp / f"home-{mode}", tmp / f"workspace-{mode}"
    home.mkdir()
    workspace.mkdir()
    if os.getuid() == 0:
        os.chown(workspace, 1000, 1000)
    (workspace / "data.txt").write_text("x" * 100_000)
    with ScriptedModelServer([]) as server:
        env = kernel_env(home, server.base_url) | {
            "CO_SANDBOX": "docker",
            "CO_SANDBOX_IMAGE": image,
            "CO_SANDBOX_WORKSPACE": mode,
        }
        kernel = CoKernel(env, workspace, fork=False)
        try:
            result = kernel.execute(
                "!python3 -c 'print(len(open(\"data.txt\").read()))'", timeout=300
            )
            if "100000" not in result.stdout:
                raise RuntimeError(f"the ! cell failed: {result.text()}")
            pid = kernel.km.provisioner.pid
            ids = subprocess.run(
                ["docker", "ps", "-q", "--filter", f"label=co.pid={pid}"],
                capture_output=True, text=True, check=True,
            ).stdout.split()  # fmt: skip
            if len(ids) != 1:
                raise RuntimeError(f"expected one sandbox container of pid {pid}, found {ids}")
            return subprocess.run(
                ["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", ids[0]],
                capture_output=True, text=True, check=True,
            ).stdout.strip()  # fmt: skip
        finally:
            kernel.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100, help="scripted turns (and cells)")
    parser.add_argument(
        "--image", default=os.environ.get("CO_TEST_SANDBOX_IMAGE", "co-sandbox-test:bookworm")
    )
    parser.add_argument("--no-sandbox", action="store_true", help="skip the Docker figures")
    args = parser.parse_args()
    ensure_kernelspec()
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        co = co_kernel_figures(args.turns, Path(tmp))
        base = ipython_figures(args.turns)
        rows = [
            [moment, f"{c:.0f} MB", f"{b:.0f} MB", f"{c / b:.1f}x"]
            for moment, c, b in zip(
                ("after start", "after turn 1", f"after turn {args.turns}"), co, base, strict=True
            )
        ]
        print_table(
            "Kernel RSS (process and children)",
            ["moment", "Co kernel", "IPython kernel (baseline)", "ratio"],
            rows,
        )
        if not args.no_sandbox:
            sandbox_rows = [
                [mode, sandbox_memory(args.image, mode, Path(tmp))] for mode in ("bind", "copy")
            ]
            print_table(
                f"Sandbox container memory after one ! cell ({args.image}; docker stats)",
                ["sandbox_workspace", "memory used / limit"],
                sandbox_rows,
            )
    print(f"\nload average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
