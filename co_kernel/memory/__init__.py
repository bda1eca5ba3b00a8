"""Long-term memory: the store of facts Co keeps across sessions (tools come on top)."""

from __future__ import annotations

from ._lifecycle import clean_tags, find_duplicate, prompt_section, save
from ._store import Memory, MemoryStore, memory_store_path

__all__ = [
    "Memory",
    "MemoryStore",
    "clean_tags",
    "find_duplicate",
    "memory_store_path",
    "prompt_section",
    "save",
]
