"""Web: ``web_search`` through the Brave Search API and ``web_fetch`` as readable Markdown.

Each tool follows ``web_policy``: allow (runs), ask (approval) or deny (not offered).
``web_search`` is offered only with ``brave_search_api_key``; its query goes to the search
provider. ``web_fetch`` goes through the SSRF guard (``_ssrf.py``) on every hop; refusals
are audited as ``policy-denied``. Under ``allow`` a fetch still asks unless the person
chose its URL (``_outbound.py``, decided by ``permissions.OutboundGate``): both tools note
the links they return as chosen for the rest of the turn, and a redirect to another host
is followed only to a URL that would run without asking.
"""

from __future__ import annotations

import html
import re
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlsplit

from pydantic_ai import ModelRetry, RunContext, Tool, ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from ..exceptions import FetchRefused
from ..session_state import (  # at run time: pydantic-ai reads the tools' annotations
    CoDeps,
    ExtrasKey,
)
from . import ToolsetBuild
from ._audit import record_access
from ._json import as_list, as_object
from ._outbound import outbound_ledger, urls_in
from ._paging import result, text_pages
from ._ssrf import Fetched, check_url, domain_in, fetch

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["build", "web_fetch", "web_search"]

SEARCH_COUNT = 10
_BRAVE_MAX_OFFSET = 9  # Brave serves at most ten pages of results
_CACHED_PAGES = 8
_TAGS = re.compile(r"<[^>]+>")
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml")


def _plain(text: object) -> str:
    return html.unescape(_TAGS.sub("", text)) if isinstance(text, str) else ""


class _DomainLists(TypedDict):
    allowed_domains: list[str]
    blocked_domains: list[str]


def _domain_lists(settings: Settings) -> _DomainLists:
    return {
        "allowed_domains": settings.web_allowed_domains,
        "blocked_domains": settings.web_blocked_domains,
    }


def _listed(url: str, settings: Settings) -> bool:
    """Whether a search result may be shown under the domain lists."""
    host = (urlsplit(url).hostname or "").rstrip(".")
    if domain_in(host, settings.web_blocked_domains):
        return False
    return not settings.web_allowed_domains or domain_in(host, settings.web_allowed_domains)


async def web_search(ctx: RunContext[CoDeps], query: str, page: int = 1) -> dict[str, Any]:
    """Search the web (Brave Search). Returns titles, URLs and snippets.

    The query is sent to Brave Search: never put private text in it.

    Args:
        query: What to search for.
        page: Page of results (10 per page), starting at 1; at most 10 pages.
    """
    import httpx

    settings = ctx.deps.settings
    if not query.strip():
        raise ModelRetry("Give something to search for.")
    if not 1 <= page <= _BRAVE_MAX_OFFSET + 1:
        raise ModelRetry(f"`page` must be between 1 and {_BRAVE_MAX_OFFSET + 1}.")
    key = settings.brave_search_api_key
    if key is None:
        raise ToolFailed("Web search needs `brave_search_api_key` (BRAVE_SEARCH_API_KEY).")
    base = settings.brave_search_base_url.rstrip("/")
    try:
        async with httpx.AsyncClient(timeout=settings.web_fetch_timeout, trust_env=False) as c:
            response = await c.get(
                f"{base}/web/search",
                params={"q": query, "count": SEARCH_COUNT, "offset": page - 1},
                headers={
                    "Accept": "application/json",
                    "X-Subscription-Token": key.get_secret_value(),
                },
            )
    except httpx.HTTPError as exc:
        raise ToolFailed(
            f"Could not reach Brave Search at {base} ({type(exc).__name__})."
        ) from None
    status = response.status_code
    if status in (401, 403):
        raise ToolFailed(
            f"Brave Search refused the API key (HTTP {status}); check `brave_search_api_key`."
        )
    if status == 429 or status >= 500:
        raise ModelRetry(f"Brave Search is busy or failing (HTTP {status}); try again shortly.")
    if status != 200:
        raise ToolFailed(f"Brave Search answered HTTP {status}: {response.text[:300]}")
    try:
        data = response.json()
    except ValueError:
        raise ToolFailed("Brave Search answered with something that is not JSON.") from None
    answer = as_object(data) or {}
    raw = as_list((as_object(answer.get("web")) or {}).get("results"))
    hits = [
        {
            "title": _plain(r.get("title")),
            "url": r["url"],
            "description": _plain(r.get("description")),
        }
        for r in map(as_object, raw)
        if r is not None and isinstance(r.get("url"), str) and _listed(r["url"], settings)
    ]
    more = (as_object(answer.get("query")) or {}).get("more_results_available")
    has_more = bool(more) if more is not None else len(raw) >= SEARCH_COUNT
    has_more = has_more and page <= _BRAVE_MAX_OFFSET
    # What the results link to may be fetched this turn without asking.
    outbound_ledger(ctx.deps).note_links([h["url"] for h in hits], ctx.deps.turn_index)
    sent = f"(query sent to Brave Search, {urlsplit(base).hostname})"
    if not hits:
        return result(f'No web results for "{query}" (page {page}) {sent}.', count=0, page=page)
    lines = [f'Web results for "{query}" (page {page}) {sent}:', ""]
    start = (page - 1) * SEARCH_COUNT
    for n, hit in enumerate(hits, start=start + 1):
        lines.append(f"{n}. **{hit['title'] or hit['url']}**\n   {hit['url']}")
        if hit["description"]:
            lines.append(f"   {hit['description']}")
    return result("\n".join(lines), count=len(hits), page=page, has_more=has_more, results=hits)


