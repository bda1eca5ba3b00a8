"""What happens to memories over time (the ``memory_*`` settings), on top of the store.

- Dedup: a new memory that is at least ``memory_dedup_threshold`` similar (0-100) to one
  saved or updated within ``memory_dedup_window_days`` replaces that memory's text (tags
  are merged) instead of adding a near-copy.
- Decay: past ``memory_max_count``, the least recently updated memories decay, at least
  ``memory_decay_percentage`` of the maximum at once so decay does not run on every save.
  ``cut`` deletes them; ``summarize`` folds them into one consolidated memory (an
  extractive summary: the first sentence of each, so no model call is needed).
- Prompt: the memories most relevant to the prompt, then the most recent, as a section
  of the system prompt.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

from ._store import Memory, MemoryStore

if TYPE_CHECKING:
    from ..config import Settings

__all__ = [
    "Decay",
    "SaveOutcome",
    "clean_tags",
    "decay",
    "find_duplicate",
    "prompt_section",
    "save",
    "similarity",
]

_WORDS = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?])\s")
_DAY = 86_400.0
SUMMARY_TAG = "summary"
_SUMMARY_CHARS = 1500
_CANDIDATES = 20


@dataclass
class Decay:
    """What a decay pass did."""

    removed: list[int] = field(default_factory=list)
    """Ids of the memories that decayed."""
    summary_id: int | None = None
    """Id of the consolidated memory (``summarize`` only)."""


@dataclass
class SaveOutcome:
    """What saving a memory did."""

    memory: Memory
    """The memory as stored now."""
    replaced: Memory | None = None
    """The near-duplicate it updated, as it was before."""
    similarity: int | None = None
    """How similar the near-duplicate was (0-100)."""
    decay: Decay = field(default_factory=Decay)
    """Decay that the save triggered."""


def clean_tags(tags: list[str] | None) -> list[str]:
    """Tags lower-cased, without '#', without blanks or repeats."""
    out = (t.strip().lstrip("#").strip().lower() for t in tags or [])
    return sorted({t for t in out if t})


def similarity(a: str, b: str) -> int:
    """0-100: how alike two memories read, ignoring case, punctuation and word order."""
    wa = " ".join(sorted(_WORDS.findall(a.lower())))
    wb = " ".join(sorted(_WORDS.findall(b.lower())))
    if not wa or not wb:
        return 0
    return round(100 * SequenceMatcher(None, wa, wb, autojunk=False).ratio())


def find_duplicate(
    store: MemoryStore, text: str, settings: Settings, *, now: float | None = None
) -> tuple[Memory, int] | None:
    """The most similar memory within the dedup window above the threshold, if any."""
    cutoff = (now or time.time()) - settings.memory_dedup_window_days * _DAY
    best: tuple[Memory, int] | None = None
    for candidate in store.search(text, limit=_CANDIDATES):
        if max(candidate.created, candidate.updated) < cutoff:
            continue
        score = similarity(text, candidate.text)
        if score >= settings.memory_dedup_threshold and (best is None or score > best[1]):
            best = (candidate, score)
    return best


def _first_sentence(text: str, limit: int = 160) -> str:
    first = _SENTENCE.split(text.strip(), maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"


def decay(store: MemoryStore, settings: Settings) -> Decay:
    """Decay the least recently updated memories when there are more than the maximum."""
    memories = store.list()
    limit = settings.memory_max_count
    if len(memories) <= limit:
        return Decay()
    summarize = settings.memory_decay_strategy == "summarize"
    # Enough to get back under the maximum (the summary counts as one), and at least
    # the configured share, so a full store does not decay again on every save.
    overflow = len(memories) - limit + (1 if summarize else 0)
    count = min(
        len(memories) - 1, max(overflow, math.ceil(limit * settings.memory_decay_percentage))
    )
    oldest = sorted(memories, key=lambda m: (m.updated, m.id))[:count]
    result = Decay(removed=[m.id for m in oldest])
    if summarize:
        oldest.sort(key=lambda m: m.id)
        lines = [f"- {_first_sentence(m.text)}" for m in oldest]
        head = f"Summary of {len(oldest)} older memories:"
        body = "\n".join(lines)
        if len(body) > _SUMMARY_CHARS:
            body = body[:_SUMMARY_CHARS].rsplit("\n", 1)[0] + "\n- …"
        tags = {t for m in oldest for t in m.tags if t != SUMMARY_TAG}
        kept = sorted(tags)[:10]
        result.summary_id = store.add(f"{head}\n{body}", [SUMMARY_TAG, *kept])
    for memory in oldest:
        store.delete(memory.id)
    return result


def save(store: MemoryStore, text: str, tags: list[str] | None, settings: Settings) -> SaveOutcome:
    """Save a memory, updating a near-duplicate instead when there is one; then decay."""
    tags = clean_tags(tags)
    duplicate = find_duplicate(store, text, settings)
    if duplicate is not None:
        old, score = duplicate
        store.update(old.id, text=text, tags=sorted({*old.tags, *tags}))
        saved = store.get(old.id)
        outcome = SaveOutcome(saved or old, replaced=old, similarity=score)
    else:
        new_id = store.add(text, tags)
        saved = store.get(new_id)
        assert saved is not None
        outcome = SaveOutcome(saved)
    outcome.decay = decay(store, settings)
    return outcome


def prompt_section(store: MemoryStore, prompt: str | None, count: int) -> str:
    """The memories most relevant to ``prompt``, then the most recent, as Markdown."""
    if count <= 0:
        return ""
    chosen: dict[int, Memory] = {}
    if prompt:
        for memory in store.search(prompt, limit=count):
            chosen.setdefault(memory.id, memory)
    if len(chosen) < count:
        for memory in store.list(limit=count):
            if len(chosen) >= count:
                break
            chosen.setdefault(memory.id, memory)
    if not chosen:
        return ""
    lines = []
    for memory in chosen.values():
        tags = f" ({', '.join(memory.tags)})" if memory.tags else ""
        text = memory.text.replace("\n", " ")
        lines.append(f"- [{memory.id}] {text}{tags}")
    return (
        "## Memories\nFacts saved in earlier sessions (most relevant first; "
        "`%forget <id>` deletes one). Use them when they help; do not repeat them back "
        "unasked.\n" + "\n".join(lines)
    )
