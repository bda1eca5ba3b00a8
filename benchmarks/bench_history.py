"""History governance and the session store on a long conversation, beside naive baselines.

1. Per turn on a 500-turn conversation with tool calls (2,000 messages, 3 KB tool
   outputs): the history processors before each model request of the turn plus the
   session write after it (Co writes only the turn's rows). Baseline in the same run: what
   a store that rewrites the whole conversation each turn pays, the raw
   ``ModelMessagesTypeAdapter`` JSON dump of the same history written to a file.
   Target: Co under 5 ms at the median.
2. `%sessions` with 1,000 stored sessions: the magic itself (SQLite query and Markdown),
   for the default 20 rows and for `all`. Baseline: a store of one JSON file per session,
   listed by reading every file for its metadata. Target: under 100 ms.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_history.py [--turns 500] [--sessions 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _common import median, print_table, verdict
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse

from co_kernel.config import Settings
from co_kernel.store import SessionStore, TurnRow
from co_kernel.turn._history_processors import govern_history
from tests.support.histories import synthetic_history, synthetic_turn

TURN_TARGET_MS = 5.0
SESSIONS_TARGET_MS = 100.0


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _time(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_turns(turns: int, measured: int, folder: Path) -> None:
    settings = Settings()
    history = synthetic_history(turns, tool_every=2, tool_calls=2, output_chars=3000)
    initial = len(history)
    rows = [TurnRow(prompt=f"prompt {n}", start=None) for n in range(turns)]
    store = SessionStore(folder / "sessions.db")
    store.save("bench", history, rows, workspace=str(folder))
    baseline_file = folder / "session.json"
    co_times: list[float] = []
    process_times: list[float] = []
    write_times: list[float] = []
    base_times: list[float] = []
    for i in range(measured):
        n = turns + i
        start = len(history)
        turn = synthetic_turn(n, tool_calls=2 if i % 2 == 0 else 0, output_chars=3000)
        # The processors run before every model request: one per response of the turn.
        requests = sum(1 for m in turn if isinstance(m, ModelResponse))
        history.extend(turn)
        rows.append(TurnRow(prompt=f"prompt {n}", start=start))

        def processors(requests: int = requests) -> None:
            for _ in range(requests):
                govern_history(history, settings)

        def write(start: int = start, n: int = n) -> None:
            store.save(
                "bench", history, rows, from_message=start, from_turn=n, workspace=str(folder)
            )

        def baseline() -> None:
            baseline_file.write_bytes(ModelMessagesTypeAdapter.dump_json(history))

        p = _time(processors)
        w = _time(write)
        process_times.append(p)
        write_times.append(w)
        co_times.append(p + w)
        base_times.append(_time(baseline))
    store.close()
    co = median(co_times)
    base = median(base_times)
    print_table(
        f"Per turn on a {turns}-turn conversation ({initial:,} messages to start), "
        f"median of {measured} turns",
        ["what", "median", "p90", "vs baseline"],
        [
            (
                "Co: processors (per request) + session write",
                _ms(co),
                _ms(_p90(co_times)),
                f"{co / base:.2f}x",
            ),
            ("  of which processors", _ms(median(process_times)), _ms(_p90(process_times)), ""),
            (
                "  of which session write (turn rows only)",
                _ms(median(write_times)),
                _ms(_p90(write_times)),
                "",
            ),
            (
                "baseline: full JSON dump of the history to a file",
                _ms(base),
                _ms(_p90(base_times)),
                "1.00x",
            ),
        ],
    )
    print(
        f"target: Co under {TURN_TARGET_MS:.0f} ms per turn: {verdict(co * 1000 < TURN_TARGET_MS)}"
    )


def _p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.9 * (len(ordered) - 1))]


def bench_sessions(count: int, repeats: int, folder: Path) -> None:
    os.environ["CO_HOME"] = str(folder / "home")
    from co_kernel.config import load_settings, paths
    from co_kernel.magics import MagicContext
    from co_kernel.magics import sessions as sessions_magic
    from co_kernel.store import session_store_path
    from co_kernel.turn import ChatSession

    store = SessionStore(session_store_path())
    files = folder / "json-sessions"
    files.mkdir()
    for s in range(count):
        history = synthetic_history(4, tool_every=2, tool_calls=1, output_chars=400)
        rows = [TurnRow(prompt=f"session {s} prompt {n}", start=None) for n in range(4)]
        sid = f"{s:08x}" + "0" * 24
        store.save(sid, history, rows, notebook=f"notebooks/n{s % 37}.ipynb", workspace="/w")
        (files / f"{sid}.json").write_text(
            json.dumps(
                {
                    "id": sid,
                    "notebook": f"notebooks/n{s % 37}.ipynb",
                    "updated": time.time(),
                    "turns": [r.prompt for r in rows],
                    "messages": json.loads(ModelMessagesTypeAdapter.dump_json(history)),
                }
            )
        )
    store.close()
    session = ChatSession(load_settings(None), workspace=folder, kernel_id="bench")
    ctx = MagicContext(session)
    assert session_store_path().parent == paths().data_dir

    def run(args: str) -> str:
        return asyncio.run(sessions_magic.run(ctx, args)) or ""

    def baseline() -> list[dict[str, object]]:
        listed = []
        for path in files.iterdir():
            data = json.loads(path.read_text())
            listed.append(
                {
                    "id": data["id"],
                    "notebook": data["notebook"],
                    "updated": data["updated"],
                    "turns": len(data["turns"]),
                    "first": data["turns"][0],
                }
            )
        listed.sort(key=lambda d: d["updated"], reverse=True)  # type: ignore[arg-type, return-value]
        return listed

    assert f"of {count}" in run("")  # warm: connection, imports
    default = median([_time(lambda: run("")) for _ in range(repeats)])
    everything = median([_time(lambda: run("all")) for _ in range(repeats)])
    base = median([_time(baseline) for _ in range(max(3, repeats // 3))])
    session.close()
    print_table(
        f"%sessions with {count:,} stored sessions, median of {repeats} runs",
        ["what", "median", "vs baseline"],
        [
            ("Co: %sessions (20 most recent)", _ms(default), f"{default / base:.3f}x"),
            ("Co: %sessions all", _ms(everything), f"{everything / base:.3f}x"),
            ("baseline: one JSON file per session, read all", _ms(base), "1.000x"),
        ],
    )
    worst = max(default, everything) * 1000
    print(f"target: under {SESSIONS_TARGET_MS:.0f} ms: {verdict(worst < SESSIONS_TARGET_MS)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--measured", type=int, default=100, help="turns measured on top")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "turns").mkdir()
        bench_turns(args.turns, args.measured, folder / "turns")
        bench_sessions(args.sessions, args.repeats, folder)


if __name__ == "__main__":
    main()
