"""Long-term memory: save (with approval), recall and list facts across sessions.

The store is ``co_kernel.memory`` (SQLite + FTS5); dedup and decay are in
``co_kernel.memory._lifecycle``. Always available: it needs no configuration. The tools
are coroutines so every store access happens on the event loop's thread.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pydantic_ai import ApprovalRequired, ModelRetry, RunContext, Tool
from pydantic_ai.toolsets import FunctionToolset

from ..memory import (
    Memory,
    MemoryStore,
    clean_tags,
    find_duplicate,
    memory_store_path,
    prompt_section,
    save,
)
from ..session_state import (  # at run time: pydantic-ai reads the tools' annotations
    CoDeps,
    ExtrasKey,
)
from . import ToolsetBuild
from ._errors import session_redactor
from ._paging import paginate, result

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["build", "list_memories", "memory_prompt", "recall_memory", "save_memory"]

PAGE = 10
MAX_CHARS = 1000


_STORE = ExtrasKey[MemoryStore]("memory_store")
"""The session's memory store, opened on first use."""


def store_for(deps: CoDeps, *, create: bool = True) -> MemoryStore | None:
    """The session's memory store (opened once); None when absent and not to be created."""
    store = deps.extras.get(_STORE)
    if store is not None:
        return store
    path = memory_store_path()
    if not create and not path.exists():
        return None  # reading the prompt must not create a database
    # Asked on every write: the session's secrets may grow (an edited settings file).
    store = MemoryStore(path, redact=lambda text: session_redactor(deps).redact(text))
    deps.extras[_STORE] = store
    return store


def _store(deps: CoDeps) -> MemoryStore:
    store = store_for(deps)
    assert store is not None
    return store


def _age(memory: Memory) -> str:
    days = (time.time() - memory.updated) / 86_400
    if days < 1:
        return "today"
    return f"{int(days)} day{'s' if int(days) != 1 else ''} ago"


def _line(memory: Memory) -> str:
    tags = f" ({', '.join('#' + t for t in memory.tags)})" if memory.tags else ""
    return f"- [{memory.id}] {memory.text}{tags} · {_age(memory)}"


def _check(text: str) -> str:
    text = text.strip()
    if not text:
        raise ModelRetry("The memory is empty; give the fact to remember.")
    if len(text) > MAX_CHARS:
        raise ModelRetry(f"Keep a memory to one fact under {MAX_CHARS} characters.")
    return text


async def _preview(ctx: RunContext[CoDeps], text: str, tags: list[str] | None = None) -> None:
    # Before the approval prompt: the card says whether this adds or updates a memory.
    if ctx.tool_call_approved:
        return
    text = _check(text)
    duplicate = find_duplicate(_store(ctx.deps), text, ctx.deps.settings)
    shown_tags = f"\ntags: {', '.join(clean_tags(tags))}" if clean_tags(tags) else ""
    if duplicate is None:
        detail = f"New memory:\n+ {text}{shown_tags}"
    else:
        old, score = duplicate
        detail = (
            f"Updates memory {old.id} ({score}% similar, saved {_age(old)}):\n"
            f"- {old.text}\n+ {text}{shown_tags}"
        )
    raise ApprovalRequired(metadata={"detail": detail})


async def save_memory(
    ctx: RunContext[CoDeps], text: str, tags: list[str] | None = None
) -> dict[str, Any]:
    """Remember one fact about the user or their work for later sessions (asks first).

    Args:
        text: The fact, as one short self-contained sentence.
        tags: A few words to group it by, e.g. ["preferences"].
    """
    outcome = save(_store(ctx.deps), _check(text), tags, ctx.deps.settings)
    memory = outcome.memory
    if outcome.replaced is not None:
        display = (
            f"Updated memory {memory.id} instead of adding a near-duplicate "
            f"({outcome.similarity}% similar): {memory.text}"
        )
    else:
        display = f"Saved memory {memory.id}: {memory.text}"
    decayed = outcome.decay
    if decayed.removed:
        how = (
            f"summarized into memory {decayed.summary_id}"
            if decayed.summary_id is not None
            else "deleted"
        )
        display += (
            f"\n{len(decayed.removed)} oldest memories {how} "
            f"(memory_max_count = {ctx.deps.settings.memory_max_count})."
        )
    return result(
        display,
        count=1,
        id=memory.id,
        updated=outcome.replaced is not None,
        decayed=len(decayed.removed),
    )


async def recall_memory(ctx: RunContext[CoDeps], query: str, page: int = 1) -> dict[str, Any]:
    """Find saved memories about something (full-text search, best matches first).

    ``count`` is the number of memories on this page; ``has_more`` says whether the
    next page has any.

    Args:
        query: Words to look for.
        page: Page of results (10 per page), starting at 1.
    """
    if not query.strip():
        raise ModelRetry("Give some words to look for, or use list_memories.")
    store = _store(ctx.deps)
    # Only as many as this page needs, plus one to know whether more exist: bm25 ranks
    # every match either way, but SQLite's top-N sort is far cheaper for a small LIMIT.
    found = store.search(query, limit=page * PAGE + 1)
    shown = found[(page - 1) * PAGE : page * PAGE]
    has_more = len(found) > page * PAGE
    if not shown:
        if page > 1 and found:
            return result(
                f'No more memories about "{query}" after page {page - 1}.', count=0, page=page
            )
        return result(f'No memories about "{query}".', count=0, page=page)
    more = f"; more on page {page + 1}" if has_more else ""
    lines = [f'Memories about "{query}", best first (page {page}{more}):']
    lines += [_line(m) for m in shown]
    return result(
        "\n".join(lines),
        count=len(shown),
        page=page,
        has_more=has_more,
        ids=[m.id for m in shown],
    )


async def list_memories(
    ctx: RunContext[CoDeps], tag: str | None = None, page: int = 1
) -> dict[str, Any]:
    """List saved memories, newest first.

    Args:
        tag: Only memories with this tag.
        page: Page of the list (10 per page), starting at 1.
    """
    memories = _store(ctx.deps).list()
    wanted = clean_tags([tag] if tag else [])
    if wanted:
        memories = [m for m in memories if wanted[0] in m.tags]
    part = paginate(memories, page, PAGE)
    label = f" tagged #{wanted[0]}" if wanted else ""
    if not part.total:
        return result(f"No memories{label} saved.", count=0, page=page)
    if (end := part.past_end()) is not None:
        return end
    lines = [f"{part.total} memories{label} (page {page} of {part.pages}):"]
    lines += [_line(m) for m in part.items]
    return result("\n".join(lines), count=part.total, page=page, has_more=part.has_more)


def memory_prompt(deps: CoDeps, prompt: str | None) -> str:
    """The system prompt's memory section: relevant to ``prompt``, then recent."""
    import sqlite3

    from ..exceptions import DatabaseTooNew

    count = deps.settings.memory_prompt_count
    if count <= 0:
        return ""
    store = store_for(deps, create=False)
    if store is None:
        return ""
    try:
        return prompt_section(store, prompt, count)
    except (sqlite3.Error, DatabaseTooNew):  # locked, damaged or newer: the turn goes on
        return ""


def build(settings: Settings) -> ToolsetBuild:
    """The memory toolset; always available."""
    tools: list[Tool[Any]] = [
        Tool(save_memory, requires_approval=True, args_validator=_preview),
        Tool(recall_memory),
        Tool(list_memories),
    ]
    return ToolsetBuild(
        "memory",
        FunctionToolset(tools),
        approval={"save_memory": True, "recall_memory": False, "list_memories": False},
    )
