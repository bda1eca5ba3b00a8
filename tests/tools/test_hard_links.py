"""Hard links: a file inside the workspace (or vault, or skill) with more than one link may
be the very inode of a file outside, so no file tool reads it unless
`file_allow_hard_links` says so; a file with one link is read as ever."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import ModelRetry, ToolFailed

from co_kernel.tools import files, notes, skills
from co_kernel.tools._scope import SKIP_DIRS

from ..support.deps import deps_for
from .conftest import ctx

MARKER = "HARDLINKED-SECRET-91b2"
_NAME = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,11}", fullmatch=True)
_REL = (
    st.lists(_NAME.filter(lambda n: n not in SKIP_DIRS), min_size=1, max_size=3)
    .map(lambda parts: "/".join(parts) + ".md")
    .filter(lambda rel: rel != "plain.md")
)


def _linked_tree(tmp: Path, rel: str, links: int) -> tuple[Path, Path]:
    """A workspace with ``rel`` hard-linked to a secret file outside (``links`` links in
    all), and a plain file beside it."""
    workspace, outside = tmp / "ws", tmp / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text(f"token {MARKER}\n")
    for i in range(links - 2):
        os.link(secret, outside / f"more-{i}.md")
    target = workspace / rel
    target.parent.mkdir(parents=True)
    os.link(secret, target)
    (workspace / "plain.md").write_text("token plain\n")
    return workspace, secret


@settings(max_examples=25, deadline=None)
@given(rel=_REL, links=st.integers(2, 4), allow=st.booleans())
def test_hard_linked_files_are_read_only_when_the_setting_allows(rel, links, allow):
    with tempfile.TemporaryDirectory() as tmp:
        workspace, secret = _linked_tree(Path(tmp), rel, links)
        deps = deps_for(workspace, file_allow_hard_links=allow)
        grep = files.grep(ctx(deps), "token")
        listed = files.list_files(ctx(deps), "*.md")
        assert "plain.md:1: token plain" in grep["display"], "single-link files are read"
        assert rel in listed["files"], "the name is listed either way"
        if allow:
            assert MARKER in files.read_file(ctx(deps), rel)["display"]
            assert MARKER in grep["display"]
            return
        with pytest.raises(ToolFailed, match=rf"has {links} hard links.*file_allow_hard_links"):
            files.read_file(ctx(deps), rel)
        assert MARKER not in grep["display"]
        assert "1 files with several hard links not searched" in grep["display"]
        assert f"- {rel} ({links} hard links: not read)" in listed["display"]
        # Writing needs the current text first (for the diff): refused the same way.
        for write in (
            lambda: files.write_file(ctx(deps, approved=True), rel, "overwritten"),
            lambda: files.edit_file(ctx(deps, approved=True), rel, "token", "TOKEN"),
        ):
            with pytest.raises(ToolFailed, match="hard links"):
                write()
        assert secret.read_text() == f"token {MARKER}\n"


def test_notes_tools_refuse_hard_linked_notes(tmp_path):
    vault, _ = _linked_tree(tmp_path, "Projects/linked.md", 2)
    deps = deps_for(tmp_path, obsidian_vault_path=vault)
    with pytest.raises(ToolFailed, match="2 hard links"):
        notes.read_note(ctx(deps), "Projects/linked")
    assert notes.search_notes(ctx(deps), MARKER.lower())["count"] == 0
    assert notes.search_notes(ctx(deps), "plain")["count"] == 1
    listed = notes.list_notes(ctx(deps))["display"]
    assert "linked" in listed and MARKER not in listed

    allowed = deps_for(tmp_path, obsidian_vault_path=vault, file_allow_hard_links=True)
    assert MARKER in notes.read_note(ctx(allowed), "Projects/linked")["display"]
    assert notes.search_notes(ctx(allowed), MARKER.lower())["count"] == 1


def test_skill_resources_refuse_hard_links(workspace, tmp_path):
    skill = workspace / ".co" / "skills" / "linked"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: linked\ndescription: Linked.\n---\nGo.\n")
    secret = tmp_path / "secret.md"
    secret.write_text(MARKER)
    os.link(secret, skill / "res.md")
    deps = deps_for(workspace)
    with pytest.raises(ModelRetry, match="2 hard links"):
        asyncio.run(skills.read_skill_resource(ctx(deps), "linked", "res.md"))
    allowed = deps_for(workspace, file_allow_hard_links=True)
    assert asyncio.run(skills.read_skill_resource(ctx(allowed), "linked", "res.md")) == MARKER
