"""The whole test suite's pytest time: this checkout (in parallel) beside an older one (serial).

The baseline is the suite as it was before it ran in parallel: ``--baseline-ref`` (a commit)
is checked out into a git worktree beside this one, set up with its own ``scripts/setup.sh``
(its own ``.venv``, so its kernels run its code), and its pytest command is run as its
``scripts/test.sh`` ran it. Then this checkout's command runs, as ``scripts/test.sh`` runs it
now. Only the pytest part is timed: both need the same machine set-up (Docker, the sandbox
image, Chromium, the labextension's node_modules), which ``scripts/test.sh`` makes once.
Target: this checkout in at most half the baseline's time, with no fewer tests passing.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_suite.py [--baseline-ref 713f33a~1]
        [--order baseline-first|current-first] [--workers N] [-- extra pytest args]

About 25 minutes on 2 cores; a report, always exit 0.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, git_worktree, load_average, print_table, verdict

# The last commit whose scripts/test.sh ran the suite in one process.
DEFAULT_BASELINE = "713f33a"
_SUMMARY = re.compile(r"=+ (?P<body>.*\d+ (?:passed|failed).*?) in [\d.]+s")


def _environment() -> dict[str, str]:
    """What scripts/test.sh exports for pytest."""
    env = dict(os.environ)
    env.update(
        CO_TEST_REQUIRE_NODE="1",
        CO_TEST_SANDBOX_IMAGE="co-sandbox-test:bookworm",
        CO_SANDBOX_IMAGE="co-sandbox-test:bookworm",
    )
    env.pop("PYTHONPATH", None)  # each checkout's kernels import their own code
    return env


def _worktree(ref: str) -> Path:
    """A worktree of ``ref`` beside this checkout, set up with its own virtualenv."""
    path = git_worktree(ref)
    subprocess.run(["scripts/setup.sh"], cwd=path, check=True)
    modules = path / "labextension" / "node_modules"
    if not modules.exists():
        # Its build test needs the extension's npm packages, as scripts/test.sh installs them.
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=modules.parent,
            check=True,
        )
    return path


def _run(label: str, cwd: Path, argv: list[str], log: Path) -> tuple[float, str, int]:
    print(f"{label}: {' '.join(argv)}  (log: {log}; load {load_average()})", flush=True)
    started = time.monotonic()
    with log.open("w") as out:
        code = subprocess.run(
            argv, cwd=cwd, env=_environment(), stdout=out, stderr=subprocess.STDOUT
        ).returncode
    elapsed = time.monotonic() - started
    tail = log.read_text(errors="replace")[-4000:]
    found = _SUMMARY.findall(tail)
    summary = found[-1] if found else f"no summary (exit {code})"
    print(f"{label}: {elapsed / 60:.1f} min, {summary}", flush=True)
    return elapsed, summary, code


def _passed(summary: str) -> int:
    match = re.search(r"(\d+) passed", summary)
    return int(match.group(1)) if match else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", default=DEFAULT_BASELINE)
    parser.add_argument(
        "--order", choices=["baseline-first", "current-first"], default="baseline-first"
    )
    parser.add_argument(
        "--workers", default=str((os.cpu_count() or 1) * 2), help="as CO_TEST_WORKERS"
    )
    parser.add_argument("extra", nargs="*", help="more pytest arguments, for both runs")
    args = parser.parse_args()

    base = _worktree(args.baseline_ref)
    logs = REPO / "test-artifacts"
    logs.mkdir(exist_ok=True)
    common = ["--nbval", "tests", "notebooks", "-p", "no:cacheprovider", *args.extra]
    runs = {
        "baseline": (base, [str(base / ".venv/bin/python"), "-m", "pytest", *common]),
        "current": (
            REPO,
            [sys.executable, "-m", "pytest", *common, "-n", args.workers, "--dist", "loadgroup"],
        ),
    }
    order = ["baseline", "current"] if args.order == "baseline-first" else ["current", "baseline"]
    results = {
        name: _run(name, runs[name][0], runs[name][1], logs / f"bench-suite-{name}.log")
        for name in order
    }

    (b_time, b_sum, _), (c_time, c_sum, c_code) = results["baseline"], results["current"]
    ratio = c_time / b_time if b_time else float("nan")
    ok = ratio <= 0.5 and c_code == 0 and _passed(c_sum) >= _passed(b_sum)
    print_table(
        f"Test suite, pytest part ({os.cpu_count()} cores; load after: {load_average()})",
        ["run", "wall time", "tests", "ratio to baseline", "target ≤ 0.50"],
        [
            [f"baseline {args.baseline_ref} (serial)", f"{b_time / 60:.1f} min", b_sum, "1.00", ""],
            [
                f"current (-n {args.workers})",
                f"{c_time / 60:.1f} min",
                c_sum,
                f"{ratio:.2f}",
                verdict(ok),
            ],
        ],
    )


if __name__ == "__main__":
    main()
