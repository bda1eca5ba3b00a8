"""Web tools against real HTTP servers on 127.0.0.1: Brave's JSON shape, the SSRF guard
on every hop, HTML to Markdown, size and time caps, and the per-tool policy."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest
from pydantic_ai import ModelRetry, ToolFailed

from co_kernel.config import Settings
from co_kernel.tools import web
from co_kernel.tools._ssrf import blocked_reason

from ._http import LocalServer, Seen
from .conftest import ctx

BRAVE_RESULTS = {
    "type": "search",
    "query": {"original": "jupyter kernels", "more_results_available": True},
    "web": {
        "type": "search",
        "results": [
            {
                "title": "Jupyter kernels &mdash; docs",
                "url": "https://docs.jupyter.org/en/latest/projects/kernels.html",
                "description": "Kernels are <strong>programming language</strong> processes.",
                "language": "en",
            },
            {
                "title": "IPython kernel",
                "url": "https://ipython.readthedocs.io/en/stable/",
                "description": "The reference <strong>kernel</strong>.",
            },
            {
                "title": "Spam farm",
                "url": "https://ads.spam.example/kernels",
                "description": "Buy now",
            },
        ],
    },
}


def _json(body: object, status: int = 200) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


@pytest.fixture
def brave() -> Iterator[LocalServer]:
    def search(seen: Seen):
        key = seen.headers.get("X-Subscription-Token")
        if key == "bad-key":
            return _json(
                {"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}}, 401
            )
        if key == "busy-key":
            return _json({"type": "ErrorResponse"}, 429)
        if seen.query.get("q") == ["nothing at all"]:
            return _json({"type": "search", "query": {"original": "nothing at all"}})
        return _json(BRAVE_RESULTS)

    server = LocalServer({"/res/v1/web/search": search})
    yield server
    server.close()


def _search_deps(make_deps, brave, key="test-key", **kw):
    return make_deps(brave_search_api_key=key, brave_search_base_url=f"{brave.url}/res/v1", **kw)


def test_brave_search_reads_the_documented_json_shape(make_deps, brave):
    deps = _search_deps(make_deps, brave)
    found = asyncio.run(web.web_search(ctx(deps), "jupyter kernels"))
    request = brave.seen[-1]
    assert request.path == "/res/v1/web/search"
    assert request.query == {"q": ["jupyter kernels"], "count": ["10"], "offset": ["0"]}
    assert request.headers["X-Subscription-Token"] == "test-key"
    assert request.headers["Accept"] == "application/json"
    assert found["count"] == 3 and found["has_more"] is True
    display = found["display"]
    assert "1. **Jupyter kernels — docs**" in display
    assert "https://docs.jupyter.org/en/latest/projects/kernels.html" in display
    assert "Kernels are programming language processes." in display  # tags stripped
    second = asyncio.run(web.web_search(ctx(deps), "jupyter kernels", page=2))
    assert brave.seen[-1].query["offset"] == ["1"] and "11. **Jupyter" in second["display"]


def test_blocked_domains_are_dropped_from_results(make_deps, brave):
    deps = _search_deps(make_deps, brave, web_blocked_domains=["spam.example"])
    found = asyncio.run(web.web_search(ctx(deps), "jupyter kernels"))
    assert found["count"] == 2 and "spam" not in found["display"]


def test_no_results_is_an_empty_result(make_deps, brave):
    found = asyncio.run(web.web_search(ctx(_search_deps(make_deps, brave)), "nothing at all"))
    assert found["count"] == 0 and found["has_more"] is False


def test_rejected_key_and_rate_limit(make_deps, brave):
    with pytest.raises(ToolFailed, match="brave_search_api_key") as failed:
        asyncio.run(web.web_search(ctx(_search_deps(make_deps, brave, "bad-key")), "x"))
    assert "bad-key" not in failed.value.message
    with pytest.raises(ModelRetry, match="HTTP 429"):
        asyncio.run(web.web_search(ctx(_search_deps(make_deps, brave, "busy-key")), "x"))


def test_web_tools_are_registered_per_policy_and_key():
    by_name = {b.name: b for b in web.build(Settings())}
    assert by_name["web_search"].toolset is None
    assert "brave_search_api_key" in (by_name["web_search"].reason or "")
    assert by_name["web_fetch"].approval == {"web_fetch": False}
    asked = {
        b.name: b
        for b in web.build(
            Settings(brave_search_api_key="k", web_policy={"search": "ask", "fetch": "ask"})
        )
    }
    assert asked["web_search"].approval == {"web_search": True}
    assert asked["web_fetch"].approval == {"web_fetch": True}
    denied = {
        b.name: b
        for b in web.build(
            Settings(brave_search_api_key="k", web_policy={"search": "deny", "fetch": "deny"})
        )
    }
    assert (
        denied["web_search"].toolset is None and "web_policy.search" in denied["web_search"].reason
    )
    assert denied["web_fetch"].toolset is None and "web_policy.fetch" in denied["web_fetch"].reason


# -- web_fetch and the SSRF guard ------------------------------------------------------

ARTICLE = b"""<!doctype html>
<html><head><title>Field guide to kernels</title>
<style>body { color: red }</style><script>var leaked = "SCRIPT-TEXT";</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">NAV-TEXT</a></nav>
<main>
<h1>Kernels</h1>
<p>A <strong>kernel</strong> runs the code of a notebook. See <a href="/docs/page">the docs</a>.</p>
<ul><li>IPython</li><li>Co</li></ul>
<pre><code>print("hi")</code></pre>
</main>
<footer>FOOTER-TEXT</footer>
</body></html>
"""


@pytest.fixture
def marker() -> Iterator[LocalServer]:
    """A loopback server that must never be reached."""
    server = LocalServer({"/": lambda s: (200, {"Content-Type": "text/plain"}, b"INTERNAL")})
    yield server
    server.close()


@pytest.fixture
def site(marker: LocalServer) -> Iterator[LocalServer]:
    """The explicitly allowed test server."""
    long_text = "\n".join(f"paragraph {i} " + "words " * 30 for i in range(400)).encode()

    def redirect(to: str):
        return lambda s: (302, {"Location": to}, b"")

    def slow(seen: Seen):
        time.sleep(3)
        return 200, {"Content-Type": "text/plain"}, b"late"

    routes = {
        "/article": lambda s: (200, {"Content-Type": "text/html; charset=utf-8"}, ARTICLE),
        "/long": lambda s: (200, {"Content-Type": "text/plain"}, long_text),
        "/big": lambda s: (200, {"Content-Type": "text/plain"}, b"z" * 300_000),
        "/slow": slow,
        "/image": lambda s: (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n"),
        "/gone": lambda s: (404, {"Content-Type": "text/plain"}, b"no"),
        "/hop": redirect("/article"),
        "/to-marker": redirect(f"{marker.url}/"),
        "/to-localhost": redirect(f"http://localhost:{marker.port}/"),
        "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-file": redirect("file:///etc/passwd"),
        "/to-decimal": redirect(f"http://2130706433:{marker.port}/"),
        "/loop": redirect("/loop"),
    }
    server = LocalServer(routes)
    yield server
    server.close()


@pytest.fixture
def fetch_deps(make_deps, site):
    def make(**kw):
        return make_deps(web_private_hosts=[f"127.0.0.1:{site.port}"], **kw)

    return make


def _fetch(deps, url, page=1):
    return asyncio.run(web.web_fetch(ctx(deps), url, page))


def test_fetch_from_the_allowed_server_gives_readable_markdown(fetch_deps, site):
    page = _fetch(fetch_deps(), f"{site.url}/article")
    md = page["display"]
    assert md.startswith("# Field guide to kernels\n\n# Kernels\n")
    assert "A **kernel** runs the code of a notebook." in md
    assert f"[the docs]({site.url}/docs/page)" in md  # links made absolute
    assert "- IPython\n- Co" in md
    assert 'print("hi")' in md
    for furniture in ("NAV-TEXT", "FOOTER-TEXT", "SCRIPT-TEXT", "color: red"):
        assert furniture not in md
    assert page["title"] == "Field guide to kernels" and page["count"] == 1
    assert site.seen[-1].headers["Host"] == f"127.0.0.1:{site.port}"


def test_redirects_within_the_allowed_server_are_followed(fetch_deps, site):
    page = _fetch(fetch_deps(), f"{site.url}/hop")
    assert "A **kernel** runs" in page["display"]
    assert [s.path for s in site.seen] == ["/hop", "/article"]


def test_long_documents_are_paged_from_one_fetch(fetch_deps, site):
    deps = fetch_deps(web_fetch_page_chars=20_000)
    first = _fetch(deps, f"{site.url}/long")
    assert first["has_more"] is True and "[page 1 of" in first["display"]
    second = _fetch(deps, f"{site.url}/long", page=2)
    assert "[page 2 of" in second["display"]
    assert len([s for s in site.seen if s.path == "/long"]) == 1


def test_size_and_time_caps(fetch_deps, site):
    capped = _fetch(fetch_deps(web_fetch_max_bytes=4096), f"{site.url}/big")
    assert "z" * 4096 in capped["display"] and "z" * 4097 not in capped["display"]
    assert "cut at 4,096 bytes" in capped["display"]
    with pytest.raises(ToolFailed, match="did not answer within 1 s"):
        _fetch(fetch_deps(web_fetch_timeout=1), f"{site.url}/slow")


def test_non_text_and_error_pages(fetch_deps, site):
    with pytest.raises(ToolFailed, match="image/png, not a text page"):
        _fetch(fetch_deps(), f"{site.url}/image")
    with pytest.raises(ToolFailed, match="HTTP 404"):
        _fetch(fetch_deps(), f"{site.url}/gone")
    with pytest.raises(ToolFailed, match="more than 5 redirects"):
        _fetch(fetch_deps(), f"{site.url}/loop")


def _ssrf_payloads(marker: LocalServer, site: LocalServer) -> list[str]:
    p = marker.port
    return [
        f"http://127.0.0.1:{p}/",
        f"http://127.0.0.2:{p}/",
        f"http://[::1]:{p}/",
        f"http://0.0.0.0:{p}/",
        f"http://0:{p}/",
        f"http://[::]:{p}/",
        "http://10.0.0.1/",
        "http://10.255.255.254:8080/",
        "http://172.16.0.1/",
        "http://172.31.255.254/",
        "http://192.168.0.1/",
        "http://192.168.1.254/admin",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://169.254.1.1/",
        "http://100.64.0.1/",
        "http://224.0.0.251/",
        "http://[ff02::1]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[fd00:ec2::254]/",
        f"http://2130706433:{p}/",  # decimal 127.0.0.1
        f"http://0177.0.0.1:{p}/",  # octal
        f"http://0x7f000001:{p}/",  # hex
        f"http://0x7f.0x0.0x0.0x1:{p}/",
        f"http://127.1:{p}/",
        f"http://[::ffff:127.0.0.1]:{p}/",  # IPv4-mapped IPv6
        f"http://[::ffff:7f00:1]:{p}/",
        "http://[::ffff:169.254.169.254]/",
        "http://[2002:7f00:1::]/",  # 6to4 around loopback
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 around the metadata address
        f"http://localhost:{p}/",  # a name that resolves to loopback
        f"http://localhost.:{p}/",
        f"http://LocalHost:{p}/",
        f"http://localhost:{site.port}/article",  # the allowed server under another name
        f"http://example.com@127.0.0.1:{p}/",
        "http://user:secret@example.com/",
        "file:///etc/passwd",
        f"gopher://127.0.0.1:{p}/_GET%20/",
        f"ftp://127.0.0.1:{p}/",
        f"dict://127.0.0.1:{p}/",
        "javascript:alert(1)",
        "//example.com/",
        f"{site.url}/to-marker",  # the allowed server redirects to loopback
        f"{site.url}/to-localhost",
        f"{site.url}/to-metadata",
        f"{site.url}/to-file",
        f"{site.url}/to-decimal",
    ]


def test_ssrf_payloads_are_all_refused_and_nothing_internal_is_reached(
    fetch_deps, marker, site, audit
):
    deps = fetch_deps()
    payloads = _ssrf_payloads(marker, site)
    assert len(payloads) >= 25
    for url in payloads:
        with pytest.raises(ToolFailed) as refused:
            _fetch(deps, url)
        assert refused.value.message.startswith("Refused:"), (url, refused.value.message)
        assert "INTERNAL" not in refused.value.message
    assert marker.seen == [], "no request reached the internal server"
    assert {s.path for s in site.seen} <= {
        "/to-marker",
        "/to-localhost",
        "/to-metadata",
        "/to-file",
        "/to-decimal",
    }
    denied = audit.query(tool="web_fetch", decision="policy-denied", limit=1000)
    assert len(denied) == len(payloads)
    assert all(row["status"] == "refused" and row["detail"] for row in denied)


def test_guard_reasons_name_the_address_class():
    assert blocked_reason("127.0.0.1") == "loopback"
    assert blocked_reason("::1") == "loopback"
    assert blocked_reason("10.1.2.3") == "private"
    assert blocked_reason("169.254.169.254") == "cloud metadata"
    assert blocked_reason("::ffff:192.168.0.1") == "private"
    assert blocked_reason("224.0.0.1") == "multicast"
    assert blocked_reason("93.184.215.14") is None
    assert blocked_reason("2606:4700::1111") is None


def test_domain_allow_list_applies_before_anything_else(fetch_deps, site, audit):
    deps = fetch_deps(web_allowed_domains=["example.org"])
    with pytest.raises(ToolFailed, match="not on the allowed domains list"):
        _fetch(deps, f"{site.url}/article")
    blocked = fetch_deps(web_blocked_domains=["127.0.0.1"])
    with pytest.raises(ToolFailed, match="blocked domains list"):
        _fetch(blocked, f"{site.url}/article")
    assert site.seen == []


def test_private_host_exemptions_are_exact_host_and_port():
    from co_kernel.exceptions import FetchRefused
    from co_kernel.tools._ssrf import check_url

    allowed = asyncio.run(check_url("http://127.0.0.1:8080/x", private_hosts=["127.0.0.1:8080"]))
    assert allowed.addresses == ("127.0.0.1",)
    v6 = asyncio.run(check_url("http://[::1]:8080/", private_hosts=["[::1]:8080"]))
    assert v6.addresses == ("::1",)
    for url in ("http://127.0.0.1:8081/", "http://localhost:8080/", "http://127.1:8080/"):
        with pytest.raises(FetchRefused, match="loopback"):
            asyncio.run(check_url(url, private_hosts=["127.0.0.1:8080"]))
