"""Markdown from outside rendered to HTML in which nothing can run (issue 39).

The browser tests show it in JupyterLab and Notebook 7; these pin the renderer's allowlist
on each payload kind, so a change to it shows here first.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

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
            if name in ("href", "src") and not re.match(r"(https?:|mailto:|[^:]*$)", value):
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
        '<pre class="highlight"><code><span class="k">def</span>',
        "<li>one</li>",
        "<ol>",
        "<blockquote>",
        '<a href="https://example.org/a?b=1" rel="noopener noreferrer nofollow">docs</a>',
        '<a href="mailto:a@b.c"',
        '<a href="notes/todo.md"',
        '<img src="https://example.org/c.png" alt="chart">',
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
    assert "<pre><code>&lt;b&gt;x&lt;/b&gt;\n</code></pre>" in html


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
