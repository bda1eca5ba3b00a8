"""search_notes over a generated vault of 10,000 notes (about 50 MB), beside grep.

The vault is generated into a temporary folder (``tests.support.vault.generate_vault``:
front matter, headings, lists, code, inline tags, a Zipf-distributed vocabulary). Each
query is timed through the ``search_notes`` tool itself, so every run includes the
refresh walk that stats all 10,000 files, the whole-word AND match, ranking and the
display. The baseline is GNU grep on the same vault in the same run: ``grep -rniw`` for
one keyword, and for several keywords the same AND (``grep -rliw`` per keyword, each
over the files the previous one kept, then ``grep -niw`` for the lines). The first
search, which reads and parses every note, is reported on its own.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_notes.py [--notes 10000] [--runs 7]
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

from _common import median, ms, print_table, verdict
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from co_kernel.config import Settings
from co_kernel.session_state import CoDeps
from co_kernel.tools import notes
from tests.support.vault import generate_vault

TARGET_MS = 300.0
# (query, tag): common and rare words, AND of two and three, a tag filter, no match.
QUERIES: tuple[tuple[str, str | None], ...] = (
    ("deadline", None),
    ("kernel milestone", None),
    ("harbour coffee bicycle", None),
    ("review", "project/alpha"),
    ("katal", None),
    ("zeppelin", None),
)


def _grep(vault: Path, query: str) -> str:
    """The shell pipeline that does what search_notes does, with grep."""
    words = query.split()
    v = shlex.quote(str(vault))
    if len(words) == 1:
        return f"grep -rniw --include='*.md' -e {shlex.quote(words[0])} {v}"
    pipe = f"grep -rliwZ --include='*.md' -e {shlex.quote(words[0])} {v}"
    for word in words[1:]:
        pipe += f" | xargs -0r grep -liwZ -e {shlex.quote(word)}"
    pattern = " ".join(f"-e {shlex.quote(w)}" for w in words)
    return f"{pipe} | xargs -0r grep -niw {pattern}"


def _time_grep(vault: Path, query: str) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(
        ["bash", "-c", _grep(vault, query)], capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    files = {line.split(":", 1)[0] for line in done.stdout.splitlines()}
    return elapsed, len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=10_000, help="notes in the vault")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per query")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="co-bench-vault-") as tmp:
        vault = Path(tmp, "vault")
        started = time.perf_counter()
        size = generate_vault(vault, args.notes)
        print(
            f"Generated {args.notes:,} notes, {size / 1e6:.1f} MB, "
            f"in {time.perf_counter() - started:.1f} s"
        )
        deps = CoDeps(
            settings=Settings(obsidian_vault_path=vault),
            session_id="bench",
            kernel_id="bench",
            workspace=Path(tmp),
        )
        ctx = RunContext(deps=deps, model=TestModel(), usage=RunUsage())

        started = time.perf_counter()
        notes.search_notes(ctx, "deadline")
        cold = time.perf_counter() - started

        rows = []
        medians = []
        for query, tag in QUERIES:
            co_times, grep_times = [], []
            found = grep_found = 0
            for _ in range(args.runs):  # alternate, so both see the same machine load
                start = time.perf_counter()
                found = notes.search_notes(ctx, query, tag=tag)["count"]
                co_times.append(time.perf_counter() - start)
                if tag is None:
                    elapsed, grep_found = _time_grep(vault, query)
                    grep_times.append(elapsed)
            co, base = median(co_times), median(grep_times)
            medians.append(co)
            label = f"{query!r}" + (f" #{tag}" if tag else "")
            rows.append(
                [
                    label,
                    found,
                    ms(co),
                    f"{grep_found} files, {ms(base)}" if grep_times else "(no grep form)",
                    f"{co / base:.2f}x" if grep_times else "",
                    verdict(co < TARGET_MS / 1000),
                ]
            )
        print_table(
            f"search_notes over {args.notes:,} notes, median of {args.runs} runs "
            f"(target < {TARGET_MS:.0f} ms)",
            ["query", "notes", "Co", "grep -rniw (AND by pipeline)", "Co/grep", "target"],
            rows,
        )
        overall = median(medians)
        print(f"\nMedian over all queries: {ms(overall)} ({verdict(overall < TARGET_MS / 1000)})")
        print(f"First search (reads and parses every note): {ms(cold)}")


if __name__ == "__main__":
    main()
