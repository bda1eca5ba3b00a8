"""Streaming answers of every shape and size: what the output messages cost, what the
notebook keeps and how often the cell changes, this checkout beside Co at ``--baseline-ref``.

Shapes (``_common.shaped_answer``): lists (a heading, then bullet and numbered items taking
turns), tables, code, prose and mixed; sizes 1 to 100 KB. Each answer streams from one
scripted model server (in its own process, ``--tokens-per-second``) into two real kernels
over ZMQ, one after the other, the order turning with each case: this checkout's and one of
``--baseline-ref`` (a git worktree beside this one, or ``--baseline-tree``). For each run:

- output: JSON of the content of every display_data / update_display_data / stream message
  of the cell (``session.pack``) over the answer's bytes: what the cell's output messages
  carry, the measure the target is set in;
- wire: every frame of those messages as sent (topic, signature, header, parent header,
  metadata and content), captured on our own SUB socket on the kernel's iopub port: what
  Jupyter adds to each message, the same for any content;
- saved: JSON of what the notebook keeps of each output (data and metadata of its last
  version), over the answer's bytes; and the .ipynb bytes nbformat writes for them;
- updates/s: messages that carry the answer over the seconds from the first to the last.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_streaming_shapes.py [--shapes lists,code]
     [--sizes 1,10,20,40,100] [--tokens-per-second 200] [--baseline-ref d8fc013]
     [--baseline-tree PATH]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import SHAPES, git_worktree, kernel_env, load_average, print_table, shaped_answer
from bench_streaming import CARRIERS, WireTap, model_server

from tests.support.kernel_harness import CoKernel, markdown_source

PROMPT = "Answer in Markdown."
TARGET_OUTPUT = 3.0
TARGET_SAVED = 2.5


@dataclass
class Run:
    """One answer streamed by one kernel."""

    output: int
    """JSON of the content of every message carrying the answer."""
    wire: int
    """Every frame of those messages as sent."""
    saved: int
    """JSON of data and metadata of each output's last version."""
    ipynb: int
    """Bytes nbformat writes for those outputs."""
    messages: int
    """Messages carrying the answer."""
    seconds: float
    """From the first to the last of them at the client."""
    intact: bool
    """The cell shows exactly the answer (its source, joined)."""

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else float("nan")


def _ipynb_bytes(outputs: list[dict[str, Any]]) -> int:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(PROMPT)
    notebook.cells.append(cell)
    empty = len(nbformat.writes(notebook).encode())
    for out in outputs:
        cell.outputs.append(nbformat.v4.new_output("display_data", **out))
    return len(nbformat.writes(notebook).encode()) - empty


