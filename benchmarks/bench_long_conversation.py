"""Long conversations: prefix stability, token-estimate error, and the bundled model's
latency and memory over 100 turns.

1. Prefix stability and token estimates, with the scripted model over HTTP (exact): a
   200-turn conversation in a Co session (`max_history_messages` 40, two memories in the
   memory store, answers of varied length), this checkout beside the baseline (the commit
   before the governance moved in steps, ``--baseline-ref``, checked out into a git
   worktree beside this one and imported by its own run of this script). Per request:
   whether the previous request's messages are a byte-identical prefix of its messages
   (the system prompt included), and how far Co's estimate of the request, made before
   the turn as auto-compaction makes it, is from the prompt tokens the server reports
   (one per four characters of the messages and tool definitions, as it bills).
2. The bundled SmolLM2-135M model (this checkout only; ``--local-turns``, 0 to skip): a
   conversation of short prompts; median first-text latency of turns 11-20 against
   91-100, the memory of the session's process plus the model server after turns 10
   and 100, with the load average, and the error of Co's count of each request (made
   before the turn, by the model's tokenizer) against the prompt tokens llama.cpp
   reports. CPU heavy: about 10 minutes on 2 busy cores.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_long_conversation.py [--turns 200]
     [--window 40] [--baseline-ref 89ebbc3~1] [--local-turns 100] [--local-max-tokens 48]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, git_worktree, load_average, median, print_table, verdict

TOPICS = [
    "plotting",
    "parquet files",
    "the weather",
    "regular expressions",
    "sorting a list",
    "unit tests",
    "git branches",
    "csv encodings",
]


def _prompt(n: int) -> str:
    return f"Question {n}: a short tip about {TOPICS[n % len(TOPICS)]}?"


def _answer(n: int) -> str:
    sentence = f"Tip {n}: keep it simple and check the output of each step. "
    return sentence * (1 + n % 7)


def _billed(body: dict[str, Any]) -> int:
    """The scripted server's prompt tokens for a request (its own formula)."""
    text = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
    return math.ceil(len(text) / 4)


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _count(session: Any, prompt: str) -> int:
    """The session's count of the next request, as auto-compaction makes it (the
    baseline tree has only the estimate)."""
    if hasattr(session, "prompt_tokens"):
        return int((await session.prompt_tokens(prompt)).tokens)
    return int(session.estimated_prompt_tokens(prompt))


def _session(home: Path, settings: dict[str, Any]) -> Any:
    """A Co session as the kernel makes one, in this process (imports the tree on the path)."""
    os.environ["CO_HOME"] = str(home)
    from co_kernel.config import LoadedSettings, Settings
    from co_kernel.memory import MemoryStore
    from co_kernel.turn import ChatSession

    store = MemoryStore(home / "data" / "memory.db")
    store.add("The user's favourite plotting library is plotnine")
    store.add("The user reads parquet files with polars")
    store.close()
    workspace = home / "workspace"
    workspace.mkdir(exist_ok=True)
    return ChatSession(
        LoadedSettings(Settings(memory_prompt_count=1, **settings)),
        workspace=workspace,
        kernel_id="bench",
    )


