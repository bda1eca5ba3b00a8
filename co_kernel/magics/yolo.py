"""Turn session auto-approve on or off: approve every side-effectful tool call without asking.

`%yolo` toggles, `%yolo on` / `%yolo off` set it. It lasts until the kernel restarts or
`%yolo off`; choosing "approve all" on an approval card turns it on too. With it off,
shell commands outside `shell_safe_commands` and other side effects ask first. Where the
setting `allow_yolo` is false (an administrator's managed settings), it stays off.
"""

from __future__ import annotations

import difflib

from . import MagicContext, MagicError

USAGE = "%yolo [on|off]"

_VALUES = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False}


async def run(ctx: MagicContext, args: str) -> str:
    session = ctx.session
    word = args.strip().lower()
    if word and word not in _VALUES:
        close = difflib.get_close_matches(word, ["on", "off"], n=1)
        hint = f" Did you mean %yolo {close[0]}?" if close else ""
        raise MagicError(f"%yolo takes on or off, not '{args.strip()}'.{hint}")
    wanted = _VALUES[word] if word else not session.auto_confirm
    if wanted and not session.settings.allow_yolo:
        session.auto_confirm = False
        where = session.loaded.origins.get("allow_yolo", "default")
        who = "your administrator" if where.startswith("managed") else "your settings"
        raise MagicError(
            f"`%yolo` is turned off by {who} (`allow_yolo` is false, set by {where}): "
            "Co keeps asking before every side-effectful tool call."
        )
    session.auto_confirm = wanted
    if session.auto_confirm:
        return (
            "⚠️ Auto-approve is **on** for this session: Co runs side-effectful tool calls "
            "(shell commands, file edits, messages) without asking. `%yolo off` stops it."
        )
    return "Auto-approve is **off**: Co asks before every side-effectful tool call."


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    return [v for v in ("on", "off") if v.startswith(arg_text.strip().lower())]
