"""Markdown from outside turned into HTML that cannot run script.

Everything Co shows as Markdown carries text it did not write: the model's answer (which
a web page, a file, an MCP result or a repository can steer), a provider's error, an MCP
tool's description, a memory, a file name. Published as ``text/markdown``, JupyterLab and
Notebook 7 render it *unsanitised*, because they trust the outputs of a cell the person
ran, and they keep that trust when the notebook is reopened: an ``<img onerror>`` in an
answer ran its script in the person's page, could click Approve and read the server's
token.

So Co never publishes ``text/markdown``. It renders the Markdown itself and publishes the
result as ``text/html`` (with the source as ``text/plain``):

1. markdown-it-py parses CommonMark plus tables and strikethrough, with math (``$…$``)
   kept as text for the page's MathJax, and code blocks highlighted by Pygments into
   class names (no inline style). Links and images keep only http(s), mailto and
   relative targets: ``javascript:``, ``data:``, ``file:`` and the rest stay as text.
2. Raw HTML in the text is allowed through markdown-it (a ``<br>`` in a table cell,
   ``<sub>``, ``<kbd>``, ``<details>``) and then everything, Co's own markup included,
   goes through nh3 (the Ammonia sanitiser, html5ever's parser) with an allowlist: no
   script, event handler, iframe, object, form, SVG or MathML, no ``style`` attribute
   but a table cell's ``text-align`` and a code block's one spacing (``_BLOCK_SPACING``),
   no ``id``/``name`` (no DOM clobbering), no ``<style>`` (removed with its content), no
   class but Pygments' and Co's own.
3. Images that would load from outside the page become placeholders that load on a
   person's click (``_remote_images.py``), but for the hosts the person allows.

An answer should read like the same Markdown in a Markdown cell, but the page styles it as
an HTML output: table cells flush right (for data frames) and code blocks without spacing.
Where the page's styles cannot be changed (nbconvert's export, a viewer without Co's
extension) only the element's own ``style`` can say otherwise, so Co's markup carries what
a Markdown cell's stylesheet gives: a cell's alignment (a header centred, data left, or
the table's own ``:---:``) and a top-level code block's margins.

Why render here rather than ask the page to sanitise: the page trusts a cell's outputs
whatever their type, every client (JupyterLab, Notebook 7, VS Code, nbconvert's HTML
export, a notebook viewer) would need its own fix, and a saved notebook carries the
output to them all. HTML that is safe by construction is safe in each of them, live,
after a reload and exported. What this costs: the page's own Markdown features that
need its parser (heading anchors) are not there.

Streaming sends a segment re-rendered whole at each update, so a tag cut in the middle
is only text until it is complete, and sanitised then.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._remote_images import rewrite_images

if TYPE_CHECKING:
    from pygments.lexer import Lexer

__all__ = [
    "JOINS_KEY",
    "MARKDOWN_CLASS",
    "list_item_lines",
    "markdown_blocks",
    "markdown_to_html",
    "needs_definitions",
    "reference_definitions",
    "safe_bundle",
    "warm_markdown",
]

MARKDOWN_CLASS = "co-markdown"
"""Class of the element that holds a rendered answer (the extension styles code in it)."""

_SCHEMES = ("http:", "https:", "mailto:")

_BLOCK_SPACING = "margin:1.5em 2em"
"""A top-level code block's margins in a Markdown cell (JupyterLab's and nbconvert's
``.jp-RenderedHTMLCommon > pre``): the only style a ``pre`` may carry, so text from
outside cannot move a block over what follows it."""
_JOINED = ("margin-top:0", "margin-bottom:0", "margin-top:0;margin-bottom:0")
"""A list's or paragraph's margins where a streamed answer was cut next to it
(``JOINS_KEY``): the only styles they may carry, so text from outside can only take a
margin away."""
_HEADING_TOP = "margin-top:var(--jp-content-heading-margin-top)"
"""A heading's top margin in the middle of an answer (JupyterLab's variable), which the
page halves for an output's first child; restored where the answer was cut before it."""
_JOINED_BLOCK_SPACING = "margin:1.5em 2em 0"
"""A top-level code block's margins when the answer was cut after it, before a block
with a top margin of its own."""
JOINS_KEY = "application/x.co-joins"
"""Key of a bundle to render whose ``text/markdown`` is one segment of a streamed answer: a
pair (above, below) saying which margin goes where it was cut, so that two outputs, whose
margins do not collapse, show the one gap a single output shows. Above: the first block,
a list, drops its top margin; a heading keeps the whole of its own (``_HEADING_TOP``).
Below: the last block (a paragraph, list or code block) drops its bottom margin.
Consumed by ``safe_bundle``; never sent."""
_CELL_ALIGN = {"th_open": "text-align:center", "td_open": "text-align:left"}
"""A table cell's alignment when the Markdown gives none, as a Markdown cell draws it (the
browser's own: headers centred, data at the start)."""

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark",
    "ol", "p", "pre", "q", "s", "samp", "small", "span", "strong", "sub", "summary", "sup",
    "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"style", "colspan", "rowspan"},
    "th": {"style", "colspan", "rowspan"},
    "ol": {"start"},  # a style only as _JOINED says (tag_attribute_values)
    "abbr": {"title"},
}