def stream_once(kernel: CoKernel, tap: WireTap, answer: str) -> Run:
    # Each answer in a conversation of its own: a growing one would be compacted, which
    # asks the model (and so takes a scripted answer meant for the next case).
    kernel.execute("%clear", mode="notebook")
    tap.drain()
    tap.frames.clear()
    result = kernel.execute(PROMPT, mode="notebook", cell_id=str(uuid.uuid4()), timeout=900)
    tap.drain()
    session = kernel.kc.session
    carriers = result.of_type(*CARRIERS)
    last: dict[str, dict[str, Any]] = {}
    for n, m in enumerate(carriers):
        key = m["content"].get("transient", {}).get("display_id") or f"#{n}"
        last[key] = {"data": m["content"]["data"], "metadata": m["content"]["metadata"]}
    answer_msgs = [m for m in carriers if 'class="co-markdown' in str(m["content"]["data"])]
    wired = tap.of_cell(result.reply["parent_header"]["msg_id"], CARRIERS)
    shown = "".join(markdown_source(o["data"]) or "" for o in last.values())
    return Run(
        output=sum(len(session.pack(m["content"])) for m in carriers),
        wire=sum(len(f) for frames in wired for f in frames),
        saved=sum(len(json.dumps(o, ensure_ascii=False).encode()) for o in last.values()),
        ipynb=_ipynb_bytes(list(last.values())),
        messages=len(answer_msgs),
        seconds=answer_msgs[-1]["_received"] - answer_msgs[0]["_received"] if answer_msgs else 0,
        intact=shown == answer,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shapes")
    parser.add_argument("--sizes", default="1,10,20,40,100", help="comma-separated sizes in KB")
    parser.add_argument("--tokens-per-second", type=float, default=200.0)
    parser.add_argument(
        "--baseline-ref", default="d8fc013", help="commit whose Co streams beside this one"
    )
    parser.add_argument(
        "--baseline-tree", type=Path, help="a checkout of the baseline (default: a worktree)"
    )
    args = parser.parse_args()
    cases = [
        (shape, shaped_answer(shape, int(kb) * 1000))
        for shape in args.shapes.split(",")
        for kb in args.sizes.split(",")
    ]
    old_tree = args.baseline_tree or git_worktree(args.baseline_ref)
    steps: list[dict[str, Any]] = [{"text": "Warm-up.", "repeat": 2}]
    steps += [{"text": answer, "repeat": 2} for _, answer in cases]
    print(f"Load before: {load_average()}")
    results: list[tuple[str, int, Run, Run]] = []
    with tempfile.TemporaryDirectory(prefix="co-bench-") as tmp:
        script_dir = Path(tmp)
        home, work = script_dir / "home", script_dir / "work"
        home.mkdir()
        work.mkdir()
        with model_server(steps, script_dir, args.tokens_per_second) as base_url:
            co = CoKernel(kernel_env(home, base_url), work)
            old = CoKernel(kernel_env(home, base_url), work, fork=False, source=old_tree)
            kernels = (co, old)
            taps = [WireTap.open(k) for k in kernels]
            try:
                for k in kernels:
                    k.execute("Warm up.", mode="notebook")
                for n, (shape, answer) in enumerate(cases):
                    runs: dict[int, Run] = {}
                    for turn in range(2):
                        which = (turn + n) % 2
                        runs[which] = stream_once(kernels[which], taps[which], answer)
                    results.append((shape, len(answer.encode()), runs[0], runs[1]))
                    print(f"  {shape} {len(answer.encode())} bytes: done", flush=True)
            finally:
                for tap in taps:
                    tap.close()
                for k in kernels:
                    k.shutdown()
    report(results, args.baseline_ref, args.tokens_per_second)
    print(f"Load after: {load_average()}")


def report(results: list[tuple[str, int, Run, Run]], ref: str, tps: float) -> None:
    rows: list[list[object]] = []
    met = [0, 0, 0]
    for shape, n, co, base in results:
        checks = (
            co.output <= TARGET_OUTPUT * n,
            co.saved <= TARGET_SAVED * n,
            co.rate >= base.rate,
        )
        met = [m + c for m, c in zip(met, checks, strict=True)]
        rows.append(
            [
                shape,
                f"{n / 1000:.0f} KB",
                *(f"{r.output / n:.2f}x" for r in (co, base)),
                f"{base.output / co.output:.1f}",
                *(f"{r.wire / n:.2f}x" for r in (co, base)),
                *(f"{r.saved / n:.2f}x" for r in (co, base)),
                *(f"{r.ipynb / n:.2f}x" for r in (co, base)),
                *(f"{r.rate:.2f}" for r in (co, base)),
                f"{co.rate / base.rate:.2f}",
                "" if co.intact and base.intact else "NOT INTACT",
            ]
        )
    print_table(
        f"Streamed answers at {tps:.0f} tokens/s: Co (this checkout) beside Co at {ref} (base); "
        "x = bytes / answer bytes",
        [
            "shape",
            "size",
            "output Co",
            "output base",
            "base/Co",
            "wire Co",
            "wire base",
            "saved Co",
            "saved base",
            ".ipynb Co",
            ".ipynb base",
            "updates/s Co",
            "updates/s base",
            "Co/base",
            "",
        ],
        rows,
    )
    total = len(results)
    print(
        f"targets: output messages <= {TARGET_OUTPUT}x met in {met[0]}/{total}, "
        f"saved <= {TARGET_SAVED}x in {met[1]}/{total}, "
        f"updates/s >= the baseline's in {met[2]}/{total}"
    )


if __name__ == "__main__":
    main()
