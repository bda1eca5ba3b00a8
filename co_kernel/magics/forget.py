"""Delete one memory by its id, for good.

`%forget 12` deletes memory 12. Tab after `%forget ` lists the ids.
"""

from __future__ import annotations

from ..inert import inert_text
from . import MagicContext, MagicError

USAGE = "%forget <id>"


async def run(ctx: MagicContext, args: str) -> str:
    import sqlite3

    from ..exceptions import DatabaseTooNew
    from ..memory import MemoryStore

    word = args.strip().lstrip("#")
    if not word:
        raise MagicError("%forget needs the id of a memory.")
    if not word.isdigit():
        raise MagicError(f"'{args.strip()}' is not a memory id: ids are numbers (Tab lists them).")
    memory_id = int(word)
    store = MemoryStore()
    try:
        memory = store.get(memory_id)
        if memory is None or not store.delete(memory_id):
            known = store.ids()
            if not known:
                raise MagicError(f"No memory has id {memory_id}: there are no memories saved.")
            nearest = min(known, key=lambda k: abs(k - memory_id))
            raise MagicError(f"No memory has id {memory_id}. Did you mean {nearest}?")
    except (sqlite3.Error, DatabaseTooNew) as exc:
        raise MagicError(f"The memory store could not be read ({exc}).") from None
    finally:
        store.close()
    preview = memory.text if len(memory.text) <= 120 else memory.text[:119] + "…"
    return f"Forgot memory {memory_id}: “{inert_text(preview)}”"


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    from ..memory import MemoryStore, memory_store_path

    if not memory_store_path().exists():
        return []  # completion must not create the database
    store = MemoryStore()
    try:
        return [str(i) for i in store.ids() if str(i).startswith(arg_text.strip())]
    finally:
        store.close()
