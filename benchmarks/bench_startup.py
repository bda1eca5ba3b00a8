"""Starting up: Co beside the commit before, pydantic-ai-kernel, stock ipykernel and a bare loop.

Every kernel starts fresh (a new interpreter, never forked) from its own kernelspec, and
each sample alternates who goes first so drift on a busy machine hits all alike. "Co" is
this checkout; "Co before" is ``--baseline-ref`` (a git worktree beside this one, imported
with this environment's packages); pydantic-ai-kernel (PyPI, in a venv of its own made
once beside this checkout, ``--peer-venv``, with this environment's pydantic-ai) is
configured with the same scripted model.

3. Kernel start to first kernel_info_reply: ``KernelManager.start_kernel``, a client, one
   ``kernel_info`` request sent at once (ZMQ queues it until the kernel listens) and the
   clock stops when its reply arrives (target: Co within 1.5x the stock ``python3``).
4. The first turn, sent 6 s after the kernel started (the background import and the
   session build are done; on a loaded machine the prompt waits until they are, and the
   run says so): execute_request -> first Markdown at the client, beside a bare
   pydantic-ai ``run_stream_events`` loop in this process (a fresh agent each time, built
   outside the clock) -> its first text delta, against the same scripted server (a 20 KB
   Markdown answer) (target: within +20 ms of the bare loop). Beside it the CPU the
   turn's thread used until then, read as in 4b: a loaded machine makes the wall times
   of a few fresh kernels wide, not this.
4b. Warm turns, what each later prompt costs: one kernel of each Co kept running, after
   ``--warm-up`` untimed turns, ``--warm-turns`` turns each, Co, Co before and the bare loop
   taking turns (A B C, the order rotated every round) against the same scripted server.
   Each Co turn re-runs the same cell, which replaces its previous turn, so every request
   carries a one-prompt conversation like the bare loop's. Measured as a person sees it:
   execute_request sent -> the first iopub message with answer text (the bare loop: its
   first text delta reaching this process). Medians, the difference with a bootstrap 95 %
   interval, and the difference of the minimum of each block of 5 rounds (the machine's
   load adds, never subtracts) with its range (target: within +20 ms of the bare loop).
   Beside it the CPU the turn's thread used until then (the kernel's main thread, read
   from /proc when the text arrives; the bare loop's own): what a busy machine multiplies
   into wall time, and steady however loaded it is.
5. A prompt sent the moment the kernel answers kernel_info: kernel start -> first text at
   the client, beside pydantic-ai-kernel sent the same prompt the same way (target: no
   later), and a stock python3 ipykernel whose first cell imports pydantic-ai, builds an
   agent and streams the same answer with ``run_stream_events``, printing its first text.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_startup.py [--starts 7] [--turns 5]
    [--warm-turns 36] [--warm-up 3] [--baseline-ref 17870b3] [--peer-venv PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _common import (
    REPO,
    git_worktree,
    kernel_env,
    load_average,
    markdown_answer,
    median,
    ms,
    print_table,
    verdict,
)
from bench_streaming import ANSWER_MIME, PROMPT, BareLoop, co_cut_trial, model_server
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from jupyter_client.provisioning import LocalProvisioner

from tests.support.kernel_harness import CoKernel, ensure_kernelspec

SETTLED_AFTER = 6.0
"""Seconds after the kernel starts when the prompt of section 4 is sent."""

PEER = "pydantic-ai-kernel==1.5.4"

STOCK_CELL = """
from pydantic_ai import Agent
from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

agent = Agent(OpenAIChatModel("scripted", provider=OpenAIProvider(base_url={url!r}, api_key="x")))
async with agent.run_stream_events({prompt!r}) as events:
    async for event in events:
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            text = event.part.content
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            text = event.delta.content_delta
        else:
            continue
        if text:
            print(text, end="", flush=True)
            break
"""

PEER_CONFIG = """\
agent_name: bench
system_prompt: You are a helpful assistant.
model:
  model_type: openai
  model_name: scripted
  model_provider:
    name: openai
    params:
      base_url: {url}
      api_key: x