def side_scripted(turns: int, window: int) -> dict[str, Any]:
    """One side of part 1, run in a child process importing one tree."""
    from co_kernel.replay import ScriptedModelServer
    from co_kernel.turn import RecordingFrontend

    home = Path(tempfile.mkdtemp(prefix="co-bench-long-"))
    with ScriptedModelServer([{"text": _answer(n)} for n in range(turns)]) as server:
        session = _session(
            home,
            {
                "model": "compat:scripted",
                "base_url": server.base_url,
                "max_history_messages": window,
            },
        )
        estimates: list[int] = []

        async def run() -> None:
            agent, _ = session.ensure_agent()
            async with agent:
                for n in range(turns):
                    estimates.append(await _count(session, _prompt(n)))
                    await session.run_prompt(
                        _prompt(n), cell_id=f"c{n}", frontend=RecordingFrontend()
                    )

        try:
            asyncio.run(run())
        finally:
            session.close()
        requests = server.requests
        errors = server.errors
    messages = [json.dumps(body["messages"]) for body in requests]
    bodies = [body["messages"] for body in requests]
    stable = [
        json.dumps(after[: len(before)]) == json.dumps(before)
        for before, after in itertools.pairwise(bodies)
    ]
    fill = window // 2  # the turn whose request first exceeds the window
    billed = [_billed(body) for body in requests]
    error = [abs(e - b) / b for e, b in zip(estimates, billed, strict=True)]
    return {
        "requests": len(requests),
        "errors": errors,
        "stable": sum(stable) / len(stable),
        "stable_after_fill": sum(stable[fill:]) / len(stable[fill:]),
        "system_prompts": len({json.dumps(b[0]) for b in bodies}),
        "mean_chars": sum(len(m) for m in messages) / len(messages),
        "error_median": median(error[1:]),
        "error_max": max(error[1:]),
    }


def side_local(turns: int, max_tokens: int) -> dict[str, Any]:
    """Part 2, in a child process: the bundled model, one conversation of short prompts."""
    from co_kernel.turn import RecordingFrontend

    class Timed(RecordingFrontend):
        first_text: float | None = None

        def on_text_delta(self, delta: str) -> None:
            if self.first_text is None:
                self.first_text = time.monotonic()
            super().on_text_delta(delta)

    home = Path(tempfile.mkdtemp(prefix="co-bench-local-"))
    session = _session(home, {"model": "local:smollm2-135m", "local_max_tokens": max_tokens})
    latency: list[float] = []
    memory: dict[int, dict[str, int]] = {}
    loads: dict[int, str] = {}
    counts: list[tuple[int, int, str]] = []  # (count before the turn, reported, how)

    async def run() -> None:
        agent, handle = session.ensure_agent()
        async with agent:
            for n in range(1, turns + 1):
                frontend = Timed()
                count = await session.prompt_tokens(_prompt(n)) if n > 1 else None
                started = time.monotonic()
                await session.run_prompt(_prompt(n), cell_id=f"c{n}", frontend=frontend)
                end = frontend.first_text or time.monotonic()
                latency.append(end - started)
                turn = session.turns[-1]
                if count is not None and turn.requests == 1 and turn.input_tokens:
                    counts.append((count.tokens, turn.input_tokens, count.how))
                if n in (10, turns):
                    assert handle.local is not None and handle.local.server.pid is not None
                    memory[n] = {
                        "session_kb": _rss_kb(os.getpid()),
                        "server_kb": _rss_kb(handle.local.server.pid),
                    }
                    loads[n] = load_average()
                print(f"turn {n}: {latency[-1]:.2f} s", file=sys.stderr, flush=True)

    try:
        asyncio.run(run())
    finally:
        session.close()
    return {"latency": latency, "memory": memory, "loads": loads, "counts": counts}


