"""Notes tools over a real vault on disk: AND search with word boundaries, tags, pages."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest
from pydantic_ai import ModelRetry

from co_kernel.tools import notes

from ..support.vault import generate_vault
from .conftest import ctx

ALPHA = """---
title: Alpha Launch Plan
tags:
  - project/alpha
  - meeting
---
# Alpha launch

The Kernel review is on Monday.
We discussed the category of risks.
#urgent follow-up with Dana

```python
# not a heading
x = "#notatag"
```
"""
JOURNAL = """---
tags: journal, health
---
Ran 5k before work.
Cat slept all day. #mood/happy
Kernel panic on the laptop again.
"""
DEEP_WORK = """# Deep Work

Notes about focus and the KERNEL of deep work. #reading
Concatenate the ideas later; see the issue #42 and https://example.com/#anchor
"""
CPP = "Use C++ templates carefully.\nWriting c++ is fun.\n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for rel, text in {
        "Projects/Alpha launch.md": ALPHA,
        "Journal/2024-05-01.md": JOURNAL,
        "Reading/Deep Work.md": DEEP_WORK,
        "Inbox/cpp tips.md": CPP,
        ".obsidian/workspace.md": "kernel hidden config",
        "Archive/old.txt": "kernel in a text file",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    outside = tmp_path / "outside-secret.md"
    outside.write_text("kernel secret outside the vault\n")
    os.symlink(outside, root / "Projects" / "escape.md")
    return root


@pytest.fixture
def deps(make_deps, vault):
    return make_deps(obsidian_vault_path=vault)


def _search(deps, query, **kw):
    return notes.search_notes(ctx(deps), query, **kw)


def test_search_is_case_insensitive_and_shows_titles_and_line_numbers(deps):
    found = _search(deps, "kernel")
    assert found["count"] == 3
    assert sorted(found["notes"]) == [
        "Journal/2024-05-01.md",
        "Projects/Alpha launch.md",
        "Reading/Deep Work.md",
    ]
    display = found["display"]
    assert "**Alpha Launch Plan** (Projects/Alpha launch.md)" in display
    assert "L9: The Kernel review is on Monday." in display  # as written, not lower-cased
    assert "L6: Kernel panic on the laptop again." in display
    assert "L3: Notes about focus and the KERNEL of deep work." in display
    assert "secret" not in display and "hidden config" not in display
    assert found["has_more"] is False


def test_keywords_match_whole_words_only(deps):
    found = _search(deps, "cat")
    assert found["notes"] == ["Journal/2024-05-01.md"]  # not "category", not "Concatenate"
    assert _search(deps, "laptop again")["count"] == 1
    assert _search(deps, "lap")["count"] == 0


def test_all_keywords_must_occur(deps):
    assert _search(deps, "kernel review")["notes"] == ["Projects/Alpha launch.md"]
    assert _search(deps, "kernel monday dana")["notes"] == ["Projects/Alpha launch.md"]
    assert _search(deps, "kernel dana laptop")["count"] == 0


def test_keywords_with_punctuation_match_as_written(deps):
    found = _search(deps, "c++")
    assert found["notes"] == ["Inbox/cpp tips.md"]
    assert "L1: Use C++ templates carefully." in found["display"]


def test_tag_filter_reads_front_matter_and_inline_tags(deps):
    assert _search(deps, "kernel", tag="journal")["notes"] == ["Journal/2024-05-01.md"]
    assert _search(deps, "kernel", tag="#reading")["notes"] == ["Reading/Deep Work.md"]
    assert _search(deps, "", tag="project")["notes"] == ["Projects/Alpha launch.md"]
    assert _search(deps, "", tag="mood")["notes"] == ["Journal/2024-05-01.md"]
    assert _search(deps, "", tag="urgent")["notes"] == ["Projects/Alpha launch.md"]


def test_code_headings_numbers_and_anchors_are_not_tags(deps):
    listed = notes.list_notes(ctx(deps))
    assert "#notatag" not in listed["display"]
    for not_a_tag in ("notatag", "alpha", "42", "anchor", "include"):
        assert notes.list_notes(ctx(deps), tag=not_a_tag)["count"] == 0, not_a_tag


def test_no_match_is_an_empty_result_not_an_error(deps):
    found = _search(deps, "zeppelin")
    assert found["count"] == 0 and found["has_more"] is False
    assert found["display"] == 'No notes match "zeppelin".'


def test_an_empty_query_without_tag_asks_the_model_to_fix_the_call(deps):
    with pytest.raises(ModelRetry):
        _search(deps, "   ")


def test_list_notes_skips_hidden_folders_other_files_and_links_out(deps):
    listed = notes.list_notes(ctx(deps))
    assert listed["count"] == 4
    assert (
        "**Alpha Launch Plan** (Projects/Alpha launch.md) #project/alpha #meeting #urgent"
        in (listed["display"])
    )
    assert "**Deep Work** (Reading/Deep Work.md) #reading" in listed["display"]
    for absent in ("workspace.md", "old.txt", "escape.md"):
        assert absent not in listed["display"]


def test_read_note_with_or_without_extension(deps):
    note = notes.read_note(ctx(deps), "Reading/Deep Work")
    assert note["display"] == DEEP_WORK.rstrip("\n") + "\n"
    assert notes.read_note(ctx(deps), "Inbox/cpp tips.md")["display"].startswith("Use C++")


def test_read_note_that_does_not_exist_suggests_close_names(deps):
    with pytest.raises(ModelRetry, match=r"Did you mean: Reading/Deep Work\.md"):
        notes.read_note(ctx(deps), "Reading/Deep Wrk.md")


def test_index_follows_edits_additions_and_deletions(deps, vault):
    assert _search(deps, "zeppelin")["count"] == 0
    journal = vault / "Journal" / "2024-05-01.md"
    journal.write_text(JOURNAL + "A zeppelin flew over.\n")
    stat = journal.stat()
    os.utime(journal, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    (vault / "Inbox" / "new.md").write_text("Another zeppelin sighting.\n")
    assert _search(deps, "zeppelin")["count"] == 2
    (vault / "Inbox" / "new.md").unlink()
    assert _search(deps, "zeppelin")["notes"] == ["Journal/2024-05-01.md"]


def test_pagination_over_a_generated_vault(make_deps, tmp_path):
    root = tmp_path / "big-vault"
    generate_vault(root, 45, note_chars=800)
    deps = make_deps(obsidian_vault_path=root)
    first = _search(deps, "the")
    total = first["count"]
    assert total > 20, "the most common word occurs in most notes"
    seen: list[str] = []
    page = 1
    while True:
        part = _search(deps, "the", page=page)
        seen += part["notes"]
        assert len(part["notes"]) == min(10, total - (page - 1) * 10)
        assert f"(page {page} of {-(-total // 10)})" in part["display"]
        if not part["has_more"]:
            break
        assert part["next_page"] == page + 1
        page += 1
    assert len(seen) == len(set(seen)) == total
    beyond = _search(deps, "the", page=page + 1)
    assert beyond["count"] == total and "past the end" in beyond["display"]


def test_generated_notes_have_front_matter_and_inline_tags(make_deps, tmp_path):
    root = tmp_path / "gen"
    generate_vault(root, 40, note_chars=600)
    deps = make_deps(obsidian_vault_path=root)
    listed = notes.list_notes(ctx(deps))
    assert listed["count"] == 40
    tagged = notes.list_notes(ctx(deps), tag="project")
    assert 0 < tagged["count"] < 40
    assert re.search(r"#project/(alpha|beta|gamma)", tagged["display"])
    assert notes.list_notes(ctx(deps), tag="include")["count"] == 0  # '#include' in code


def test_every_search_is_audited(deps, audit):
    started = time.time()
    _search(deps, "kernel")
    rows = audit.query(tool="search_notes", since=started - 1)
    assert rows and rows[0]["decision"] == "auto" and "3 notes matched" in rows[0]["detail"]


def test_notes_are_not_offered_without_a_vault(tmp_path):
    from co_kernel.config import Settings

    built = notes.build(Settings())
    assert built.toolset is None and "obsidian_vault_path" in (built.reason or "")
    missing = notes.build(Settings(obsidian_vault_path=tmp_path / "nope"))
    assert missing.toolset is None and "is not a folder" in (missing.reason or "")


def _search_words(deps, query):
    return sorted(_search(deps, query)["notes"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_an_edit_that_keeps_size_and_mtime_is_still_seen(deps, vault):
    assert _search(deps, "zebra")["count"] == 0
    note = vault / "Inbox" / "cpp tips.md"
    before = note.stat()
    note.write_text("Use C++ templates carefully.\nWriting zebra is fu\n")  # same size
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert note.stat().st_size == before.st_size and note.stat().st_mtime_ns == before.st_mtime_ns
    assert _search(deps, "zebra")["notes"] == ["Inbox/cpp tips.md"]


def test_folders_renames_and_atomic_saves_are_followed(deps, vault):
    assert _search(deps, "quokka")["count"] == 0
    (vault / "New" / "Deeper").mkdir(parents=True)
    (vault / "New" / "Deeper" / "q.md").write_text("A quokka smiled.\n")
    assert _search_words(deps, "quokka") == ["New/Deeper/q.md"]
    (vault / "New" / "Deeper" / "q.md").rename(vault / "New" / "moved.md")
    assert _search_words(deps, "quokka") == ["New/moved.md"]
    tmp = vault / "New" / ".moved.md.swp"
    tmp.write_text("The quokka left; a wombat arrived.\n")
    os.replace(tmp, vault / "New" / "moved.md")  # how editors save atomically
    assert _search_words(deps, "wombat") == ["New/moved.md"]
    (vault / "New" / "moved.md").rename(vault / "New" / "hidden.txt")  # out of scope
    assert _search(deps, "wombat")["count"] == 0
    import shutil

    shutil.rmtree(vault / "New")
    (vault / "Journal" / "2024-05-01.md").unlink()
    assert _search_words(deps, "kernel") == ["Projects/Alpha launch.md", "Reading/Deep Work.md"]


def test_without_a_watcher_the_index_stats_every_file(vault):
    from co_kernel.tools._vault import VaultIndex

    index = VaultIndex(vault.resolve(), 1_000_000, use_watcher=False)
    assert [n.rel for n, _ in index.search("quokka")] == []
    (vault / "Inbox" / "q.md").write_text("A quokka.\n")
    assert [n.rel for n, _ in index.search("quokka")] == ["Inbox/q.md"]
    (vault / "Inbox" / "q.md").unlink()
    assert index.search("quokka") == []
    index.close()


def test_front_matter_simple_quoted_nested_and_broken(tmp_path):
    from co_kernel.tools._vault import parse_note

    simple = parse_note("a.md", "---\ntitle: 'Plan: Q3'\ntags: [plan, \"q3\"]\n---\nbody #extra\n")
    assert (simple.title, simple.tags) == ("Plan: Q3", ("plan", "q3", "extra"))
    nested = parse_note(
        "b.md", "---\ntitle: Nested # a comment\nmeta:\n  owner: dana\ntags:\n- x/y\n---\n"
    )
    assert (nested.title, nested.tags) == ("Nested", ("x/y",))  # YAML decided
    broken = parse_note("c.md", "---\ntitle: a: b\ntags: [unclosed\n---\n#real tag\n")
    assert (broken.title, broken.tags) == ("c", ("real",))
    not_front = parse_note("d.md", "Text first\n---\ntags: [no]\n---\n")
    assert not_front.tags == ()


def test_ranking_titles_first_then_how_often(make_deps, tmp_path):
    root = tmp_path / "ranked"
    root.mkdir()
    (root / "once.md").write_text("A heron once.\n")
    (root / "often.md").write_text("Heron, heron, heron: herons everywhere. Heron!\n")
    (root / "Heron sightings.md").write_text("Nothing else here but a heron.\n")
    found = _search(make_deps(obsidian_vault_path=root), "heron")
    assert found["notes"] == ["Heron sightings.md", "often.md", "once.md"]
