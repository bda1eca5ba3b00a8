"""``co-kernel tail``: spans as they are written, one line each, in the terminal (Rich).

Polls the telemetry database for rows after the last one shown (the exporter writes in
batches, so a poll every half second is as live as the data). Filters by session
(a prefix of its id is enough) and by kind.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ._spans import SpanRow, max_span_id, read_spans

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

__all__ = ["format_span_line", "tail"]

_KIND_STYLE = {
    "turn": "bold cyan",
    "agent": "blue",
    "model": "magenta",
    "tool": "yellow",
    "other": "dim",
}


def _tokens(span: SpanRow) -> str:
    if span.input_tokens is None and span.output_tokens is None:
        return ""
    return f"{span.input_tokens or 0:,}→{span.output_tokens or 0:,} tok"


def format_span_line(span: SpanRow) -> Text:
    """time  session  turn  kind  name  duration  tokens  cost (turns)  status."""
    from rich.text import Text

    clock = datetime.fromtimestamp(span.start_ns / 1e9).strftime("%H:%M:%S")
    line = Text()
    line.append(f"{clock} ", style="dim")
    line.append(f"{(span.session_id or '-')[:8]} ", style="dim")
    line.append(f"#{span.turn if span.turn is not None else '-':<3} ")
    line.append(f"{span.kind:<5} ", style=_KIND_STYLE.get(span.kind, ""))
    indent = {"turn": 0, "agent": 1}.get(span.kind, 2)
    line.append(f"{'  ' * indent}{span.name:<32} ")
    line.append(f"{span.duration_ms:>9.1f} ms ")
    tokens = _tokens(span)
    if tokens:
        line.append(f"{tokens} ", style="green")
    cost = span.cost
    if cost is not None:
        line.append(f"{cost} ", style="green")
    if span.status == "ERROR":
        line.append(f"ERROR {span.status_message or ''}".strip(), style="bold red")
    return line


def tail(
    db_path: Path,
    *,
    session_id: str | None = None,
    kind: str | None = None,
    follow: bool = True,
    last: int = 20,
    interval: float = 0.5,
    console: Console | None = None,
    stop: Callable[[], bool] | None = None,
) -> int:
    """Print the last ``last`` spans, then (when following) new ones until interrupted."""
    from rich.console import Console

    out = console or Console(highlight=False, soft_wrap=True)
    if not db_path.exists() and not follow:
        out.print(f"No telemetry yet: {db_path} does not exist (it appears after the first turn).")
        return 1
    if not db_path.exists():
        out.print(f"Waiting for {db_path} (it appears after the first turn)…", style="dim")
    # Resume after the newest row of any kind, so filtered-out rows are not read again;
    # taken first, so that a row written meanwhile is shown by the next poll.
    last_id = max_span_id(db_path)
    spans = read_spans(
        db_path, session_id=session_id, kind=kind, until_id=last_id, limit=last, newest=True
    )
    for span in spans:
        out.print(format_span_line(span))
    out.file.flush()
    if not follow:
        return 0
    try:
        while stop is None or not stop():
            time.sleep(interval)
            if not db_path.exists():
                continue
            newest = max_span_id(db_path)
            if newest <= last_id:
                continue
            spans = read_spans(
                db_path, session_id=session_id, kind=kind, after_id=last_id, until_id=newest
            )
            for span in spans:
                out.print(format_span_line(span))
            last_id = newest
            if spans:
                out.file.flush()
    except KeyboardInterrupt:
        pass
    return 0
