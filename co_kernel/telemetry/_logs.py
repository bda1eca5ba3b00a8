"""``co-kernel logs``: Datasette over the telemetry database, on 127.0.0.1 only.

Datasette is an optional dependency (``pip install 'co-kernel[logs]'``); without it the
command says so and exits. It runs in this process, so stopping the command stops the
server. Canned queries give the common views: turns, model requests, tool calls with
their decisions, usage per session.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["LOGS_HOST", "datasette_metadata", "missing_datasette_message", "serve_logs"]

LOGS_HOST = "127.0.0.1"

_QUERIES: dict[str, dict[str, str]] = {
    "turns": {
        "title": "Turns, newest first",
        "sql": "SELECT session_id, turn, start_time, model, input_tokens, output_tokens, "
        "round(duration_ms, 1) AS duration_ms, status, status_message "
        "FROM spans WHERE kind = 'turn' ORDER BY start_ns DESC LIMIT 500",
    },
    "model_requests": {
        "title": "Model requests, newest first",
        "sql": "SELECT session_id, turn, start_time, name, model, input_tokens, output_tokens, "
        "round(duration_ms, 1) AS duration_ms, status, status_message "
        "FROM spans WHERE kind = 'model' ORDER BY start_ns DESC LIMIT 500",
    },
    "tool_calls": {
        "title": "Tool calls and their decisions (audit log)",
        "sql": "SELECT datetime(ts, 'unixepoch') AS time, session_id, turn, tool, action, "
        "target, decision, status, result_size, round(duration_ms, 1) AS duration_ms, detail "
        "FROM agent_actions ORDER BY ts DESC LIMIT 500",
    },
    "usage_by_session": {
        "title": "Usage per session",
        "sql": "SELECT session_id, min(start_time) AS first, max(start_time) AS last, "
        "sum(kind = 'turn') AS turns, sum(kind = 'model') AS requests, "
        "sum(CASE WHEN kind = 'model' THEN input_tokens END) AS input_tokens, "
        "sum(CASE WHEN kind = 'model' THEN output_tokens END) AS output_tokens, "
        "sum(kind = 'tool') AS tool_calls FROM spans GROUP BY session_id ORDER BY last DESC",
    },
}


def missing_datasette_message() -> str:
    return (
        "co-kernel logs needs Datasette, which is not installed. Install it with "
        "`pip install 'co-kernel[logs]'` (or `pip install datasette`), then run "
        "`co-kernel logs` again. `co-kernel tail` and `co-kernel traces` work without it."
    )


def datasette_metadata(db_path: Path) -> dict[str, Any]:
    """Title, description and canned queries for the telemetry database."""
    return {
        "title": "Co telemetry",
        "description": "Spans of every turn and the audit log of agent actions "
        "(secrets redacted). Local only.",
        "databases": {db_path.stem: {"queries": _QUERIES}},
    }


def serve_logs(db_path: Path, *, port: int = 8001, open_browser: bool = False) -> int:
    """Serve the database until interrupted; returns the exit status."""
    try:
        from datasette.cli import cli
    except ImportError:
        print(missing_datasette_message())
        return 1
    from ._database import connect

    # Create the tables, so a fresh install shows empty tables rather than an error.
    connect(db_path).close()
    with tempfile.TemporaryDirectory(prefix="co-logs-") as tmp:
        metadata = Path(tmp) / "metadata.json"
        metadata.write_text(json.dumps(datasette_metadata(db_path)), encoding="utf-8")
        args = [
            "serve",
            str(db_path),
            "--host",
            LOGS_HOST,
            "--port",
            str(port),
            "--metadata",
            str(metadata),
            "--setting",
            "sql_time_limit_ms",
            "5000",
        ]
        if open_browser:
            args.append("--open")
        print(f"Co telemetry at http://{LOGS_HOST}:{port}/{db_path.stem} (Ctrl+C stops)")
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C is how it is stopped
            cli.main(args=args, prog_name="co-kernel logs", standalone_mode=False)
    return 0
