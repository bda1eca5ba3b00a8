"""Turn a Co notebook into a regression test: record the model once, store what nbval compares.

    python -m co_kernel.replay.record_notebook report.ipynb [--script PATH] [--replay-only]

1. Runs the notebook headless with the model you configured (`CO_MODEL` or settings),
   recording every answer into the replay script (default `report.replay.jsonl` beside it).
2. Runs it again from that script (`CO_MODEL=replay:report.replay.jsonl`) exactly as
   `pytest --nbval` does, and stores those outputs in the notebook.

Afterwards `CO_MODEL=replay:report.replay.jsonl pytest --nbval report.ipynb` passes with no
model and no key. `--replay-only` skips step 1, for a script recorded in JupyterLab with
`%record`; with `CO_REPLAY_MODE=record-missing` and `CO_REPLAY_FALLBACK_MODEL` it asks that
model only for what the script lacks (a prompt you edited) and adds the answers to it.
Step 2 applies the approvals step 1 recorded; a `--replay-only` run asks again unless you
set `CO_REPLAY_APPROVALS=true` for it (a script from someone else decides nothing).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ._nbval import execute_as_nbval

__all__ = ["execute_as_nbval", "main", "record_notebook"]


def _script_name(notebook: Path, script: Path) -> str:
    """The script as the notebook's kernel (started in its folder) finds it."""
    try:
        return str(script.resolve().relative_to(notebook.parent.resolve()))
    except ValueError:
        return str(script.resolve())


def record_notebook(
    notebook: Path, script: Path | None = None, *, replay_only: bool = False
) -> int:
    """Record (unless ``replay_only``) and store the replayed outputs; returns failed cells."""
    script = script or notebook.with_name(f"{notebook.stem}.replay.jsonl")
    if not replay_only:
        failed = execute_as_nbval(notebook, {**os.environ, "CO_RECORD_PATH": str(script.resolve())})
        print(f"recorded {script}")
        if failed:
            return failed
    replay = {k: v for k, v in os.environ.items() if k != "CO_RECORD_PATH"}
    if not replay_only:
        # The decisions in the script are the ones this very run just made.
        replay.setdefault("CO_REPLAY_APPROVALS", "true")
    replay["CO_MODEL"] = f"replay:{_script_name(notebook, script)}"
    failed = execute_as_nbval(notebook, replay)
    print(f"stored the outputs of {notebook} replayed from {script}")
    return failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m co_kernel.replay.record_notebook",
        description="Record a notebook's model answers and store the outputs nbval compares.",
    )
    parser.add_argument("notebook", type=Path)
    parser.add_argument(
        "--script", type=Path, help="the replay script (default: NOTEBOOK.replay.jsonl beside it)"
    )
    parser.add_argument(
        "--replay-only",
        action="store_true",
        help="do not record: store the outputs replayed from an existing script",
    )
    args = parser.parse_args(argv)
    try:
        import nbformat  # noqa: F401  (nbval brings it; Co itself does not need it)
    except ImportError:
        parser.exit(2, "error: this needs nbformat and nbval: pip install nbval\n")
    return 1 if record_notebook(args.notebook, args.script, replay_only=args.replay_only) else 0


if __name__ == "__main__":
    sys.exit(main())
