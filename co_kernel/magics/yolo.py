"""Turn session auto-approve on or off: approve every side-effectful tool call without asking.

`%yolo` toggles, `%yolo on` / `%yolo off` set it. It lasts until the kernel restarts or
`%yolo off`; choosing "approve all" on an approval card turns it on too. With it off,
shell commands outside `shell_safe_commands` and other side effects ask first.
"""

from __future__ import annotations

import difflib

from . import MagicContext, MagicError

USAGE = "%yolo [on|off]"

_VALUES = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False}


async def run(ctx: MagicContext, args: str) -> str:
    session = ctx.session
    word = args.strip().lower()
    if not word:
        session.auto_confirm = not session.auto_confirm
    elif word in _VALUES:
        session.auto_confirm = _VALUES[word]
    else:
        close = difflib.get_close_matches(word, ["on", "off"], n=1)
        hint = f" Did you mean %yolo {close[0]}?" if close else ""
        raise MagicError(f"%yolo takes on or off, not '{args.strip()}'.{hint}")
    if session.auto_confirm:
        return (
            "⚠️ Auto-approve is **on** for this session: Co runs side-effectful tool calls "
            "(shell commands, file edits, messages) without asking. `%yolo off` stops it."
        )
    return "Auto-approve is **off**: Co asks before every side-effectful tool call."


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    return [v for v in ("on", "off") if v.startswith(arg_text.strip().lower())]
