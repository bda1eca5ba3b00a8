"""Page tokens kept per listing in ``CoDeps.page_tokens``, so "more" asks for the next page.

Tools take a 1-based ``page``; page 1 needs no token, page N+1 uses the token page N
returned. A listing is keyed by tool and arguments (e.g. ``drive:quarterly report``), so
two searches page independently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic_ai import ModelRetry

if TYPE_CHECKING:
    from ..turn import CoDeps

__all__ = ["Pages", "pages"]


@dataclass
class Pages:
    """The tokens of one listing."""

    tokens: dict[int, str] = field(default_factory=dict)
    """Page number -> the token that fetches it (page 1 has none)."""
    last: int | None = None
    """The last page, once a page came back without a next token."""
    context: dict[str, str] = field(default_factory=dict)
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


def pages(deps: CoDeps, key: str) -> Pages:
    """The session's page tokens for one listing, created on first use."""
    found = deps.page_tokens.get(key)
    if not isinstance(found, Pages):
        found = Pages()
        deps.page_tokens[key] = found
    return found
