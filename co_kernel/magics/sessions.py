"""List saved conversations: when, which notebook, how many turns, how they started.

Every conversation is saved after each turn. `%sessions` shows the 20 most recent,
`%sessions all` every one; `%resume <id>` brings one back (the first characters of the id
are enough).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..exceptions import DatabaseTooNew
from . import MagicContext, MagicError
from ._render import Md, short_id, table, when

USAGE = "%sessions [all|N]"

_DEFAULT = 20


def _limit(args: str) -> int | None:
    word = args.strip().lower()
    if not word:
        return _DEFAULT
    if word == "all":
        return None
    if word.isdigit() and int(word) > 0:
        return int(word)
    raise MagicError(f"%sessions takes 'all' or a number, not '{args.strip()}'.")


async def run(ctx: MagicContext, args: str) -> str:
    limit = _limit(args)
    session = ctx.session
    store = session.store
    if store is None:
        return "Saving sessions is off (setting `save_sessions`)."
    try:
        total = store.count()
        infos = store.recent(limit)
    except (sqlite3.Error, OSError, DatabaseTooNew) as exc:
        raise MagicError(store.failure(exc)) from None
    if not infos:
        return "No conversation is saved yet: each one is saved after its first turn."
    here = session.notebook_path
    rows = []
    for info in infos:
        mark = " ← this one" if info.id == session.session_id else ""
        notebook = info.notebook or f"{Path(info.workspace).name}/ (notebook unknown)"
        if here and info.notebook == here and not mark:
            notebook += " (this notebook)"
        rows.append(
            (
                Md(f"`{short_id(info.id)}`{mark}"),
                when(info.updated),
                notebook,
                info.turns,
                info.first_prompt or "",
            )
        )
    head = f"**Saved sessions**: {len(infos)} of {total}, most recent first."
    more = ""
    if len(infos) < total:
        more = "\n\n`%sessions all` lists every one."
    tail = "\n\n`%resume <id>` brings one back; `%resume` alone, the latest of this notebook."
    return (
        head
        + "\n\n"
        + table(["id", "updated", "notebook", "turns", "first prompt"], rows)
        + more
        + tail
    )


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    return [w for w in ("all",) if w.startswith(arg_text.strip().lower())]
