"""Check-then-open races: a folder inside the root is swapped for a symbolic link to an
outside folder, again and again, by a real concurrent process while the tools run. No tool may read,
list or write anything of the outside folder, whatever moment the swap hits."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelRetry, ToolFailed

from co_kernel.tools import files, notes, skills

from ..support.deps import deps_for
from .conftest import ctx

OUTSIDE = "OUTSIDE-SECRET-5d1c"


# Swaps two names atomically with renameat2(RENAME_EXCHANGE), so neither is ever missing:
# the hardest timing for the tools. A process of its own, as the sandbox's would be (a
# thread would share the GIL with the tools and slow them down, not race them harder).
_SWAPPER = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(p) for p in sys.argv[1:3])
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
swaps = 0
print("ready", flush=True)
while not stop:
    for _ in range(2):  # there and back: a stop leaves the folder in place
        if libc.renameat2(-100, a, -100, b, 2) != 0:
            sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
    swaps += 1
print(swaps, flush=True)
"""


class Swapper:
    """A process that swaps ``folder`` (or a file) with a symbolic link to ``outside`` and
    back, as fast as it can, until the block ends."""

    def __init__(self, folder: Path, outside: Path) -> None:
        self.folder = folder
        self.link = folder.with_name(folder.name + ".link")
        os.symlink(outside, self.link)
        self.swaps = 0

    def __enter__(self) -> Swapper:
        args = [sys.executable, "-c", _SWAPPER, str(self.folder), str(self.link)]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "ready\n"
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        out, _ = self.process.communicate(timeout=30)
        assert self.process.returncode == 0, out
        self.swaps = int(out)
        self.link.unlink()
        assert self.folder.exists() and not self.folder.is_symlink()


def _tree(folder: Path, text: str, extra: str) -> None:
    """The same names inside and outside, plus a name only this side has."""
    (folder / "sub").mkdir(parents=True)
    for rel in ("data.txt", "sub/deep.txt", "note.md"):
        (folder / rel).write_text(f"token {text}\n")
    (folder / extra).write_text(f"token {text}\n")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    _tree(folder, OUTSIDE, "only-outside.md")
    return folder


def _snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _hammer(call: Callable[[int], Any], attempts: int) -> list[Any]:
    """Results of ``attempts`` calls. A refusal (the race seen) is fine; any other
    exception is a tool that did not say what went wrong, and is collected to fail on."""
    results = []
    for i in range(attempts):
        try:
            results.append(call(i))
        except (ModelRetry, ToolFailed):
            pass
        except Exception as exc:  # counted, and reported after the test
            CRASHES.append(f"{type(exc).__name__}: {exc}")
    return results


CRASHES: list[str] = []


@pytest.fixture(autouse=True)
def _no_crashes() -> Iterator[None]:
    CRASHES.clear()
    yield
    assert not CRASHES, f"{len(CRASHES)} calls raised instead of refusing: {CRASHES[:3]}"


@pytest.fixture
def inside(workspace: Path) -> Path:
    folder = workspace / "inside"
    _tree(folder, "INSIDE", "only-inside.md")
    return folder


@contextlib.contextmanager
def _race(inside: Path, outside: Path) -> Iterator[Swapper]:
    before = _snapshot(outside)
    with Swapper(inside, outside) as swapper:
        yield swapper
    assert swapper.swaps > 100, "the swapper must actually race the tool"
    after = _snapshot(outside)
    changed = [k for k in after.keys() | before.keys() if after.get(k) != before.get(k)]
    assert not changed, f"{len(changed)} files outside written: {sorted(changed)[:5]}"


@pytest.mark.parametrize("rel", ["inside/data.txt", "inside/sub/deep.txt"])
def test_read_file_never_returns_outside_content(workspace, inside, outside, rel):
    deps = deps_for(workspace)
    with _race(inside, outside):
        results = _hammer(lambda _: files.read_file(ctx(deps), rel)["display"], 1000)
    escapes = [r for r in results if OUTSIDE in r]
    assert not escapes, f"{len(escapes)} escapes in 1000 reads"
    assert any("INSIDE" in r for r in results), "the file stays readable during the race"


def test_grep_and_list_files_never_see_outside_files(workspace, inside, outside):
    deps = deps_for(workspace)
    with _race(inside, outside):
        greps = _hammer(lambda _: files.grep(ctx(deps), "token")["display"], 500)
        lists = _hammer(lambda _: files.list_files(ctx(deps), "*")["display"], 500)
    escapes = [r for r in greps + lists if OUTSIDE in r or "only-outside" in r]
    assert not escapes, f"{len(escapes)} escapes in 1000 grep and list calls"
    assert any("INSIDE" in r for r in greps) and any("only-inside" in r for r in lists)