"""


@dataclass
class Kernel:
    """One kernel to start: its kernelspec, environment and the first cell it is sent."""

    label: str
    spec: str
    env: dict[str, str]
    cell: str = PROMPT
    specs: KernelSpecManager = field(default_factory=KernelSpecManager)


def peer_python(venv: Path) -> Path:
    """pydantic-ai-kernel's Python, in a venv of its own made once (a minute the first time).

    Its own dependencies, with this environment's pydantic-ai-slim (``[openai,mcp]``, what
    it imports) and ipykernel: its requirement on the ``pydantic-ai`` meta package would
    pull an older pydantic-ai, hence ``--no-deps`` for the kernel itself.
    """
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"Installing {PEER} into {venv} (once)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "--no-deps", PEER], check=True)
        same = [
            f"pydantic-ai-slim[openai,mcp]=={version('pydantic-ai-slim')}",
            f"ipykernel=={version('ipykernel')}",
        ]
        subprocess.run(
            [*pip, *same, "metakernel", "boosted-magics", "ipywidgets", "pyyaml"], check=True
        )
    return python


def peer_kernel(venv: Path, base_url: str, home: Path, tmp: Path) -> Kernel:
    """pydantic-ai-kernel on the scripted model, from a kernelspec of its own in ``tmp``."""
    config = tmp / "peer.yaml"
    config.write_text(PEER_CONFIG.format(url=base_url))
    spec = tmp / "kernels" / "peer"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [str(peer_python(venv)), "-m", "pydantic_ai_kernel", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "peer", "language": "text"})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_") and k != "PYTHONPATH"}
    env.update(HOME=str(home), PYDANTIC_AI_KERNEL_CONFIG=str(config))
    return Kernel(
        "pydantic-ai-kernel", "peer", env, specs=KernelSpecManager(kernel_dirs=[str(spec.parent)])
    )


def co_env(home: Path, base_url: str, source: Path) -> dict[str, str]:
    """Co's environment importing ``source``'s co_kernel (this checkout or the baseline)."""
    env = kernel_env(home, base_url)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(source), *(p for p in env["PYTHONPATH"].split(os.pathsep) if p != str(REPO))]
    )
    return env


def start_and_ask(kernel: Kernel, cwd: Path) -> tuple[Any, Any, float, Any]:
    """Start a kernel and send kernel_info at once: (manager, client, start time, reply)."""
    km = KernelManager(kernel_name=kernel.spec, kernel_spec_manager=kernel.specs)
    start = time.monotonic()
    km.start_kernel(env=kernel.env, cwd=str(cwd))
    kc = km.client()
    kc.start_channels()
    msg_id = kc.kernel_info()
    while True:
        reply = kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            return km, kc, start, reply


def time_start(kernel: Kernel, cwd: Path) -> float:
    """Seconds from start_kernel to the first kernel_info_reply."""
    km, kc, start, reply = start_and_ask(kernel, cwd)
    try:
        elapsed = time.monotonic() - start
        if reply["msg_type"] != "kernel_info_reply":
            raise RuntimeError(
                f"{kernel.label}: expected kernel_info_reply, got {reply['msg_type']}"
            )
        kc.wait_for_ready(timeout=60)
        return elapsed
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def _first_text(msg: dict[str, Any]) -> bool:
    """Co's first Markdown display, or the printed text of the others."""
    if msg["msg_type"] == "stream" and msg["content"]["text"].strip():
        return True
    return msg["msg_type"] == "display_data" and bool(msg["content"]["data"].get(ANSWER_MIME))


def cold_turn(kernel: Kernel, cwd: Path) -> float:
    """Section 5: start_kernel -> first text of a cell sent when kernel_info is answered."""
    km, kc, start, _ = start_and_ask(kernel, cwd)
    try:
        request = kc.session.msg("execute_request", {
            "code": kernel.cell, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": False,
        })  # fmt: skip
        request["metadata"]["cellId"] = str(uuid.uuid4())  # JupyterLab's: Co's notebook mode
        kc.shell_channel.send(request)
        msg_id = request["header"]["msg_id"]
        while True:
            msg = kc.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if _first_text(msg):
                return time.monotonic() - start
            if msg["msg_type"] == "error":
                raise RuntimeError(f"{kernel.label}: {msg['content']['evalue']}")
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                raise RuntimeError(f"{kernel.label}: the cell showed no text")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def wait_for_warm_up(kernel: CoKernel) -> float:
    """Seconds a completion request waited: Co answers one only after its warm-up (the
    imports and the session's agent) is done, as a cell would wait."""
    started = time.monotonic()
    msg_id = kernel.kc.complete("%he", 3)
    while kernel.kc.get_shell_msg(timeout=120)["parent_header"].get("msg_id") != msg_id:
        pass
    return time.monotonic() - started


LATE: list[str] = []
"""Section 4's kernels whose warm-up was not done 6 s after start (a loaded machine)."""


SETTLED_CPU: dict[str, list[float]] = {}
"""Section 4's CPU of the turn's thread until the first text, of each first turn (the
untimed round's first): the kernel's main thread, the bare loop's own."""


