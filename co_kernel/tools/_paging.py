"""Pagination shared by every tool: one page of a sequence or of a long text.

Tools answer ``{"display", "count", "page", "has_more", ...}``; the system prompt tells
the model to show ``display`` verbatim and to ask for ``page + 1`` when ``has_more``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Page", "paginate", "result", "text_pages"]

T = TypeVar("T")


@dataclass
class Page(Generic[T]):
    """One page of results."""

    items: list[T]
    """The items on this page."""
    page: int
    """1-based page number."""
    total: int
    """Items over all pages."""
    start: int
    """Index of the first item of the page in the whole sequence."""
    per_page: int
    """Page size."""

    @property
    def has_more(self) -> bool:
        return self.start + len(self.items) < self.total

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))

    def past_end(self) -> dict[str, Any] | None:
        """The result for a page after the last one (results exist), else None."""
        if self.items or not self.total:
            return None
        return result(
            f"Page {self.page} is past the end: {self.total} results on {self.pages} page(s).",
            count=self.total,
            page=self.page,
        )


def paginate(items: Sequence[T], page: int, per_page: int) -> Page[T]:
    """The ``page``-th slice of ``per_page`` items; raises ModelRetry for a page below 1."""
    if page < 1:
        from pydantic_ai import ModelRetry

        raise ModelRetry("`page` starts at 1.")
    start = (page - 1) * per_page
    return Page(list(items[start : start + per_page]), page, len(items), start, per_page)


def text_pages(text: str, max_chars: int) -> list[str]:
    """Split text into pages of at most ``max_chars``, at line ends where possible."""
    if len(text) <= max_chars:
        return [text]
    pages: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        while len(line) > max_chars:  # a single huge line is cut where it must be
            if current:
                pages.append("".join(current))
                current, size = [], 0
            pages.append(line[:max_chars])
            line = line[max_chars:]
        if size + len(line) > max_chars and current:
            pages.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line)
    if current:
        pages.append("".join(current))
    return pages


def result(
    display: str, *, count: int, page: int = 1, has_more: bool = False, **extra: Any
) -> dict[str, Any]:
    """A tool result in the shape the system prompt describes."""
    out: dict[str, Any] = {"display": display, "count": count, "page": page, "has_more": has_more}
    if has_more:
        out["next_page"] = page + 1
    out.update(extra)
    return out