def test_write_and_edit_never_touch_outside(workspace, inside, outside):
    deps = deps_for(workspace)
    with _race(inside, outside):
        writes = _hammer(
            lambda i: files.write_file(ctx(deps, approved=True), f"inside/new-{i}.txt", "x"), 400
        )
        edits = _hammer(
            lambda _: files.edit_file(
                ctx(deps, approved=True), "inside/data.txt", "token", "token"
            ),
            400,
        )
    assert writes and edits, "writes succeed during the race"
    assert sorted(p.name for p in outside.iterdir()) == [
        "data.txt", "note.md", "only-outside.md", "sub"
    ]  # fmt: skip


@pytest.mark.parametrize("swapped", ["a folder of the vault", "the vault"])
def test_notes_never_index_or_read_outside_notes(tmp_path, outside, swapped):
    vault = tmp_path / "vault"
    _tree(vault / "inside", "INSIDE", "only-inside.md")
    if swapped == "the vault":
        # A vault inside the workspace swapped after the session first used it.
        target, folder = tmp_path / "outside-vault", vault
        _tree(target / "inside", OUTSIDE, "only-outside.md")
    else:
        target, folder = outside, vault / "inside"
    deps = deps_for(tmp_path, obsidian_vault_path=vault)
    assert notes.list_notes(ctx(deps))["count"] == 2
    with _race(folder, target):
        reads = _hammer(lambda _: notes.read_note(ctx(deps), "inside/note.md")["display"], 300)
        found = _hammer(lambda _: notes.search_notes(ctx(deps), "outside")["display"], 300)
        searches = _hammer(lambda _: notes.search_notes(ctx(deps), "token")["display"], 300)
        listed = _hammer(lambda _: notes.list_notes(ctx(deps))["display"], 300)
    texts = reads + found + searches + listed
    escapes = [r for r in texts if OUTSIDE in r or OUTSIDE.lower() in r or "only-outside" in r]
    assert not escapes, f"{len(escapes)} escapes in 1200 notes calls"
    assert any("INSIDE" in r for r in reads), "notes stay readable during the race"
    if swapped != "the vault":
        # With the vault itself swapped, a watch may be set up through the link (inotify
        # follows it): the index can stay empty until the vault changes. Empty, not outside.
        assert any("only-inside" in r for r in listed)


@pytest.mark.parametrize("swapped", ["a resource folder", "the skill folder"])
def test_skill_resources_never_come_from_outside(workspace, outside, tmp_path, swapped):
    def make_skill(folder: Path, text: str, extra: str) -> None:
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: raced\ndescription: R.\n---\nGo {text}\n")
        _tree(folder / "res", text, extra)

    skill = workspace / ".co" / "skills" / "raced"
    make_skill(skill, "INSIDE", "only-inside.md")
    if swapped == "the skill folder":
        # The link leads to a skill of the same name, so discovery finds it either way.
        target = tmp_path / "outside-skill"
        make_skill(target, OUTSIDE, "only-outside.md")
        folder = skill
    else:
        target, folder = outside, skill / "res"
    deps = deps_for(workspace)

    def read(_: int) -> str:
        return asyncio.run(skills.read_skill_resource(ctx(deps), "raced", "res/data.txt"))

    def load(_: int) -> str:
        return asyncio.run(skills.load_skill(ctx(deps), "raced"))

    with _race(folder, target):
        reads = _hammer(read, 200)
        loads = _hammer(load, 200)
    escapes = [r for r in reads + loads if OUTSIDE in r or "only-outside" in r]
    assert not escapes, f"{len(escapes)} escapes in 400 skill calls"
    assert any("INSIDE" in r for r in reads) and any("only-inside" in r for r in loads)


@pytest.mark.parametrize("swapped", ["the skill folder", "SKILL.md"])
def test_skill_discovery_never_reads_an_outside_definition(workspace, tmp_path, swapped):
    """The skill list in the prompt comes from reading every SKILL.md: swapping the file or
    its folder for a link to an outside definition must never put that one in the list."""
    skill = workspace / ".co" / "skills" / "raced"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: raced\ndescription: INSIDE.\n---\nGo\n")
    elsewhere = tmp_path / "outside-skill"
    elsewhere.mkdir()
    (elsewhere / "SKILL.md").write_text(
        f"---\nname: raced\ndescription: {OUTSIDE}.\n---\n{OUTSIDE}\n"
    )
    if swapped == "SKILL.md":
        folder, target = skill / "SKILL.md", elsewhere / "SKILL.md"
    else:
        folder, target = skill, elsewhere
    config = tmp_path / "config"

    def discover(_: int) -> str:
        catalog = skills.discover_skills(config, workspace)
        listed = [f"{s.name}: {s.description}" for s in catalog.skills.values()]
        return "\n".join(listed + [str(e) for e in catalog.problems])

    with _race(folder, target):
        found = _hammer(discover, 1000)
    escapes = [r for r in found if OUTSIDE in r]
    assert not escapes, f"{len(escapes)} escapes in 1000 discoveries"
    assert any("raced: INSIDE." in r for r in found), "the skill stays listed during the race"