def _pygments_classes() -> set[str]:
    from pygments.token import STANDARD_TYPES

    return {name for name in STANDARD_TYPES.values() if name}


@functools.cache
def _cleaner() -> Any:
    import nh3

    return functools.partial(
        nh3.clean,
        tags=_TAGS,
        clean_content_tags={"script", "style"},
        attributes=_ATTRIBUTES,
        tag_attribute_values={
            "pre": {"style": {_BLOCK_SPACING, _JOINED_BLOCK_SPACING}},
            "ul": {"style": set(_JOINED)},
            "ol": {"style": set(_JOINED)},
            "p": {"style": {"margin-bottom:0"}},
            "div": {"style": {"margin-bottom:0"}},
            **{f"h{n}": {"style": {_HEADING_TOP}} for n in range(1, 7)},
        },
        url_schemes={s.rstrip(":") for s in _SCHEMES},
        # A ``style`` passes only where allowed above: a cell's, or a block's exact one.
        filter_style_properties={"text-align", "margin", "margin-top", "margin-bottom"},
        allowed_classes={
            "div": {MARKDOWN_CLASS, "math", "block", "inline"},
            "pre": {"highlight"},
            "span": _pygments_classes() | {"math", "inline"},
        },
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def _link_ok(url: str) -> bool:
    """http(s), mailto, a fragment or a relative path; never a script or data URL."""
    target = url.strip().lower()
    if target.startswith(_SCHEMES) or target.startswith(("#", "/", "./", "../")):
        return True
    # A relative path has no scheme: nothing before its first ":" ... "/" or "?" or "#".
    head = target.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return ":" not in head


def _highlight(code: str, lang: str, _attrs: str) -> str:
    """Pygments spans by class name; "" lets markdown-it escape the code itself."""
    from pygments.util import ClassNotFound

    if not lang:
        return ""
    try:
        lexer = _lexer(lang.split()[0].lower())
    except ClassNotFound:
        return ""
    body = _token_spans(lexer.get_tokens(code))
    # Starting with "<pre", it is used as the whole block (nbconvert styles .highlight).
    return f'<pre class="highlight"><code>{body}</code></pre>'


_STYLED = frozenset(
    "c ch cm cp cpf c1 cs k kc kd kn kp kr kt m mb mf mh mi mo il o ow p err "  # noqa: SIM905 - a line reads better than a column
    "s sa sb sc dl sd s2 se sh si sx sr s1 ss gd gi gh gu ge gs".split()
)
"""Pygments classes whose text is kept in a span: the ones JupyterLab colours
(jupyterlab_pygments' stylesheet) for comments, keywords, numbers, strings, operators,
punctuation and a lexer's error, and a diff's lines. Names (plain text there) and
whitespace go bare, and a run of one class is one span: a span per token made code five
times its source as HTML, which a notebook keeps and a streamed answer sends."""


def _token_spans(tokens: Iterable[tuple[Any, str]]) -> str:
    """Pygments tokens as HTML: a span per run of same-class text, none for unstyled text."""
    from pygments.token import STANDARD_TYPES

    parts: list[str] = []
    run_class, run = "", list[str]()
    for ttype, value in [*tokens, (None, "")]:
        css = ""
        if ttype is not None:
            while ttype not in STANDARD_TYPES:  # a lexer's own subtype: its parent's class
                ttype = ttype.parent
            css = STANDARD_TYPES[ttype] if STANDARD_TYPES[ttype] in _STYLED else ""
            if not value.strip():
                css = ""  # whitespace shows no colour of its own
        if ttype is not None and css == run_class:
            run.append(value)
            continue
        text = html.escape("".join(run), quote=False)
        parts.append(f'<span class="{run_class}">{text}</span>' if run_class and text else text)
        run_class, run = css, [value]
    return "".join(parts)


@functools.lru_cache(maxsize=64)
def _lexer(name: str) -> Lexer:
    from pygments import lexers

    # Pygments' stubs leave the options (the lexer's settings) untyped.
    return lexers.get_lexer_by_name(name, stripnl=False)  # pyright: ignore[reportUnknownMemberType]


def _math(content: str, options: dict[str, Any]) -> str:
    # The delimiters stay, escaped, for the page's MathJax to typeset; the plugin's element
    # around them keeps Markdown (``*``, ``_``) out of the formula.
    delimiter = "$$" if options.get("display_mode") else "$"
    return f"{delimiter}{html.escape(content)}{delimiter}"


def _align_cells(state: Any) -> None:
    """Give each table cell without an alignment the one a Markdown cell shows."""
    for token in state.tokens:
        style = _CELL_ALIGN.get(token.type)
        if style and not token.attrGet("style"):
            token.attrSet("style", style)


def _spaced(rule: Any) -> Any:
    """A code block renderer whose top-level blocks carry a Markdown cell's margins (a
    block inside a list or quote has none there either)."""

    def render(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        out: str = rule(renderer, tokens, idx, options, env)
        if tokens[idx].level == 0:
            spacing = _JOINED_BLOCK_SPACING if tokens[idx].meta.get(_JOINED_KEY) else _BLOCK_SPACING
            out = out.replace("<pre", f'<pre style="{spacing}"', 1)
        return out

    return render


@functools.cache
def _parser() -> Any:
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": True, "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    md.use(
        dollarmath_plugin,
        allow_labels=False,
        allow_space=False,
        allow_digits=False,  # "$5 and $10" is money, not math
        renderer=_math,
    )
    md.validateLink = _link_ok
    md.core.ruler.push("co_align_cells", _align_cells)
    for kind in ("fence", "code_block"):
        md.add_render_rule(kind, _spaced(getattr(RendererHTML, kind)))
    return md


_LIST_OPEN = ("bullet_list_open", "ordered_list_open")
_CODE = ("fence", "code_block")
_JOINED_KEY = "co_joined_below"
"""A code block token's meta flag: its bottom margin goes (``_spaced``)."""


def _join(tokens: Any, joins: tuple[bool, bool]) -> None:
    """Take off the margins ``joins`` names (see ``JOINS_KEY``)."""
    top = [t for t in tokens if t.level == 0 and t.nesting >= 0]
    if not top:
        return
    styles: dict[int, list[str]] = {}
    if joins[0] and top[0].type in _LIST_OPEN:
        styles.setdefault(id(top[0]), []).append("margin-top:0")
    elif joins[0] and top[0].type == "heading_open":
        styles.setdefault(id(top[0]), []).append(_HEADING_TOP)
    if joins[1]:
        last = top[-1]
        if last.type in _CODE:
            last.meta[_JOINED_KEY] = True
        elif last.type in (*_LIST_OPEN, "paragraph_open"):
            styles.setdefault(id(last), []).append("margin-bottom:0")
    for token in top:
        if id(token) in styles:
            token.attrSet("style", ";".join(styles[id(token)]))


def markdown_to_html(
    text: str, image_hosts: Iterable[str] = (), joins: tuple[bool, bool] = (False, False)
) -> str:
    """``text`` rendered to HTML in which nothing can run, inside a ``co-markdown`` div.

    No image loads from outside the page but from ``image_hosts`` (the person's
    ``image_hosts`` setting); the others are placeholders a click loads. ``joins``: see
    ``JOINS_KEY``.
    """
    md = _parser()
    env: dict[str, Any] = {}
    tokens = md.parse(text, env)
    if any(joins):
        _join(tokens, joins)
    rendered = md.renderer.render(tokens, md.options, env)
    # The page gives an output's last child a bottom margin of its own (JupyterLab's
    # ``.jp-RenderedHTMLCommon > *:last-child``, 0.5em), which the last block's collapses
    # into; where that block dropped its margin, so does the answer's element.
    spacing = ' style="margin-bottom:0"' if joins[1] else ""
    cleaned = _cleaner()(f'<div class="{MARKDOWN_CLASS}"{spacing}>{rendered}</div>')
    return rewrite_images(cleaned, image_hosts)


def markdown_blocks(text: str) -> list[tuple[str, int]]:
    """The top-level blocks of ``text`` as the renderer parses it: (kind, first line).

    ``kind`` is markdown-it's token type without ``_open`` (paragraph, heading, fence,
    bullet_list, table, ...); lines count from 0.
    """
    return [
        (token.type.removesuffix("_open"), token.map[0])
        for token in _parser().parse(text)
        if token.level == 0 and token.nesting >= 0 and token.map
    ]


def list_item_lines(text: str) -> list[int]:
    """First lines of the items of ``text``'s last top-level block if it is a tight list
    (no blank line between its items, so a run of its items renders as the whole list does:
    a loose list's single item would render tight), else []."""
    tokens = _parser().parse(text)
    opens = [i for i, t in enumerate(tokens) if t.level == 0 and t.nesting == 1]
    if not opens or tokens[opens[-1]].type not in _LIST_OPEN:
        return []
    items = tokens[opens[-1] :]
    if any(t.type == "paragraph_open" and not t.hidden for t in items):
        return []
    return [t.map[0] for t in items if t.type == "list_item_open" and t.level == 1 and t.map]


def reference_definitions(text: str) -> str:
    """The link reference definitions of ``text`` (``[label]: url "title"``), one per line,
    or "" when it has none: what a part of ``text`` needs to render its ``[x][label]`` as the
    whole text does, since a definition applies to the whole document wherever it stands."""
    env: dict[str, Any] = {}
    _parser().parse(text, env)
    lines: list[str] = []
    for label, ref in env.get("references", {}).items():
        title = ref.get("title") or ""
        escaped = title.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f"[{label}]: <{ref['href']}>" + (f' "{escaped}"' if title else ""))
    return "\n".join(lines)


def needs_definitions(segment: str, definitions: str) -> bool:
    """Whether ``definitions`` (``reference_definitions``) written after ``segment`` change
    how it renders, and stay definitions there (not swallowed by a block the segment leaves
    open, such as a fence)."""
    if "[" not in segment:
        return False
    extended = f"{segment}\n\n{definitions}"
    last = segment.count("\n") + 2  # the segment and the blank line after it
    if any(t.map and t.map[1] > last for t in _parser().parse(extended) if t.level == 0):
        return False
    return markdown_to_html(extended) != markdown_to_html(segment)


def safe_bundle(data: dict[str, Any], image_hosts: Iterable[str] = ()) -> dict[str, Any]:
    """A MIME bundle with its ``text/markdown`` replaced by safe ``text/html``.

    A bundle without Markdown is returned as it is. The caller says what ``text/plain``
    goes with it (usually the source, for clients that show text); it is not added here,
    so a streamed update can leave it out.
    """
    source = data.get("text/markdown")
    if not isinstance(source, str):
        return data
    out = {k: v for k, v in data.items() if k not in ("text/markdown", JOINS_KEY)}
    above, below = data.get(JOINS_KEY) or (False, False)
    out["text/html"] = markdown_to_html(source, image_hosts, (bool(above), bool(below)))
    return out


def warm_markdown() -> None:
    """Build the parser and the sanitiser now, off the first answer's path."""
    markdown_to_html("**warm** `up`\n\n```python\nx = 1\n```\n\n| a |\n|---|\n| $x$ |\n")
