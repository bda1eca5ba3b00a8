"""The per-cell trust check of a folder whose MCP server runs 300 Python files from it.

Before every cell Co hashes the folder's power files again (``config.folder_trust``). A
project MCP server's code (``python -m tools.server`` with a 300-module package in the
folder) joins that set; files whose stat is unchanged are not read again. Timed in the
same run: that check with the stat cache as each cell meets it, the same check reading
every file (each file's times touched first, as after a write to every one), and the baseline, a
folder whose server runs nothing from it, so only ``.co/`` is hashed (what the check cost
before server code was covered). Target: the cached check under 10 ms at the median.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_trust_rehash.py [--files 300] [--runs 51]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from _common import median, ms, print_table, verdict

from co_kernel.config import folder_trust

TARGET_MS = 10.0


def _folder(root: Path, files: int) -> Path:
    """A project whose MCP server is a package of ``files`` modules (about 2 KB each)."""
    package = root / "tools"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(60))
    for i in range(files - 2):
        (package / f"m{i}.py").write_text(body)
    (package / "server.py").write_text("from . import m0\n")
    co = root / ".co"
    co.mkdir()
    spec = {"command": "python", "args": ["-m", "tools.server"]}
    (co / "settings.json").write_text(json.dumps({"mcp_servers": {"tools": spec}}))
    (co / "instructions.md").write_text("Use the tools.\n")
    return root


def _baseline(root: Path) -> Path:
    co = root / ".co"
    co.mkdir(parents=True)
    spec = {"command": "npx", "args": ["-y", "@scope/tools"]}
    (co / "settings.json").write_text(json.dumps({"mcp_servers": {"tools": spec}}))
    (co / "instructions.md").write_text("Use the tools.\n")
    return root


def _time(folder: Path, runs: int, *, cold: bool) -> tuple[float, int]:
    times: list[float] = []
    count = 0
    for _ in range(runs):
        if cold:  # every file's ctime moves, as after a write to each: all read again
            for path in (folder / "tools").iterdir():
                os.utime(path)
        start = time.perf_counter()
        count = len(folder_trust(folder).files)
        times.append(time.perf_counter() - start)
    return median(times), count


def main() -> None:
    parser = argparse.ArgumentParser(
        description="The per-cell trust check of a folder whose MCP server runs its files."
    )
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--runs", type=int, default=51)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CO_HOME"] = str(Path(tmp) / "co-home")  # no trust record of the person's
        project = _folder(Path(tmp) / "project", args.files)
        base = _baseline(Path(tmp) / "baseline")
        folder_trust(project)  # the first check of the kernel reads every file
        warm, n = _time(project, args.runs, cold=False)
        cold, _ = _time(project, args.runs, cold=True)
        before, m = _time(base, args.runs, cold=False)
    print_table(
        f"Per-cell trust check, median of {args.runs}",
        ("check", "files hashed", "time", "ratio to baseline", "target"),
        [
            (
                "server code, stat cache",
                n,
                ms(warm),
                f"{warm / before:.1f}x",
                verdict(warm < TARGET_MS / 1000),
            ),
            ("server code, every file read", n, ms(cold), f"{cold / before:.1f}x", ""),
            ("baseline: .co/ only", m, ms(before), "1.0x", ""),
        ],
    )


if __name__ == "__main__":
    main()
