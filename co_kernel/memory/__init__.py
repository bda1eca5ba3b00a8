"""Long-term memory: the store of facts Co keeps across sessions (tools come on top)."""

from __future__ import annotations

from ._store import Memory, MemoryStore, memory_store_path

__all__ = ["Memory", "MemoryStore", "memory_store_path"]
