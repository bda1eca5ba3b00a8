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
- ``inert_text(text)``: plain prose (a description, an error, a memory) with every ASCII
  punctuation character backslash-escaped, which CommonMark defines as a literal.

Both show a line break and other control characters as visible symbols (``␊``) in a code
span, since a code span cannot hold a blank line or a line that starts a block; prose keeps
its lines as hard line breaks inside one paragraph. Inside a GFM table cell, pass
``table=True``: a ``|`` is escaped there too (GFM removes that backslash inside a code span).
"""

from __future__ import annotations

import re
import string

__all__ = ["inert_code", "inert_text"]

_PUNCTUATION = frozenset(string.punctuation)
_BACKTICKS = re.compile("`+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n|\u2028|\u2029|\x85")


def _visible(char: str) -> str:
    """A control character as a symbol one can read (``␊``, ``␉``, ``\\x9b``)."""
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "␡"
    return f"\\x{code:02x}"


def _controls_visible(text: str) -> str:
    return "".join(
        _visible(c) if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029" else c
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


def inert_text(text: object, *, limit: int | None = None, table: bool = False) -> str:
    """``text`` as plain prose in which nothing is Markdown: every ASCII punctuation
    character escaped, line breaks kept as hard breaks within one paragraph (blank lines
    and indentation dropped, as they would start a new block). ``table``: one line."""
    lines = [line.strip() for line in _LINE_BREAK.split(_cut(str(text), limit))]
    lines = [_controls_visible(line) for line in lines if line]
    escaped = ["".join("\\" + c if c in _PUNCTUATION else c for c in line) for line in lines]
    # A backslash at the end of a line is CommonMark's hard line break; a table row is one line.
    return (" " if table else "\\\n").join(escaped)
