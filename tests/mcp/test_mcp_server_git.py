"""The reference `mcp-server-git` from PyPI under `approval: annotations`:
the tools it marks read-only (git_status, git_log) run at once, git_commit asks (a headless
run denies it), and a rule allows it after all. Effects are read from the repo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..support.git import git, new_repo
from ..support.scripted import call_step
from .conftest import mcp_env, server_entry


def _repo(root: Path) -> Path:
    repo = new_repo(root / "repo")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "a.txt").write_text("two\n")
    git(repo, "add", "a.txt")
    return repo


def _server(repo: Path) -> dict[str, Any]:
    args = ["-m", "mcp_server_git", "--repository", str(repo)]
    return server_entry(*args, approval="annotations", prefix="")


def test_read_only_git_tools_run_and_commit_asks(start_kernel, model_server, tmp_path: Path):
    repo = _repo(tmp_path)
    kernel = start_kernel(mcp_env({"git": _server(repo)}), cwd=tmp_path)
    model_server.extend(
        [
            call_step("git_status", repo_path=str(repo)),
            {
                "expect": {"tool_result_contains": "a.txt"},
                **call_step("git_log", repo_path=str(repo)),
            },
            call_step("git_commit", repo_path=str(repo), message="second"),
            {"expect": {"tool_result_contains": "denied"}, "text": "Not committed."},
        ]
    )
    result = kernel.execute("status, log, commit", mode="headless", timeout=180)
    assert result.status == "ok" and model_server.errors == [], result.text()
    assert git(repo, "log", "--oneline").count("\n") == 1, "git_commit must not have run"

    rule = {"allow": ['git_commit({"message":"second"*)']}
    kernel = start_kernel(
        {**mcp_env({"git": _server(repo)}), "CO_PERMISSIONS": json.dumps(rule)}, cwd=tmp_path
    )
    model_server.extend(
        [call_step("git_commit", repo_path=str(repo), message="second"), {"text": "Committed."}]
    )
    result = kernel.execute("commit", mode="headless", timeout=180)
    assert result.status == "ok", result.text()
    assert "second" in git(repo, "log", "--oneline")
