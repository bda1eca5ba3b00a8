"""Tab completion, Shift+Tab help and the console's "is this input complete?" for Co cells.

The kernel's ``do_complete``/``do_inspect``/``do_is_complete`` hand their arguments here and
send back what these functions return (reply contents of the Jupyter messaging protocol).
A plain cell is a prompt, so only magics complete; prose never does.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..frontend import safe_bundle
from . import (
    CELL_MAGICS,
    MAGICS,
    MagicContext,
    MagicError,
    find_magic,
    magic_completer,
    magic_help,
)

__all__ = ["complete_reply", "inspect_reply", "is_complete_reply"]

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\s*)(%%?)(\w*)$")
_ARGS = re.compile(r"^\s*%(\w+)\s+(.*)$", re.DOTALL)
_MAGIC_AT = re.compile(r"%(\w+)")


def _reply(matches: list[str], start: int, end: int) -> dict[str, Any]:
    return {
        "status": "ok",
        "matches": matches,
        "cursor_start": start,
        "cursor_end": end,
        "metadata": {},
    }


def _current_line(code: str, cursor_pos: int) -> tuple[str, int]:
    """The text of the cursor's line up to the cursor, and where that line starts."""
    line_start = code.rfind("\n", 0, cursor_pos) + 1
    return code[line_start:cursor_pos], line_start


def complete_reply(ctx: MagicContext | None, code: str, cursor_pos: int | None) -> dict[str, Any]:
    """complete_reply content: magic names after `%`, then each magic's arguments."""
    cursor = len(code) if cursor_pos is None else min(cursor_pos, len(code))
    line, line_start = _current_line(code, cursor)
    # Magics only count on the cell's first line, as the dispatcher reads them.
    if code[:line_start].strip():
        return _reply([], cursor, cursor)
    name_match = _NAME.match(line)
    if name_match:
        sign, prefix = name_match.group(2), name_match.group(3).lower()
        known = CELL_MAGICS if sign == "%%" else sorted(MAGICS)
        names = [f"{sign}{n}" for n in known if n.startswith(prefix)]
        return _reply(names, line_start + len(name_match.group(1)), cursor)
    args_match = _ARGS.match(line)
    if not args_match or ctx is None:
        return _reply([], cursor, cursor)
    name, arg_text = args_match.group(1).lower(), args_match.group(2)
    if name not in MAGICS:
        return _reply([], cursor, cursor)
    word = re.split(r"\s", arg_text)[-1]
    completer = magic_completer(find_magic(name))
    if completer is None:
        return _reply([], cursor, cursor)
    try:
        found = completer(ctx, word)
    except Exception:  # completion must never break the kernel or show an error
        log.debug("completion of %%%s failed", name, exc_info=True)
        found = []
    matches = [m for m in found if m.lower().startswith(word.lower())]
    return _reply(matches, cursor - len(word), cursor)


def inspect_reply(code: str, cursor_pos: int | None, detail_level: int = 0) -> dict[str, Any]:
    """inspect_reply content: the help of the magic the cursor is on."""
    cursor = len(code) if cursor_pos is None else min(cursor_pos, len(code))
    line_start = code.rfind("\n", 0, cursor) + 1
    line_end = code.find("\n", cursor)
    line = code[line_start : line_end if line_end != -1 else len(code)]
    name = None
    for match in _MAGIC_AT.finditer(line):
        if match.start() <= cursor - line_start <= match.end() or name is None:
            name = match.group(1).lower()
    if name is None:
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}
    try:
        text = magic_help(name)
    except MagicError:
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}
    usage = find_magic(name).USAGE
    markdown = f"**`{usage}`**\n\n{text.split(chr(10), 2)[-1].strip()}"
    return {
        "status": "ok",
        "found": True,
        # Co's own help text, but rendered like every other Markdown Co sends:
        # sanitised HTML, never raw Markdown a page would render with live HTML.
        "data": safe_bundle({"text/plain": text, "text/markdown": markdown}),
        "metadata": {},
    }


def is_complete_reply(code: str) -> dict[str, Any]:
    """is_complete_reply content for the console.

    A prompt is sent when the person presses Enter, except after a trailing backslash or
    inside an unclosed ``` code fence (pasted code), which continue on the next line.
    """
    stripped = code.rstrip("\n")
    if stripped.endswith("\\"):
        return {"status": "incomplete", "indent": ""}
    fences = sum(1 for line in stripped.splitlines() if line.lstrip().startswith("```"))
    if fences % 2:
        return {"status": "incomplete", "indent": ""}
    return {"status": "complete"}
