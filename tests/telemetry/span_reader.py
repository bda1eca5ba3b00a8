"""Reading what a kernel wrote to the telemetry database, waiting for the batch export."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from co_kernel.telemetry._spans import SpanRow, read_spans


def telemetry_db(co_home: Path) -> Path:
    return co_home / "data" / "telemetry.db"


def wait_for_spans(
    db: Path,
    ready: Callable[[list[SpanRow]], bool],
    *,
    timeout: float = 60.0,
    **filters: object,
) -> list[SpanRow]:
    """Spans (filtered as ``read_spans``) once ``ready`` says they are all there.

    Spans are written in batches a moment after they end, so a test polls rather than
    reading once; the deadline only bounds a failure.
    """
    deadline = time.monotonic() + timeout
    spans: list[SpanRow] = []
    while time.monotonic() < deadline:
        spans = read_spans(db, **filters)  # type: ignore[arg-type]
        if ready(spans):
            return spans
        time.sleep(0.1)
    raise AssertionError(f"spans not complete after {timeout}s: {[s.name for s in spans]}")


def turns_done(count: int) -> Callable[[list[SpanRow]], bool]:
    """Ready when ``count`` turn spans are stored (a turn span ends after its children)."""
    return lambda spans: sum(1 for s in spans if s.kind == "turn") >= count


def co_kernel_cli(*args: str, co_home: Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`co-kernel ARGS` as a person runs it, on ``co_home`` and none of the test's CO_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env["CO_HOME"] = str(co_home)
    return subprocess.run(
        [sys.executable, "-m", "co_kernel.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        **kwargs,
    )