def main_thread_cpu(pid: int) -> float:
    """Seconds the process's main thread has run on a CPU (the scheduler's count, in ns)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def kernel_pid(kernel: CoKernel) -> int:
    """The process id of a kernel started from a fresh interpreter (``fork=False``)."""
    provisioner = kernel.km.provisioner
    assert isinstance(provisioner, LocalProvisioner) and provisioner.process is not None
    return provisioner.process.pid


def settled_turn(label: str, env: dict[str, str], cwd: Path, source: Path) -> float:
    """Section 4: a fresh Co kernel of ``source``, the prompt 6 s after its start, or
    once its warm-up is done if that is later: this section measures a settled kernel."""
    started = time.monotonic()
    kernel = CoKernel(env, cwd, fork=False, source=None if source == REPO else source)
    try:
        time.sleep(max(0.0, started + SETTLED_AFTER - time.monotonic()))
        if wait_for_warm_up(kernel) > 0.1:
            LATE.append(label)
        pid = kernel_pid(kernel)
        start, first = main_thread_cpu(pid), []
        wall = co_cut_trial(
            kernel, str(uuid.uuid4()), on_first=lambda: first.append(main_thread_cpu(pid))
        )
        SETTLED_CPU.setdefault(label, []).append(first[0] - start)
        return wall
    finally:
        kernel.shutdown()


def settled_bare_turn(runner: asyncio.Runner, url: str) -> float:
    """Section 4's bare loop: a fresh agent (built outside the clock), its first text."""
    loop = BareLoop(url)
    start = main_thread_cpu(os.getpid())
    wall = runner.run(loop.run(cut=True))[0]
    SETTLED_CPU.setdefault("bare loop", []).append(main_thread_cpu(os.getpid()) - start)
    return wall


