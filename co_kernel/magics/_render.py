"""Markdown pieces the magics share: tables, dates, short ids."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

__all__ = ["cell", "short_id", "table", "when"]

SHORT_ID = 8


def cell(value: object, limit: int = 80) -> str:
    """A value safe inside a Markdown table cell, cut to ``limit`` characters."""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("|", "\\|")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def when(timestamp: float) -> str:
    """Local date and time, minutes precision."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def short_id(session_id: str) -> str:
    return session_id[:SHORT_ID]
