"""recall_memory over 10,000 memories (SQLite FTS5, bm25), beside a LIKE scan.

The memories are generated into a temporary database through the store's own ``add``.
Each query is timed through the ``recall_memory`` tool (search, ranking, the display);
the baseline runs in the same database in the same run: the query's words as
``LIKE '%word%'`` alternatives, ranked in Python by occurrences, the obvious
implementation without a full-text index.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_memory.py [--memories 10000] [--runs 21]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from _common import median, ms, print_table, verdict
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from co_kernel.config import Settings
from co_kernel.memory import MemoryStore
from co_kernel.session_state import CoDeps
from co_kernel.tools import memory
from tests.support.vault import WORDS

TARGET_MS = 20.0
QUERIES = ("deadline", "kernel review", "harbour coffee bicycle", "orca17", "zeppelin")
_TEMPLATES = (
    "The {a} for the {b} project is due in week {n}.",
    "The user prefers {a} over {b} when working on the {c}.",
    "{A} meetings happen on day {n} with the {b} team.",
    "Keep the {a} and the {b} in the {c} folder.",
    "The {a} server is called {b}{n} and hosts the {c}.",
)


def _memories(count: int, seed: int = 11) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        a, b, c = rng.sample(WORDS, 3)
        text = rng.choice(_TEMPLATES).format(a=a, A=a.capitalize(), b=b, c=c, n=rng.randint(1, 52))
        out.append((text, rng.sample(["prefs", "project", "infra", "people"], rng.randint(0, 2))))
    return out


def _like(store: MemoryStore, query: str) -> int:
    """The same answer without a full-text index: scan, then rank by words matched."""
    words = [w.lower() for w in query.split()]
    where = " OR ".join("text LIKE ?" for _ in words)
    rows = store.conn.execute(
        f"SELECT id, text, tags, created, updated FROM memories WHERE {where}",
        [f"%{w}%" for w in words],
    ).fetchall()
    ranked = sorted(rows, key=lambda r: -sum(r[1].lower().count(w) for w in words))
    return len(ranked[:10])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=21, help="timed runs per query")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="co-bench-memory-") as tmp:
        store = MemoryStore(Path(tmp, "memory.db"))
        started = time.perf_counter()
        rows = _memories(args.memories)
        for text, tags in rows:
            store.add(text, tags)
        print(f"Stored {args.memories:,} memories in {time.perf_counter() - started:.1f} s")
        deps = CoDeps(
            settings=Settings(), session_id="bench", kernel_id="bench", workspace=Path(tmp)
        )
        deps.extras["memory_store"] = store
        ctx = RunContext(deps=deps, model=TestModel(), usage=RunUsage())

        async def recall(query: str) -> tuple[float, int]:
            start = time.perf_counter()
            found = await memory.recall_memory(ctx, query)
            return time.perf_counter() - start, found["count"]

        loop = asyncio.new_event_loop()
        table, medians = [], []
        try:
            for query in QUERIES:
                co_times, like_times = [], []
                found = like_found = 0
                for _ in range(args.runs):
                    elapsed, found = loop.run_until_complete(recall(query))
                    co_times.append(elapsed)
                    start = time.perf_counter()
                    like_found = _like(store, query)
                    like_times.append(time.perf_counter() - start)
                co, base = median(co_times), median(like_times)
                medians.append(co)
                table.append(
                    [
                        repr(query),
                        found,
                        ms(co),
                        f"{like_found}, {ms(base)}",
                        f"{co / base:.2f}x",
                        verdict(co < TARGET_MS / 1000),
                    ]
                )
        finally:
            loop.close()
            store.close()
        print_table(
            f"recall_memory over {args.memories:,} memories, median of {args.runs} runs "
            f"(target < {TARGET_MS:.0f} ms)",
            ["query", "found", "Co (FTS5 bm25)", "LIKE scan, ranked", "Co/LIKE", "target"],
            table,
        )
        overall = median(medians)
        print(f"\nMedian over all queries: {ms(overall)} ({verdict(overall < TARGET_MS / 1000)})")


if __name__ == "__main__":
    main()
