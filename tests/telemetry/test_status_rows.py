"""`co-kernel status` says where telemetry goes and which limits are in force."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_status_shows_tracing_and_limits(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env.update(
        {
            "CO_HOME": str(tmp_path),
            "CO_TRACE_CONTENT": "false",
            "CO_OTLP_ENDPOINT": "http://127.0.0.1:4318",
            "CO_MAX_REQUESTS_PER_HOUR": "30",
            "CO_MAX_TOKENS_PER_TURN": "20000",
        }
    )
    done = subprocess.run(
        [sys.executable, "-m", "co_kernel.cli", "status", "--project", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    traces = lines["telemetry.traces"]
    assert "on (no message content)" in traces
    assert "OTLP to http://127.0.0.1:4318" in traces
    assert str(tmp_path / "data" / "telemetry.db") in traces
    assert "30 requests/hour, 20,000 tokens/turn" in lines["telemetry.rate"]