_PAGES = ExtrasKey[OrderedDict[str, tuple[str, list[str], bool]]]("web_pages")
"""Fetched pages of the session, by URL: their title, pages of text and whether cut."""


def _page_cache(deps: CoDeps) -> OrderedDict[str, tuple[str, list[str], bool]]:
    return deps.extras.get_or_create(_PAGES, OrderedDict[str, tuple[str, list[str], bool]])


def _to_markdown(got: Fetched) -> tuple[str, str]:
    from ._html import html_to_markdown

    if got.content_type in ("text/html", "application/xhtml+xml", ""):
        return html_to_markdown(got.body, got.url, got.charset)
    if not got.content_type.startswith(_TEXT_TYPES):
        raise ToolFailed(f"{got.url} is {got.content_type}, not a text page; it is not shown.")
    return "", got.body.decode(got.charset or "utf-8", errors="replace")


async def web_fetch(ctx: RunContext[CoDeps], url: str, page: int = 1) -> dict[str, Any]:
    """Fetch a web page and return its main content as Markdown.

    Args:
        url: An http or https URL.
        page: Page of a long document, starting at 1.
    """
    settings = ctx.deps.settings
    if page < 1:
        raise ModelRetry("`page` starts at 1.")
    cache = _page_cache(ctx.deps)
    if page == 1 or url not in cache:  # page 1 is always fresh; later pages reuse it
        try:
            got = await fetch(
                url,
                max_bytes=settings.web_fetch_max_bytes,
                timeout=settings.web_fetch_timeout,
                max_redirects=settings.web_fetch_max_redirects,
                private_hosts=settings.web_private_hosts,
                may_follow=_redirect_rule(ctx.deps),
                **_domain_lists(settings),
            )
        except FetchRefused as exc:
            record_access(
                ctx.deps, tool="web_fetch", action="fetch", target=exc.url,
                decision="policy-denied", detail=exc.reason,
            )  # fmt: skip
            raise ToolFailed(f"Refused: {exc.reason}. Nothing was fetched.") from None
        except TimeoutError:
            raise ToolFailed(
                f"{url} did not answer within {settings.web_fetch_timeout:g} s "
                "(setting `web_fetch_timeout`)."
            ) from None
        except Exception as exc:  # httpx transport errors: the model should try elsewhere
            import httpx

            if not isinstance(exc, httpx.HTTPError):
                raise
            raise ToolFailed(f"Could not fetch {url} ({type(exc).__name__}: {exc}).") from None
        if got.status >= 400:
            raise ToolFailed(f"{got.url} answered HTTP {got.status}.")
        title, markdown = _to_markdown(got)
        # The page's links may be fetched this turn without asking (a page's own choice
        # of link cannot carry what Co read: the model only picks among them).
        outbound_ledger(ctx.deps).note_links([got.url, *urls_in(markdown)], ctx.deps.turn_index)
        cache[url] = (title, text_pages(markdown, settings.web_fetch_page_chars), got.truncated)
        while len(cache) > _CACHED_PAGES:
            cache.popitem(last=False)
    cache.move_to_end(url)
    title, pages, truncated = cache[url]
    if page > len(pages):
        raise ModelRetry(f"{url} has only {len(pages)} page(s).")
    body = pages[page - 1]
    head = f"# {title}\n\n" if title and page == 1 else ""
    note = ""
    if len(pages) > 1:
        note += f"\n\n[page {page} of {len(pages)}]"
    if truncated and page == len(pages):
        note += f"\n\n[cut at {settings.web_fetch_max_bytes:,} bytes (web_fetch_max_bytes)]"
    return result(
        f"{head}{body}{note}",
        count=1,
        page=page,
        has_more=page < len(pages),
        url=url,
        title=title,
    )