def _run_side(tree: Path, argv: list[str]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(REPO / "benchmarks")])
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *argv],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"side run failed ({tree}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--window", type=int, default=40)
    parser.add_argument("--baseline-ref", default="89ebbc3~1")
    parser.add_argument("--local-turns", type=int, default=100)
    parser.add_argument("--local-max-tokens", type=int, default=48)
    parser.add_argument("--side", choices=["scripted", "local"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side == "scripted":
        print(json.dumps(side_scripted(args.turns, args.window)))
        return
    if args.side == "local":
        print(json.dumps(side_local(args.local_turns, args.local_max_tokens)))
        return

    print(f"load before: {load_average()}", flush=True)
    base = git_worktree(args.baseline_ref)
    scripted = ["--side", "scripted", "--turns", str(args.turns), "--window", str(args.window)]
    current = _run_side(REPO, scripted)
    baseline = _run_side(base, scripted)
    for label, side in (("current", current), ("baseline", baseline)):
        if side["errors"]:
            print(f"{label}: scripted server errors: {side['errors'][:3]}")
    rows = [
        [
            "requests whose previous request is their prefix",
            ">= 90 %",
            f"{current['stable']:.1%}",
            f"{baseline['stable']:.1%}",
            verdict(current["stable"] >= 0.9),
        ],
        [
            f"  the same, after the window fills (turn {args.window // 2 + 1} on)",
            "",
            f"{current['stable_after_fill']:.1%}",
            f"{baseline['stable_after_fill']:.1%}",
            "",
        ],
        [
            "distinct system prompts sent",
            "1",
            current["system_prompts"],
            baseline["system_prompts"],
            verdict(current["system_prompts"] == 1),
        ],
        [
            "mean request size (characters of messages)",
            "",
            f"{current['mean_chars']:,.0f}",
            f"{baseline['mean_chars']:,.0f}",
            f"ratio {current['mean_chars'] / baseline['mean_chars']:.2f}",
        ],
        [
            "token estimate error vs reported, median",
            "<= 15 %",
            f"{current['error_median']:.1%}",
            f"{baseline['error_median']:.1%}",
            verdict(current["error_median"] <= 0.15),
        ],
        [
            "token estimate error vs reported, worst",
            "",
            f"{current['error_max']:.1%}",
            f"{baseline['error_max']:.1%}",
            verdict(current["error_max"] <= 0.15),
        ],
    ]
    print_table(
        f"{args.turns}-turn conversation, window {args.window} (baseline {args.baseline_ref})",
        ["", "target", "current", "baseline", "verdict"],
        rows,
    )
    print(f"load after part 1: {load_average()}", flush=True)
    if args.local_turns < 20:
        return
    local = _run_side(
        REPO,
        [
            "--side",
            "local",
            "--local-turns",
            str(args.local_turns),
            "--local-max-tokens",
            str(args.local_max_tokens),
        ],
    )
    lat = local["latency"]
    early, late = median(lat[10:20]), median(lat[-10:])
    mem = {int(k): v for k, v in local["memory"].items()}
    last = args.local_turns

    count_error = [abs(c - r) / r for c, r, _ in local["counts"]]
    hows = ", ".join(sorted({how for _, _, how in local["counts"]}))

    def total(n: int) -> float:
        return (mem[n]["session_kb"] + mem[n]["server_kb"]) / 1024

    print_table(
        f"bundled SmolLM2-135M, {last} turns (max_tokens {args.local_max_tokens})",
        ["", "target", "value", "verdict"],
        [
            ["median first-text latency, turns 11-20", "", f"{early:.2f} s", ""],
            [f"median first-text latency, turns {last - 9}-{last}", "", f"{late:.2f} s", ""],
            ["ratio", "<= 3x", f"{late / early:.2f}x", verdict(late <= 3 * early)],
            [
                "session + model server RSS after turn 10",
                "",
                f"{total(10):,.0f} MB ({mem[10]['server_kb'] / 1024:,.0f} MB server)",
                "",
            ],
            [
                f"session + model server RSS after turn {last}",
                "",
                f"{total(last):,.0f} MB ({mem[last]['server_kb'] / 1024:,.0f} MB server)",
                "",
            ],
            [
                "growth",
                "<= 200 MB",
                f"{total(last) - total(10):+,.0f} MB",
                verdict(total(last) - total(10) <= 200),
            ],
            [
                f"token count error vs reported, median ({hows})",
                "<= 15 %",
                f"{median(count_error):.1%}",
                verdict(median(count_error) <= 0.15),
            ],
            [
                "token count error vs reported, worst",
                "",
                f"{max(count_error):.1%}",
                verdict(max(count_error) <= 0.15),
            ],
        ],
    )
    for n, load in sorted(local["loads"].items(), key=lambda kv: int(kv[0])):
        print(f"load after turn {n}: {load}")
    print(f"load after: {load_average()}")


if __name__ == "__main__":
    main()
