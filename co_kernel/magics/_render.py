"""Markdown pieces the magics share: tables, dates, short ids."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence

from ..inert import inert_code, inert_text

__all__ = ["Md", "cell", "code", "short_id", "table", "when"]

SHORT_ID = 8


class Md(str):
    """Markdown Co wrote, whose outside parts already went through ``inert_code`` or
    ``inert_text``: a table keeps it as it is. Any other value in a table is outside text."""

    __slots__ = ()


def code(value: object) -> Md:
    """An outside name, path or value as an inert code span, ready for a table or a line."""
    return Md(inert_code(value))


def cell(value: object, limit: int = 80) -> str:
    """A value inside a Markdown table cell: Co's own ``Md`` as it is (a ``|`` escaped,
    which GFM undoes inside a code span), anything else as inert text cut to ``limit``."""
    if isinstance(value, Md):
        text = " ".join(value.replace("\\\n", " ").split())
        return _cut_markdown(text, limit).replace("|", "\\|")
    return inert_text(" ".join(str(value).split()), limit=limit, table=True)


def _cut_markdown(text: str, limit: int) -> str:
    """Co's one-line Markdown cut to ``limit`` characters (``…``) where a cut breaks
    nothing: never inside a code span (it would open one to the end of the row) nor
    between a backslash and the character it escapes."""
    if len(text) <= limit:
        return text
    cut = limit - 1
    for span in re.finditer(r"(`+)(?:.*?[^`])??\1(?!`)", text):
        if span.start() < cut < span.end():
            cut = span.start()
            break
    escapes = len(text[:cut]) - len(text[:cut].rstrip("\\"))
    cut -= escapes % 2  # an odd run of backslashes ends in an escape: keep it whole
    return text[:cut] + "…"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def when(timestamp: float) -> str:
    """Local date and time, minutes precision."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def short_id(session_id: str) -> str:
    return session_id[:SHORT_ID]
