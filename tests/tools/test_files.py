"""Files tools on real files: reading, listing, grep, and approved writes with a diff."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pydantic_ai import ApprovalRequired, ModelRetry, ToolFailed

from co_kernel.tools import files

from .conftest import ctx


@pytest.fixture
def deps(make_deps):
    return make_deps()


def test_read_file_numbers_lines_and_pages_long_files(deps, workspace):
    (workspace / "long.txt").write_text("\n".join(f"line {i}" for i in range(1, 1201)))
    first = files.read_file(ctx(deps), "long.txt")
    assert first["display"].splitlines()[0] == "long.txt (lines 1-500 of 1200)"
    assert "     1\tline 1" in first["display"] and "   500\tline 500" in first["display"]
    assert first["has_more"] is True and first["next_page"] == 2
    last = files.read_file(ctx(deps), "long.txt", page=3)
    assert "  1200\tline 1200" in last["display"] and last["has_more"] is False
    assert "past the end" in files.read_file(ctx(deps), "long.txt", page=4)["display"]


def test_binary_oversized_and_non_utf8_files_are_refused_clearly(make_deps, workspace):
    (workspace / "data.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    # A PNG is read as an image (tests/tools/test_rich_outputs.py); a broken one says so.
    (workspace / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    (workspace / "big.txt").write_text("x" * 5000)
    (workspace / "latin1.txt").write_bytes("café".encode("latin-1"))
    deps = make_deps(file_max_bytes=4096)
    with pytest.raises(ToolFailed, match="binary file"):
        files.read_file(ctx(deps), "data.bin")
    with pytest.raises(ToolFailed, match="not a PNG, JPEG, GIF or WebP image that can be read"):
        files.read_file(ctx(deps), "image.png")
    with pytest.raises(ToolFailed, match=r"5,000 bytes.*file_max_bytes"):
        files.read_file(ctx(deps), "big.txt")
    with pytest.raises(ToolFailed, match="not UTF-8"):
        files.read_file(ctx(deps), "latin1.txt")


def test_missing_files_and_folders_ask_the_model_to_fix_the_path(deps, workspace):
    (workspace / "folder").mkdir()
    with pytest.raises(ModelRetry, match=r"No file 'nope\.txt'"):
        files.read_file(ctx(deps), "nope.txt")
    with pytest.raises(ModelRetry, match="is a folder"):
        files.read_file(ctx(deps), "folder")


def _tree(workspace: Path) -> None:
    for rel in (
        "a.py",
        "src/b.py",
        "src/deep/c.py",
        "src/readme.md",
        "data/x.csv",
        ".git/config",
        "src/__pycache__/b.cpython-311.pyc",
        ".hidden/secret.py",
    ):
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {rel}\nprint('hello from {rel}')\n")


def test_list_files_glob_semantics(deps, workspace):
    _tree(workspace)
    assert files.list_files(ctx(deps), "*.py")["files"] == ["a.py", "src/b.py", "src/deep/c.py"]
    assert files.list_files(ctx(deps), "src/*.py")["files"] == ["src/b.py", "src/deep/c.py"]
    assert files.list_files(ctx(deps), "**/*.py")["files"] == ["a.py", "src/b.py", "src/deep/c.py"]
    assert files.list_files(ctx(deps), "data/*")["files"] == ["data/x.csv"]
    everything = files.list_files(ctx(deps))
    assert everything["count"] == 5, "no .git, caches or hidden folders"
    assert files.list_files(ctx(deps), "*.rs")["count"] == 0


def test_list_files_pages(deps, workspace):
    for i in range(150):
        (workspace / f"f{i:03d}.txt").write_text("x")
    first = files.list_files(ctx(deps), "*.txt")
    second = files.list_files(ctx(deps), "*.txt", page=2)
    assert (first["count"], len(first["files"]), first["has_more"]) == (150, 100, True)
    assert (len(second["files"]), second["has_more"]) == (50, False)
    assert set(first["files"]).isdisjoint(second["files"])


def test_grep_regex_case_and_binary_skip(deps, workspace):
    _tree(workspace)
    (workspace / "blob.bin").write_bytes(b"hello\x00world")
    found = files.grep(ctx(deps), r"hello from src/\w+\.py")
    assert found["count"] == 1 and "src/b.py:2: print('hello from src/b.py')" in found["display"]
    assert files.grep(ctx(deps), "HELLO", "*.py")["count"] == 0
    assert files.grep(ctx(deps), "HELLO", "*.py", ignore_case=True)["count"] == 3
    assert "1 binary or oversized files skipped" in files.grep(ctx(deps), "hello")["display"]
    with pytest.raises(ModelRetry, match="Invalid regular expression"):
        files.grep(ctx(deps), "print(")


def test_write_asks_with_a_diff_then_writes(deps, workspace):
    with pytest.raises(ApprovalRequired) as asked:
        files._ask_write(ctx(deps), "reports/summary.md", "# Summary\n\nAll good.\n")
    detail = asked.value.metadata["detail"]
    assert detail.startswith("--- /dev/null\n+++ b/reports/summary.md\n")
    assert "+# Summary\n" in detail and "+All good.\n" in detail
    assert not (workspace / "reports").exists(), "nothing is written before approval"
    done = files.write_file(
        ctx(deps, approved=True), "reports/summary.md", "# Summary\n\nAll good.\n"
    )
    assert done["display"] == "Created reports/summary.md (3 lines, +3 -0)"
    assert (workspace / "reports" / "summary.md").read_text() == "# Summary\n\nAll good.\n"


def test_overwrite_diff_shows_removed_and_added_lines_and_keeps_the_mode(deps, workspace):
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\necho one\necho two\n")
    os.chmod(script, 0o755)
    with pytest.raises(ApprovalRequired) as asked:
        files._ask_write(ctx(deps), "run.sh", "#!/bin/sh\necho one\necho three\n")
    detail = asked.value.metadata["detail"]
    assert "--- a/run.sh\n+++ b/run.sh\n" in detail
    assert "-echo two\n" in detail and "+echo three\n" in detail and " echo one\n" in detail
    files.write_file(ctx(deps, approved=True), "run.sh", "#!/bin/sh\necho one\necho three\n")
    assert script.read_text().endswith("echo three\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert [p.name for p in workspace.iterdir()] == ["run.sh"], "no temporary files left"


def test_write_over_the_size_cap_is_refused(make_deps, workspace):
    deps = make_deps(file_max_bytes=2048)
    with pytest.raises(ToolFailed, match="file_max_bytes"):
        files._ask_write(ctx(deps), "huge.txt", "y" * 3000)
    assert not (workspace / "huge.txt").exists()


def test_edit_replaces_exactly_one_occurrence_with_a_diff(deps, workspace):
    (workspace / "config.py").write_text("DEBUG = True\nLEVEL = 'info'\n")
    with pytest.raises(ApprovalRequired) as asked:
        files._ask_edit(ctx(deps), "config.py", "DEBUG = True", "DEBUG = False")
    assert "-DEBUG = True\n+DEBUG = False\n" in asked.value.metadata["detail"]
    assert (workspace / "config.py").read_text().startswith("DEBUG = True")
    done = files.edit_file(ctx(deps, approved=True), "config.py", "DEBUG = True", "DEBUG = False")
    assert done["display"] == "Updated config.py (2 lines, +1 -1)"
    assert (workspace / "config.py").read_text() == "DEBUG = False\nLEVEL = 'info'\n"


def test_edit_mistakes_go_back_to_the_model(deps, workspace):
    (workspace / "notes.txt").write_text("todo\ntodo\ndone\n")
    with pytest.raises(ModelRetry, match="not found"):
        files._ask_edit(ctx(deps), "notes.txt", "missing text", "x")
    with pytest.raises(ModelRetry, match="occurs 2 times"):
        files._ask_edit(ctx(deps), "notes.txt", "todo", "doing")
    with pytest.raises(ModelRetry, match="use write_file"):
        files._ask_edit(ctx(deps), "absent.txt", "a", "b")
    files.edit_file(ctx(deps, approved=True), "notes.txt", "todo", "doing", replace_all=True)
    assert (workspace / "notes.txt").read_text() == "doing\ndoing\ndone\n"


def test_build_follows_the_operations_in_scope():
    from co_kernel.config import Settings

    full = files.build(Settings())
    assert full.approval == {
        "read_file": False,
        "list_files": False,
        "grep": False,
        "write_file": True,
        "edit_file": True,
    }
    read_only = files.build(Settings(scope_operations=["read"]))
    assert read_only.approval == {"read_file": False, "list_files": False, "grep": False}
    nothing = files.build(Settings(scope_operations=["write"]))
    assert nothing.toolset is None and "scope_operations" in (nothing.reason or "")
