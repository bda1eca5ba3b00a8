"""Memory tools on a real SQLite/FTS5 store: save with approval preview, dedup within
the window, decay by cut or summary, recall, and the system prompt section."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai import ApprovalRequired, ModelRetry

from co_kernel.memory import MemoryStore
from co_kernel.memory._lifecycle import similarity
from co_kernel.tools import memory

from .conftest import ctx


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_path / "memory.db")
    yield s
    s.close()


@pytest.fixture
def mem_deps(make_deps, store):
    def make(**settings):
        deps = make_deps(**settings)
        deps.extras[memory._STORE] = store
        return deps

    return make


FACTS = [
    "The cat is named Miso.",
    "Deploys happen on Thursdays after lunch.",
    "The staging database lives in Frankfurt.",
    "Alice reviews every pull request touching billing.",
    "Quarterly planning starts in the second week of March.",
    "Use uv instead of pip for new projects.",
    "The GPU cluster is called orca and has eight nodes.",
    "Reports go to the finance team as PDF files.",
    "Standup is skipped on public holidays.",
    "The style guide forbids abbreviations in titles.",
    "Benchmarks must run three times before results count.",
    "Invoices are numbered by year and month.",
]


def _save(deps, text, tags=None):
    return asyncio.run(memory.save_memory(ctx(deps, approved=True), text, tags))


def _preview(deps, text, tags=None) -> str:
    with pytest.raises(ApprovalRequired) as asked:
        asyncio.run(memory._preview(ctx(deps), text, tags))
    return asked.value.metadata["detail"]


def _age(db: Path, memory_id: int, days: float) -> None:
    """Make a memory look older, straight in the database file."""
    with sqlite3.connect(db) as conn:
        then = time.time() - days * 86_400
        conn.execute(
            "UPDATE memories SET created = ?, updated = ? WHERE id = ?", (then, then, memory_id)
        )


def test_save_previews_then_stores(mem_deps, store):
    deps = mem_deps()
    detail = _preview(deps, "The user prefers polars over pandas.", ["Prefs", "#tools"])
    assert detail == "New memory:\n+ The user prefers polars over pandas.\ntags: prefs, tools"
    assert store.list() == [], "nothing is stored before approval"
    saved = _save(deps, "The user prefers polars over pandas.", ["Prefs", "#tools"])
    assert saved["display"] == "Saved memory 1: The user prefers polars over pandas."
    [stored] = store.list()
    assert stored.text == "The user prefers polars over pandas." and stored.tags == [
        "prefs",
        "tools",
    ]


def test_empty_or_huge_memories_go_back_to_the_model(mem_deps):
    with pytest.raises(ModelRetry):
        _save(mem_deps(), "   ")
    with pytest.raises(ModelRetry, match="under 1000 characters"):
        _save(mem_deps(), "x" * 1001)


def test_near_duplicate_within_the_window_updates_instead(mem_deps, store):
    deps = mem_deps()
    _save(deps, "The user prefers dark mode in JupyterLab", ["ui"])
    assert (
        similarity(
            "The user prefers dark mode in JupyterLab", "the user prefers Dark Mode in JupyterLab!"
        )
        >= 85
    )
    detail = _preview(deps, "the user prefers Dark Mode in JupyterLab!", ["prefs"])
    assert detail.startswith("Updates memory 1 (100% similar, saved today):\n")
    assert "- The user prefers dark mode in JupyterLab\n+ the user prefers Dark Mode" in detail
    saved = _save(deps, "the user prefers Dark Mode in JupyterLab!", ["prefs"])
    assert saved["updated"] is True and saved["id"] == 1
    [only] = store.list()
    assert only.text == "the user prefers Dark Mode in JupyterLab!" and only.tags == ["prefs", "ui"]
    different = _save(deps, "The report deadline is Friday the 14th")
    assert different["updated"] is False and len(store.list()) == 2


def test_similar_but_outside_the_window_is_a_new_memory(mem_deps, store):
    deps = mem_deps(memory_dedup_window_days=7)
    _save(deps, "Experiments run on the cluster named orca")
    _age(store.path, 1, days=8)
    again = _save(deps, "Experiments run on the cluster named orca.")
    assert again["updated"] is False and len(store.list()) == 2
    _age(store.path, 2, days=6)
    third = _save(deps, "experiments run on the cluster named orca")
    assert third["updated"] is True and third["id"] == 2


def test_threshold_decides_what_counts_as_a_duplicate(mem_deps, store):
    strict = mem_deps(memory_dedup_threshold=100)
    _save(strict, "Weekly sync is on Tuesday at 10")
    assert _save(strict, "Weekly sync is on Tuesdays at 10")["updated"] is False
    loose = mem_deps(memory_dedup_threshold=80)
    assert _save(loose, "Weekly sync is on Tuesday at 10:30")["updated"] is True


def test_decay_cut_deletes_the_least_recently_updated(mem_deps, store):
    deps = mem_deps(memory_max_count=10, memory_decay_strategy="cut", memory_decay_percentage=0.2)
    for fact in FACTS[:10]:
        assert _save(deps, fact)["updated"] is False
    # Touch the oldest: an update makes it recent, so it survives decay.
    assert _save(deps, "The cat is named Miso!")["updated"] is True
    result = _save(deps, FACTS[10])
    assert result["decayed"] == 2
    assert "2 oldest memories deleted (memory_max_count = 10)" in result["display"]
    texts = [m.text for m in store.list()]
    assert len(texts) == 9
    assert FACTS[1] not in texts and FACTS[2] not in texts
    assert "The cat is named Miso!" in texts and FACTS[10] in texts


def test_decay_summarize_folds_the_oldest_into_one_memory(mem_deps, store):
    deps = mem_deps(memory_max_count=10, memory_decay_percentage=0.3)
    for i, fact in enumerate(FACTS[:10]):
        _save(deps, f"{fact} More detail follows here.", [f"t{i}"])
    result = _save(deps, FACTS[10])
    assert result["decayed"] == 3
    summary_id = int(result["display"].split("summarized into memory ")[1].split(" ")[0])
    summary = store.get(summary_id)
    assert summary is not None
    assert summary.text == (
        f"Summary of 3 older memories:\n- {FACTS[0]}\n- {FACTS[1]}\n- {FACTS[2]}"
    )
    assert summary.tags == ["summary", "t0", "t1", "t2"]
    assert len(store.list()) == 8 + 1
    found = asyncio.run(memory.recall_memory(ctx(deps), "Frankfurt"))
    assert found["ids"] == [summary_id], "what decayed is still recallable through the summary"


def test_recall_ranks_by_relevance_and_pages(mem_deps, store):
    deps = mem_deps(memory_max_count=500)
    for i in range(25):
        store.add(f"Note {i}: the storage bucket is in eu-west", ["infra"])
    best = store.add("Storage storage storage: the main storage bucket is called archive-7")
    store.add("Lunch is at noon")
    first = asyncio.run(memory.recall_memory(ctx(deps), "storage"))
    assert first["count"] == 10 and first["has_more"] is True
    assert first["ids"][0] == best
    assert f"- [{best}] Storage storage storage" in first["display"]
    assert "(page 1; more on page 2)" in first["display"]
    third = asyncio.run(memory.recall_memory(ctx(deps), "storage", page=3))
    assert len(third["ids"]) == 6 and third["has_more"] is False
    seen = [*first["ids"], *asyncio.run(memory.recall_memory(ctx(deps), "storage", page=2))["ids"]]
    assert len(set(seen + third["ids"])) == 26
    past = asyncio.run(memory.recall_memory(ctx(deps), "storage", page=4))
    assert past["count"] == 0 and "after page 3" in past["display"]
    none = asyncio.run(memory.recall_memory(ctx(deps), "zeppelin"))
    assert none["count"] == 0 and none["display"] == 'No memories about "zeppelin".'


def test_list_memories_newest_first_with_tag_filter(mem_deps, store):
    deps = mem_deps()
    store.add("Old fact", ["a"])
    store.add("Middle fact", ["b"])
    store.add("New fact", ["a"])
    listed = asyncio.run(memory.list_memories(ctx(deps)))
    assert listed["display"].splitlines()[1].startswith("- [3] New fact (#a)")
    tagged = asyncio.run(memory.list_memories(ctx(deps), tag="#A"))
    assert tagged["count"] == 2 and "Middle" not in tagged["display"]


def test_prompt_section_puts_relevant_memories_first(mem_deps, store):
    deps = mem_deps(memory_prompt_count=3)
    store.add("The user's favourite plotting library is plotnine")
    for i in range(5):
        store.add(f"Unrelated recent fact {i}")
    section = memory.memory_prompt(deps, "Which plotting library should I use?")
    lines = section.splitlines()
    assert lines[0] == "## Memories"
    assert lines[2] == "- [1] The user's favourite plotting library is plotnine"
    assert lines[3:] == ["- [6] Unrelated recent fact 4", "- [5] Unrelated recent fact 3"]


def test_prompt_section_never_creates_a_database(make_deps, co_home, monkeypatch):
    monkeypatch.setenv("CO_HOME", str(co_home))
    assert memory.memory_prompt(make_deps(), "anything") == ""
    assert not (co_home / "data" / "memory.db").exists()
