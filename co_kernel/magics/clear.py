"""Empty the conversation and start a new one; the old one stays saved.

`%clear` forgets every turn so the next prompt starts fresh. The conversation you had is
kept in the session store: `%resume <id>` brings it back. The agent's todo list is
emptied too. Settings, the model and `%yolo` stay as they are.
"""

from __future__ import annotations

from . import MagicContext, MagicError
from ._render import short_id

USAGE = "%clear"


async def run(ctx: MagicContext, args: str) -> str:
    if args:
        raise MagicError(f"%clear takes no arguments (got '{args}').")
    session = ctx.session
    turns = len(session.turns)
    if not session.history and not session.todos:
        return "The conversation is already empty."
    saved = session.is_saved
    old = session.clear()
    kept = (
        f" It stays saved as `{short_id(old)}`: `%resume {short_id(old)}` brings it back."
        if saved
        else ""
    )
    return f"Cleared the conversation ({turns} turn(s)); the next prompt starts fresh.{kept}"
