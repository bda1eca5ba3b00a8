"""Pagination shared by every tool: 1-based ``page`` arguments and ``has_more`` answers.

Two sources of pages, one module:

- Local results (notes, files, memories, a fetched page): the whole list is at hand, so
  :func:`paginate` slices it and :func:`text_pages` cuts long text at line ends.
- Remote listings (Drive, Gmail, Slack): page N+1 needs the token page N returned, kept
  per listing in ``CoDeps.page_tokens`` by :class:`Pages` (:func:`pages`). A listing is
  keyed by tool and arguments (e.g. ``drive:quarterly report``), so two searches page
  independently; page 1 needs no token.

Tools answer ``{"display", "count", "page", "has_more", ...}`` (:func:`result`); the
system prompt tells the model to show ``display`` verbatim and to ask for ``page + 1``
when ``has_more``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic_ai import ModelRetry

from ..session_state import ExtrasKey

if TYPE_CHECKING:
    from ..session_state import CoDeps

__all__ = ["Page", "Pages", "pages", "paginate", "result", "text_pages"]

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


# -- remote listings: page tokens ---------------------------------------------


@dataclass
class Pages:
    """The tokens of one listing."""

    tokens: dict[int, str] = field(default_factory=dict[int, str])
    """Page number -> the token that fetches it (page 1 has none)."""
    last: int | None = None
    """The last page, once a page came back without a next token."""
    context: dict[str, str] = field(default_factory=dict[str, str])
    """Arguments page 1 was fetched with that later pages must repeat (a time window)."""

    def token_for(self, page: int) -> str | None:
        """The token for ``page``; a hint to the model when that page cannot be asked for."""
        if page < 1:
            raise ModelRetry("`page` starts at 1; call again with page=1 for the first results.")
        if page == 1:
            return None
        if self.last is not None and page > self.last:
            raise ModelRetry(
                f"There is no page {page}: page {self.last} was the last (has_more was false). "
                "Tell the person there are no more results."
            )
        token = self.tokens.get(page)
        if token is None:
            known = max(self.tokens, default=1)
            raise ModelRetry(
                f"Page {page} cannot be fetched yet: pages are fetched in order and the next "
                f"one available is page {known}. Call with page={known}."
            )
        return token

    def record(self, page: int, next_token: str | None) -> bool:
        """Keep the token of the page after ``page``; returns has_more."""
        if next_token:
            self.tokens[page + 1] = next_token
            if self.last is not None and self.last <= page:
                self.last = None
            return True
        self.last = page
        return False


_PAGE_TOKENS = ExtrasKey[dict[str, Pages]]("page_tokens")
"""Pagination state of the session's listings, keyed by tool and query."""


def pages(deps: CoDeps, key: str) -> Pages:
    """The session's page tokens for one listing, created on first use."""
    return deps.page_tokens.get_or_create(_PAGE_TOKENS, dict[str, Pages]).setdefault(key, Pages())
