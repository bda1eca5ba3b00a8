"""Path traversal and scope payloads against the notes and files tools: all refused,
nothing outside the scope read or written, every decision audited."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from pydantic_ai import ToolFailed

from co_kernel.tools import files, notes

from .conftest import ctx

MARKER = "TOP-SECRET-MARKER-7f3a"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace and vault holding marker files."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(MARKER)
    (folder / "secret.md").write_text(MARKER)
    (folder / "secret.txt.md").write_text(MARKER)
    return folder


def _links(root: Path, outside: Path, ext: str) -> None:
    os.symlink(outside, root / "link-out")
    os.symlink(outside / f"secret{ext}", root / f"link-file{ext}")
    (root / "chain").mkdir()
    os.symlink(root / f"link-file{ext}", root / "chain" / f"link{ext}")  # a link to a link out


def _payloads(root: Path, outside: Path, tmp_path: Path, ext: str = ".txt") -> list[str]:
    """Spellings of "a file outside the root"; every one must be refused."""
    secret = outside / f"secret{ext}"
    return [
        f"../outside/secret{ext}",
        f"../outside/secret{ext}/",
        "../../etc/passwd",
        "../" * 40 + "etc/passwd",
        "/etc/passwd",
        "//etc/passwd",
        "/./etc/passwd",
        "/proc/self/environ",
        str(secret),
        f"{root}/../outside/secret.txt",
        "./../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "sub/./../../outside/secret.txt",
        "%2e%2e%2foutside%2fsecret.txt",
        "%2e%2e/outside/secret.txt",
        "..%2foutside%2fsecret.txt",
        "%252e%252e%252foutside%252fsecret.txt",
        "..%5coutside%5csecret.txt",
        "%2fetc%2fpasswd",
        "..\\outside\\secret.txt",
        "sub\\..\\..\\outside\\secret.txt",
        "~/.bashrc",
        "~root/.ssh/id_rsa",
        f"link-out/secret{ext}",
        f"link-file{ext}",
        f"chain/link{ext}",
        f"chain/../link-file{ext}",
        "secret.txt\x00.md",
        "notes.md\x00../../outside/secret.txt",
        "\x00",
        "\n../outside/secret.txt",
        "a" * 5000,
        "d/" * 3000 + "x.md",
        "x" * 300 + ".md",
        "\uff0e\uff0e/outside/secret.txt",  # fullwidth dots
        "..\uff0foutside\uff0fsecret.txt",  # fullwidth slash
        "\u2024\u2024/outside/secret.txt",  # one dot leaders
        "..\u2215outside\u2215secret.txt",  # division slash
        "..\u2044outside\u2044secret.txt",  # fraction slash
        "file:///etc/passwd",
        str(tmp_path),
        "/",
        "",
    ]


@pytest.fixture
def workspace_tree(workspace: Path, outside: Path) -> Path:
    (workspace / "sub").mkdir()
    (workspace / "notes.md").write_text("ordinary note\n")
    (workspace / "sub" / "data.txt").write_text("ordinary data\n")
    _links(workspace, outside, ".txt")
    return workspace


@pytest.fixture
def vault(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "vault"
    (root / "sub").mkdir(parents=True)
    (root / "note.md").write_text("a note\n")
    _links(root, outside, ".md")
    return root


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _refused(call) -> str:
    with pytest.raises(ToolFailed) as info:
        call()
    message = info.value.message
    assert message.startswith("Refused:"), message
    assert MARKER not in message
    return message


def test_read_payloads_against_files_tools_are_all_refused(
    make_deps, workspace_tree, outside, tmp_path, audit
):
    deps = make_deps()
    payloads = _payloads(workspace_tree, outside, tmp_path)
    assert len(payloads) >= 40
    for raw in payloads:
        _refused(lambda raw=raw: files.read_file(ctx(deps), raw))
    refused = audit.query(tool="read_file", decision="scope-refused", limit=1000)
    assert len(refused) == len(payloads)
    assert all(r["status"] == "refused" and r["detail"] for r in refused)
    assert not audit.query(tool="read_file", decision="auto")


def test_read_payloads_against_notes_tools_are_all_refused(
    make_deps, vault, outside, tmp_path, audit
):
    deps = make_deps(obsidian_vault_path=vault)
    payloads = _payloads(vault, outside, tmp_path, ".md")
    for raw in payloads:
        _refused(lambda raw=raw: notes.read_note(ctx(deps), raw))
    refused = audit.query(tool="read_note", decision="scope-refused", limit=1000)
    assert len(refused) == len(payloads)
    # Walks never step through the links either.
    listed = notes.list_notes(ctx(deps))
    assert listed["count"] == 1 and "note.md" in listed["display"]
    assert notes.search_notes(ctx(deps), "marker")["count"] == 0
    assert "7f3a" not in notes.search_notes(ctx(deps), "secret")["display"]


def test_listing_and_grep_never_reach_through_links(make_deps, workspace_tree):
    deps = make_deps()
    listed = files.list_files(ctx(deps), "*")
    assert sorted(listed["files"]) == ["notes.md", "sub/data.txt"]
    assert files.grep(ctx(deps), "SECRET")["count"] == 0
    assert files.grep(ctx(deps), "ordinary")["count"] == 2


def test_write_payloads_are_refused_before_and_after_approval(
    make_deps, workspace_tree, outside, tmp_path, audit
):
    deps = make_deps(read_roots=[str(outside)])
    before_outside = _snapshot(outside)
    before_tmp = sorted(p.name for p in tmp_path.iterdir())
    name = f"pwned-{uuid.uuid4().hex}.txt"
    payloads = [
        *(p for p in _payloads(workspace_tree, outside, tmp_path) if p),
        f"../outside/{name}",
        f"/tmp/{name}",
        f"link-out/{name}",
        "link-file.txt",  # overwriting the marker through a link
        "chain/link.txt",
        str(outside / "secret.txt"),  # inside a read root: read-only
        str(outside / name),
        ".git/hooks/pre-commit",
        ".GIT/hooks/post-checkout",
        ".co/instructions.md",
        ".co/settings.json",
        ".env",
        ".Env.production",
        "config/.env",
    ]
    for raw in payloads:
        _refused(lambda raw=raw: files._ask_write(ctx(deps), raw, "pwned"))
        _refused(lambda raw=raw: files.write_file(ctx(deps, approved=True), raw, "pwned"))
        _refused(lambda raw=raw: files.edit_file(ctx(deps, approved=True), raw, MARKER, "x"))
    assert _snapshot(outside) == before_outside
    assert sorted(p.name for p in tmp_path.iterdir()) == before_tmp
    assert not Path(f"/tmp/{name}").exists()
    assert not (workspace_tree / ".git").exists() and not (workspace_tree / ".env").exists()
    refused = audit.query(decision="scope-refused", limit=5000)
    assert len(refused) == 3 * len(payloads)
    assert (outside / "secret.txt").read_text() == MARKER


def test_read_root_is_readable_but_not_beyond_it(make_deps, workspace_tree, outside, tmp_path):
    deps = make_deps(read_roots=[str(outside)])
    read = files.read_file(ctx(deps), str(outside / "secret.txt"))
    assert MARKER in read["display"]
    _refused(lambda: files.read_file(ctx(deps), str(tmp_path / "telemetry.db")))
    listed = files.list_files(ctx(deps), "secret*")
    assert str(outside / "secret.txt") in listed["files"]


def test_scope_folders_file_types_and_case_tricks(make_deps, workspace):
    (workspace / "data").mkdir()
    (workspace / "data" / "a.csv").write_text("x,y\n")
    (workspace / "data" / "b.txt").write_text("text\n")
    (workspace / "DATA").mkdir()
    (workspace / "DATA" / "c.csv").write_text("1,2\n")
    (workspace / "other").mkdir()
    (workspace / "other" / "d.csv").write_text("3,4\n")
    (workspace / "data" / "e.CSV").write_text("5,6\n")
    deps = make_deps(scope_folders=["data"], scope_file_types=["*.csv"])
    assert "x,y" in files.read_file(ctx(deps), "data/a.csv")["display"]
    for raw in ("DATA/c.csv", "other/d.csv", "data/b.txt", "data/e.CSV", "Data/a.csv"):
        _refused(lambda raw=raw: files.read_file(ctx(deps), raw))
    assert files.list_files(ctx(deps), "*")["files"] == ["data/a.csv"]


def test_operations_not_in_scope_are_refused(make_deps, workspace):
    (workspace / "kept.txt").write_text("keep me\n")
    read_only = make_deps(scope_operations=["read"])
    _refused(lambda: files.write_file(ctx(read_only, approved=True), "kept.txt", "changed"))
    _refused(lambda: files.write_file(ctx(read_only, approved=True), "new.txt", "created"))
    no_create = make_deps(scope_operations=["read", "write"])
    message = _refused(lambda: files.write_file(ctx(no_create, approved=True), "new.txt", "x"))
    assert "'create' is not allowed" in message
    files.write_file(ctx(no_create, approved=True), "kept.txt", "changed\n")
    assert (workspace / "kept.txt").read_text() == "changed\n"
    assert not (workspace / "new.txt").exists()


def test_allowed_accesses_are_audited_too(make_deps, workspace, audit):
    (workspace / "ok.txt").write_text("fine\n")
    files.read_file(ctx(make_deps()), "ok.txt")
    rows = audit.query(tool="read_file", decision="auto")
    assert len(rows) == 1
    assert rows[0]["target"] == str((workspace / "ok.txt").resolve())
    assert rows[0]["action"] == "read" and rows[0]["status"] == "ok"