def warm_turns(
    rounds: int, warm_up: int, kernels: dict[str, CoKernel], runner: asyncio.Runner, url: str
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Section 4b: turns of running kernels and the bare loop, taking turns round by round:
    (seconds to first text, CPU seconds of the turn's thread until then) of each.

    Every Co turn re-runs one cell per kernel (the turn it replaces is dropped), so the
    conversation each request carries stays one prompt long, as the bare loop's does (one
    agent, reused like the kernel's, sending the prompt alone each time). The
    CPU is the kernel's main thread (where the turn runs) read when the first text arrives
    here, and the bare loop's thread (this one) until its first delta and the stream closed.
    """
    cells = {label: str(uuid.uuid4()) for label in kernels}

    def co(label: str) -> tuple[float, float]:
        pid = kernel_pid(kernels[label])
        start, first = main_thread_cpu(pid), []
        wall = co_cut_trial(
            kernels[label], cells[label], on_first=lambda: first.append(main_thread_cpu(pid))
        )
        return wall, first[0] - start

    # One agent for every turn, as a kernel keeps its own: its HTTP connection and client
    # are warm after the untimed turns (a fresh one pays a connect and a thread hop).
    loop = BareLoop(url)

    def bare() -> tuple[float, float]:
        start = main_thread_cpu(os.getpid())
        wall = runner.run(loop.run(cut=True))[0]
        return wall, main_thread_cpu(os.getpid()) - start

    runs: dict[str, Callable[[], tuple[float, float]]] = {
        label: lambda label=label: co(label) for label in kernels
    }
    runs["bare loop"] = bare
    for _ in range(warm_up):
        for run in runs.values():
            run()
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for n in range(rounds):
        shift = n % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = runs[name]()
            walls[name].append(wall)
            cpus[name].append(cpu)
    return walls, cpus


def bootstrap_difference(
    a: list[float], b: list[float], resamples: int = 2000
) -> tuple[float, float]:
    """95 % interval of median(a) - median(b), resampling each side (seeded: reproducible)."""
    rng = random.Random(0)
    diffs = sorted(
        median(rng.choices(a, k=len(a))) - median(rng.choices(b, k=len(b)))
        for _ in range(resamples)
    )
    return diffs[int(0.025 * resamples)], diffs[int(0.975 * resamples) - 1]


def min_of_blocks(a: list[float], b: list[float], k: int = 5) -> list[float]:
    """min(a) - min(b) over each block of ``k`` rounds: the least loaded turn of each."""
    return [min(a[i : i + k]) - min(b[i : i + k]) for i in range(0, min(len(a), len(b)) - k + 1, k)]


DIFFERENCE_HEADERS = [
    "kernel", "median", "bare loop", "difference", "bootstrap 95 %", "min-of-5 diff",
    "min-of-5 range", "min..max", "verdict (<= +20 ms)",
]  # fmt: skip


def difference_row(label: str, samples: dict[str, list[float]], target: float) -> list[str]:
    """Median difference to the bare loop, its bootstrap interval, the min-of-5 difference."""
    mine, bare = samples[label], samples["bare loop"]
    diff = median(mine) - median(bare)
    low, high = bootstrap_difference(mine, bare)
    blocks = min_of_blocks(mine, bare)
    if diff > target:
        verdict_text = "MISSED" if low > target else "MISSED (interval spans the target)"
    else:
        verdict_text = "met" if high <= target else "met (interval spans the target)"
    return [
        label, ms(median(mine)), ms(median(bare)), f"{diff * 1000:+.1f} ms",
        f"{low * 1000:+.1f}..{high * 1000:+.1f} ms",
        f"{median(blocks) * 1000:+.1f} ms" if blocks else "-",
        f"{min(blocks) * 1000:+.1f}..{max(blocks) * 1000:+.1f} ms" if blocks else "-",
        span(mine), verdict_text,
    ]  # fmt: skip


def alternate(runs: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """``rounds`` samples of each, the order rotated every round; one untimed round first
    (the OS file cache, this process's own imports)."""
    for run in runs.values():
        run()
    samples: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for n in range(rounds):
        shift = n % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(runs[name]())
    return samples


def span(values: list[float]) -> str:
    return f"{ms(min(values))}..{ms(max(values))}"


def print_samples(section: str, samples: dict[str, list[float]]) -> None:
    for name, values in samples.items():
        print(f"{section}. {name} samples (ms):", " ".join(f"{t * 1000:.0f}" for t in values))


def kernel_starts(starts: int, kernels: list[Kernel], base_ref: str) -> None:
    """Section 3."""
    with tempfile.TemporaryDirectory(prefix="co-bench-") as tmp:
        work = Path(tmp, "work")
        work.mkdir()
        times = alternate({k.label: lambda k=k: time_start(k, work) for k in kernels}, starts)
    co, before, stock = (median(times[k]) for k in ("Co", "Co before", "python3"))
    peer = median(times["pydantic-ai-kernel"])
    print_table(
        f"3. Kernel start to first kernel_info_reply ({starts} alternating starts each)",
        ["target", "Co", f"Co {base_ref}", "pydantic-ai-kernel", "python3", "Co/python3",
         "Co min..max", "verdict"],
        [["<= 1.5x python3", ms(co), ms(before), ms(peer), ms(stock), f"{co / stock:.2f}x",
          span(times["Co"]), verdict(co <= 1.5 * stock)]],
    )  # fmt: skip
    print_samples("3", times)


def first_turns(
    turns: int, warm: tuple[int, int], base_tree: Path, base_ref: str, peer_venv: Path
) -> None:
    """Sections 4, 4b and 5."""
    warm_rounds, warm_up = warm
    repeat = 20 * turns + 20 + 3 * (warm_rounds + warm_up + 1)
    steps = [{"text": markdown_answer(), "repeat": repeat}]
    with (
        tempfile.TemporaryDirectory(prefix="co-bench-") as tmp,
        model_server(steps, Path(tmp)) as base_url,
        asyncio.Runner() as runner,
    ):
        home, work = Path(tmp, "home"), Path(tmp, "work")
        home.mkdir()
        work.mkdir()
        here, before = co_env(home, base_url, REPO), co_env(home, base_url, base_tree)
        stock_cell = STOCK_CELL.format(url=base_url, prompt=PROMPT)

        settled = alternate({
            "Co": lambda: settled_turn("Co", here, work, REPO),
            "Co before": lambda: settled_turn("Co before", before, work, base_tree),
            "bare loop": lambda: settled_bare_turn(runner, base_url),
        }, turns)  # fmt: skip
        settled_cpu = {label: cpu[-turns:] for label, cpu in SETTLED_CPU.items()}
        running = {
            "Co": CoKernel(here, work, fork=False),
            "Co before": CoKernel(before, work, fork=False, source=base_tree),
        }
        try:
            for kernel in running.values():
                wait_for_warm_up(kernel)
            warm, warm_cpu = warm_turns(warm_rounds, warm_up, running, runner, base_url)
        finally:
            for kernel in running.values():
                kernel.shutdown()
        kernels = [
            Kernel("Co", "co", here),
            Kernel("Co before", "co", before),
            peer_kernel(peer_venv, base_url, home, Path(tmp)),
            Kernel("python3", "python3", here, stock_cell),
        ]
        cold = alternate({k.label: lambda k=k: cold_turn(k, work) for k in kernels}, turns)

    co, old, bare = (median(settled[k]) for k in ("Co", "Co before", "bare loop"))
    print_table(
        f"4. First turn sent {SETTLED_AFTER:.0f} s after kernel start, to first text "
        f"({turns} alternating fresh kernels)",
        ["target", "Co", f"Co {base_ref}", "bare loop", "Co - bare", f"{base_ref} - bare",
         "Co min..max", "verdict"],
        [["<= +20 ms", ms(co), ms(old), ms(bare), f"{(co - bare) * 1000:+.1f} ms",
          f"{(old - bare) * 1000:+.1f} ms", span(settled["Co"]), verdict(co - bare <= 0.020)]],
    )  # fmt: skip
    print_table(
        "4. The same first turns: the difference's spread (few samples: a wide interval)",
        DIFFERENCE_HEADERS,
        [difference_row("Co", settled, 0.020),
         [f"Co {base_ref}", *difference_row("Co before", settled, 0.020)[1:]]],
    )  # fmt: skip
    print_table(
        "4. The same first turns: CPU of the turn's thread to first text (what the load "
        "multiplies)",
        DIFFERENCE_HEADERS[:-1],
        [difference_row("Co", settled_cpu, 0.020)[:-1],
         [f"Co {base_ref}", *difference_row("Co before", settled_cpu, 0.020)[1:-1]]],
    )  # fmt: skip
    print_table(
        f"4b. Warm turns, execute_request to first answer text ({warm_rounds} turns each, "
        f"taking turns, after {warm_up} untimed)",
        DIFFERENCE_HEADERS,
        [difference_row("Co", warm, 0.020),
         [f"Co {base_ref}", *difference_row("Co before", warm, 0.020)[1:]]],
    )  # fmt: skip
    print_table(
        "4b. The same turns: CPU of the turn's thread to first text (what the load multiplies)",
        DIFFERENCE_HEADERS[:-1],
        [difference_row("Co", warm_cpu, 0.020)[:-1],
         [f"Co {base_ref}", *difference_row("Co before", warm_cpu, 0.020)[1:-1]]],
    )  # fmt: skip
    co, old, peer, stock = (
        median(cold[k]) for k in ("Co", "Co before", "pydantic-ai-kernel", "python3")
    )
    print_table(
        f"5. Kernel start to first text, the prompt sent at kernel_info ({turns} alternating)",
        ["target", "Co", f"Co {base_ref}", "pydantic-ai-kernel", "python3 + pydantic-ai",
         "Co/peer", f"{base_ref}/peer", "Co min..max", "verdict"],
        [["<= pydantic-ai-kernel", ms(co), ms(old), ms(peer), ms(stock), f"{co / peer:.2f}x",
          f"{old / peer:.2f}x", span(cold["Co"]), verdict(co <= peer)]],
    )  # fmt: skip
    print_samples("4", settled)
    print_samples("4 CPU", settled_cpu)
    print_samples("4b", warm)
    print_samples("4b CPU", warm_cpu)
    if LATE:
        print("4. prompts sent later than 6 s, after the warm-up:", ", ".join(LATE))
    print_samples("5", cold)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--starts", type=int, default=7, help="timed starts of each kernel")
    parser.add_argument("--turns", type=int, default=5, help="first turns of each (4 and 5)")
    parser.add_argument("--warm-turns", type=int, default=36, help="timed warm turns of each (4b)")
    parser.add_argument("--warm-up", type=int, default=3, help="untimed warm turns first (4b)")
    parser.add_argument(
        "--baseline-ref", default="17870b3", help="the Co started beside this one (a git ref)"
    )
    parser.add_argument(
        "--peer-venv",
        type=Path,
        default=REPO.parent / f"{REPO.name}-bench-pydantic-ai-kernel",
        help="the venv of pydantic-ai-kernel (made there if missing)",
    )
    args = parser.parse_args()
    ensure_kernelspec()
    base_tree = git_worktree(args.baseline_ref)
    print("Load average before:", load_average())
    with tempfile.TemporaryDirectory(prefix="co-bench-") as tmp:
        home = Path(tmp, "home")
        home.mkdir()
        # Co's model is never called here; the variables only make its settings realistic.
        url = "http://127.0.0.1:9/v1"
        kernels = [
            Kernel("Co", "co", co_env(home, url, REPO)),
            Kernel("Co before", "co", co_env(home, url, base_tree)),
            peer_kernel(args.peer_venv, url, home, Path(tmp)),
            Kernel("python3", "python3", co_env(home, url, REPO)),
        ]
        kernel_starts(args.starts, kernels, args.baseline_ref)
    first_turns(
        args.turns, (args.warm_turns, args.warm_up), base_tree, args.baseline_ref, args.peer_venv
    )
    print("Load average after:", load_average())


if __name__ == "__main__":
    main()
