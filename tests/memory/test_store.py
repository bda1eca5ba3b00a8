"""The memory store on a real SQLite file with FTS5."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from co_kernel.memory import MemoryStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "memory.db")
    yield s
    s.close()


def test_add_get_update_delete(store: MemoryStore) -> None:
    first = store.add("The user prefers pandas over polars", ["prefs", " prefs ", ""])
    second = store.add("Deadline for the report is Friday")
    assert second > first
    memory = store.get(first)
    assert memory is not None
    assert memory.text == "The user prefers pandas over polars"
    assert memory.tags == ["prefs"]
    assert store.update(first, text="The user now prefers polars")
    assert store.get(first).text == "The user now prefers polars"  # type: ignore[union-attr]
    assert store.update(first, tags=["tools"])
    assert store.get(first).tags == ["tools"]  # type: ignore[union-attr]
    assert not store.update(999, text="nothing")
    assert store.delete(first) is True
    assert store.delete(first) is False
    assert store.get(first) is None
    assert store.ids() == [second]
    assert [m.id for m in store.list()] == [second]


def test_empty_text_is_refused(store: MemoryStore) -> None:
    with pytest.raises(ValueError, match="needs some text"):
        store.add("   ")


def test_search_ranks_with_bm25_and_follows_updates_and_deletes(store: MemoryStore) -> None:
    weak = store.add("a long note that mentions plots once among many other words about data")
    strong = store.add("plots plots: the user wants plots with seaborn")
    tagged = store.add("colour scheme is viridis", ["plots"])
    found = [m.id for m in store.search("plots")]
    assert found[0] == strong
    assert set(found) == {weak, strong, tagged}
    # Punctuation in a question is not FTS5 syntax.
    assert store.search('what about "viridis"? (colour)')[0].id == tagged
    assert store.search("?!") == []
    store.update(strong, text="the user wants charts with seaborn")
    assert strong not in [m.id for m in store.search("plots")]
    assert [m.id for m in store.search("charts")] == [strong]
    store.delete(tagged)
    assert tagged not in [m.id for m in store.search("viridis plots")]


def test_memories_persist_across_connections(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    one = MemoryStore(path)
    mid = one.add("remember me")
    one.close()
    two = MemoryStore(path)
    assert two.get(mid) is not None
    assert [m.text for m in two.search("remember")] == ["remember me"]
    two.close()