def _site(url: str) -> tuple[str, int | None]:
    """Host (``www.`` aside) and port of a URL: a redirect within them stays on the site."""
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").casefold().removeprefix("www.")
    try:
        port = parts.port
    except ValueError:
        return host, -1
    return host, port if port not in (80, 443) else None


def _redirect_rule(deps: CoDeps) -> Callable[[str, str], str | None]:
    """Which redirects a fetch follows: within its host (``www.`` aside), or to a URL that
    would run without asking; any other target is a new request the person decides on."""
    ledger = outbound_ledger(deps)

    def refused(current: str, target: str) -> str | None:
        if _site(target) == _site(current) or ledger.chosen(target, deps.turn_index):
            return None
        if ledger.allowlisted(target):
            return None
        return (
            f"the page redirects to {target}, another host that you did not give; nothing "
            "was sent there (fetch that URL to ask the user)"
        )

    return refused


async def _precheck_fetch(ctx: RunContext[CoDeps], url: str, page: int = 1) -> None:
    # Refuse a guarded URL before the person is asked about it. No DNS query: a lookup
    # of the host would already tell its name server about the URL.
    if ctx.tool_call_approved:
        return
    settings = ctx.deps.settings
    try:
        await check_url(
            url, private_hosts=settings.web_private_hosts, resolve=False,
            **_domain_lists(settings),
        )  # fmt: skip
    except FetchRefused as exc:
        record_access(
            ctx.deps, tool="web_fetch", action="fetch", target=exc.url,
            decision="policy-denied", detail=exc.reason,
        )  # fmt: skip
        raise ToolFailed(f"Refused: {exc.reason}. Nothing was fetched.") from None


def build(settings: Settings) -> list[ToolsetBuild]:
    """``web_search`` and ``web_fetch``, each as configured and allowed by ``web_policy``."""
    policy = settings.web_policy
    builds: list[ToolsetBuild] = []
    if policy.search == "deny":
        builds.append(ToolsetBuild("web_search", reason="`web_policy.search` is deny"))
    elif settings.brave_search_api_key is None:
        builds.append(
            ToolsetBuild("web_search", reason="set `brave_search_api_key` (BRAVE_SEARCH_API_KEY)")
        )
    else:
        ask = policy.search == "ask"
        tool = Tool(web_search, requires_approval=ask)
        builds.append(
            ToolsetBuild("web_search", FunctionToolset([tool]), approval={"web_search": ask})
        )
    if policy.fetch == "deny":
        builds.append(ToolsetBuild("web_fetch", reason="`web_policy.fetch` is deny"))
    else:
        ask = policy.fetch == "ask"
        tool = Tool(web_fetch, requires_approval=ask, args_validator=_precheck_fetch)
        builds.append(
            ToolsetBuild("web_fetch", FunctionToolset([tool]), approval={"web_fetch": ask})
        )
    return builds
