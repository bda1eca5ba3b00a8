"""Bring back a saved conversation, after a kernel restart or from another notebook.

`%resume` alone resumes the latest conversation of this notebook (or of this folder when
the notebook is unknown); `%resume 3f2a91c0` a given one (see `%sessions`; the first
characters of the id are enough). The conversation in this kernel is replaced; it stays
saved under its own id. The resumed conversation's model comes back too, when it can still
be used (its key set, its server answering); otherwise the current model stays; so does
its todo list (as its last `write_todos` left it).
When another kernel continues the same conversation, the one that saves second goes on as
a fork under a new id, so neither overwrites the other.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from ..exceptions import DatabaseTooNew
from ..inert import inert_block, inert_code, inert_text
from . import MagicContext, MagicError
from ._render import short_id, when

if TYPE_CHECKING:
    from ..turn import SessionProtocol

USAGE = "%resume [id]"


async def run(ctx: MagicContext, args: str) -> str:
    from ..store import SessionLookupError

    session = ctx.session
    previous = session.session_id if session.history and session.is_saved else None
    word = args.strip().split()[0] if args.strip() else None
    if word and word.lower() == session.session_id[: len(word)].lower() and len(word) >= 4:
        return f"This kernel is already in conversation `{short_id(session.session_id)}`."
    try:
        info = session.resume(word)
    except SessionLookupError as exc:
        raise MagicError(str(exc)) from None
    except (sqlite3.Error, OSError, DatabaseTooNew) as exc:
        store = session.store
        raise MagicError(store.failure(exc) if store else str(exc)) from None
    where = f" of {inert_text(info.notebook)}" if info.notebook else ""
    lines = [
        f"Resumed conversation `{short_id(info.id)}`{where}: {len(session.turns)} turn(s), "
        f"last used {when(info.updated)}."
    ]
    live = session.live_turns
    if live:
        lines.append(f"\nIt ended with:\n> {inert_text(live[-1].prompt.splitlines()[0][:200])}")
    from ..tools.todos import format_todos, todos_from_history

    # In place: the list is shared with everything holding the session's deps.
    session.todos[:] = todos_from_history(session.history)
    if session.todos:
        lines.append(f"\nIts todo list is back:\n{inert_block(format_todos(session.todos))}")
    restored = await _restore_model(session, info.model)
    if restored:
        lines.append(f"\n{restored}")
    if previous and previous != info.id:
        lines.append(f"\nThe conversation this kernel had stays saved as `{short_id(previous)}`.")
    return "\n".join(lines)


async def _restore_model(session: SessionProtocol, stored: str | None) -> str | None:
    """Switch to the model the conversation was saved with, if it can still be used."""
    from ..config import parse_model_string
    from ..exceptions import ConfigError
    from ..models import default_model_string
    from .model import check_model

    current = session.model.name
    if not stored:
        return None
    try:
        if current and parse_model_string(stored) == parse_model_string(current):
            return None
        origin = session.loaded.origins.get("model", "")
        if origin.startswith("managed"):
            return (
                f"It was answered by {inert_code(stored)}; Co keeps **{inert_text(current)}**, the model your "
                f"administrator set ({origin})."
            )
        if stored == default_model_string(session.settings):
            # It ran on the bundled model only because nothing was configured then; a model
            # configured or chosen since is the better one to go on with.
            return (
                f"It was answered by {inert_code(stored)}, Co's small default model; Co keeps "
                f"**{inert_text(current)}** (switch with `%model`)."
            )
        probe = await check_model(session, stored)
    except ConfigError as exc:
        ok, detail = False, str(exc)
    else:
        ok, detail = probe.ok, probe.detail
    if ok:
        return f"Its model **{inert_text(session.model.switch(stored))}** is in use again."
    keep = f"keeps **{inert_text(current)}**" if current else "has no model set"
    return (
        f"Its model {inert_code(stored)} cannot be used now ({inert_text(detail.rstrip('.'))}), "
        f"so Co {keep}; "
        "switch with `%model`."
    )


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    store = ctx.session.store
    if store is None or not store.path.exists():
        return []  # completion must not create the database
    ids = store.ids(limit=100)
    word = arg_text.strip().lower()
    out = []
    for sid in ids:
        if not sid.startswith(word):
            continue
        # The shortest prefix of at least 8 characters that no other id shares.
        n = 8
        while n < len(sid) and any(o != sid and o.startswith(sid[:n]) for o in ids):
            n += 1
        out.append(sid[:n])
    return out
