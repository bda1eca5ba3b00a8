"""Outside text made inert inside Co's own Markdown: the one escaping helper.

Co's notices, cards, status lines and magic tables are Markdown that Co writes, and they
name things Co did not write: a settings key from a project file, a file name, an MCP
server's name or description, a memory, a session title, a provider's error. Put there as
they are, such names become Markdown structure (an image the page fetches before the person
trusted anything, a link, emphasis, a heading, a table cell break, HTML). Everything from
outside goes through one of these two functions instead:

- ``inert_code(text)``: a code span (names, paths, values, command lines): its backtick
  fence is longer than any backtick run in the text, and it is padded with a space where
  CommonMark would otherwise read a backtick or strip a space at an end;
- ``inert_block(text)``: a fenced code block, for what must be read whole however long
  (a command line a folder would run): the page scrolls it instead of cutting it;
- ``inert_text(text)``: plain prose (a description, an error, a memory) with every
  character that can open Markdown structure backslash-escaped (CommonMark reads an
  escaped punctuation character as itself): the inline ones anywhere, those that open a
  block (``#``, ``-``, ``1.``, ...) at the start of a line. The rest stays as it is, so the
  source still reads well as plain text (a console, ``text/plain``).

Both show a line break and other control characters as visible symbols (``␊``) in a code
span, since a code span cannot hold a blank line or a line that starts a block; prose keeps
its lines as hard line breaks inside one paragraph. Inside a GFM table cell, pass
``table=True``: a ``|`` is escaped there too (GFM removes that backslash inside a code span).
"""

from __future__ import annotations

import re

__all__ = ["control_picture", "escaped_forms", "inert_block", "inert_code", "inert_text"]

_INLINE = frozenset("\\`*_[]<>&|#")
"""Escaped anywhere: escapes, code, emphasis, links and images, HTML and autolinks,
entities, table cells; ``>`` and ``#`` too (a quote or a heading where a line starts, and a
heading's closing ``#`` at its end)."""
_PAIRED = frozenset("$")
"""Escaped where the text has two (math takes a ``$`` at each end): a lone one (``${VAR}``,
``$5``) stays as written. A ``~`` is escaped only next to another (strikethrough is
``~~``), so ``~5 tokens`` stays too."""
_LINE_START = re.compile(r"^(?:[+-](?=\s|$)|[=-](?=[\s=-]*$)|\d{1,9}(?=[.)](?:\s|$)))")
"""What opens a block at a line's start once the above are escaped: a list item (``-``,
``+``, ``1.``, ``1)`` and a space), a thematic break or setext underline (a line of ``-`` or
``=``). ``-5``, ``1.7 s`` open nothing and stay as written."""
_BACKTICKS = re.compile("`+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n|\u2028|\u2029|\x85")


def control_picture(char: str) -> str:
    """A control or hidden character as a mark one can read: the Unicode control pictures
    for C0 (``␛``, ``␊``) and DEL (``␡``), ``⟨U+009B⟩`` for the rest (C1 controls, line
    separators, bidi and zero-width characters have no pictures)."""
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "␡"
    return f"⟨U+{code:04X}⟩"


def _controls_visible(text: str) -> str:
    return "".join(
        control_picture(c) if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029" else c
        for c in text
    )


def _cut(text: str, limit: int | None) -> str:
    if limit is not None and len(text) > limit:
        return text[: max(limit - 1, 0)] + "…"
    return text


def inert_code(text: object, *, limit: int | None = None, table: bool = False) -> str:
    """``text`` as one inline code span that no text can close or break: a name, a path,
    a value, a command line from outside. Cut to ``limit`` characters (``…``) if given."""
    shown = _controls_visible(_cut(str(text), limit))
    if not shown:
        return "` `"  # an empty code span is not one: show a blank one
    longest = max((len(run) for run in _BACKTICKS.findall(shown)), default=0)
    fence = "`" * (longest + 1)
    # CommonMark strips one space from each end when both ends are spaces, and a backtick
    # at an end would join the fence: pad then, so the text reads exactly as it is.
    pad = (
        shown[0] == "`"
        or shown[-1] == "`"
        or (shown[0] == " " and shown[-1] == " " and shown.strip(" ") != "")
    )
    body = f" {shown} " if pad else shown
    if table:
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def inert_block(text: object, *, indent: str = "") -> str:
    """``text`` as a fenced code block that no line of it can close, its lines kept and
    their control characters made visible; ``indent`` starts every line but the first
    (a list item's continuation)."""
    lines = [_controls_visible(line) for line in _LINE_BREAK.split(str(text))]
    longest = max((len(run) for run in _BACKTICKS.findall("".join(lines))), default=0)
    fence = "`" * max(3, longest + 1)
    return f"\n{indent}".join([fence, *lines, fence])


def _escape_inline(text: str, whole: str | None = None) -> str:
    """``text`` escaped; ``whole``: all the text it is a line of (pairs count across lines)."""
    escaped = _INLINE | {c for c in _PAIRED if (text if whole is None else whole).count(c) > 1}
    out = []
    for i, c in enumerate(text):
        # An underscore inside a word (snake_case, a_path) can neither open nor close
        # emphasis in CommonMark: left as it is, the source stays readable.
        inside = (
            c == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
        )
        tilde = c == "~" and "~" in text[max(i - 1, 0) : i] + text[i + 1 : i + 2]
        out.append("\\" + c if (c in escaped and not inside) or tilde else c)
    return "".join(out)


def _escape_start(match: re.Match[str]) -> str:
    opener = match.group()
    # "12." is escaped at its dot: a digit has no escape of its own.
    return opener + "\\" if opener[0].isdigit() else "\\" + opener


def escaped_forms(text: str) -> set[str]:
    """How ``text`` can appear in Markdown that went through ``inert_text``: as it is, and
    escaped mid-line and at a line's start. A redactor looks for a secret in each form."""
    forms = {text}
    # Whether a lone ``$`` is escaped depends on the text around it: both ways.
    for inline in (_escape_inline(text, whole=""), _escape_inline(text, whole="$$")):
        forms |= {inline, _LINE_START.sub(_escape_start, inline)}
    return forms


def inert_text(text: object, *, limit: int | None = None, table: bool = False) -> str:
    """``text`` as plain prose in which nothing is Markdown structure, cut to ``limit``
    characters if given; line breaks kept as hard breaks within one paragraph (blank lines
    and indentation dropped, as they would start a new block). ``table``: one line."""
    lines = [line.strip() for line in _LINE_BREAK.split(_cut(str(text), limit).replace("\t", " "))]
    lines = [_controls_visible(line) for line in lines if line]
    whole = "\n".join(lines)
    escaped = [_LINE_START.sub(_escape_start, _escape_inline(line, whole)) for line in lines]
    # A backslash at the end of a line is CommonMark's hard line break; a table row is one line.
    return (" " if table else "\\\n").join(escaped)
