"""Git read commands auto-approved on the host never run a command the repository chose.

Each case is a real repository whose configuration, hooks or submodules make git run a
command that creates a marker file. Every git command Co would otherwise auto-approve is
classified; the ones approved are then really run in the repository the way the
subprocess sandbox runs them. The marker must never appear. An ordinary repository's
commands are still approved (and run), so the check is not "always ask".
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from co_kernel.permissions._approval import SAFE_PREFIX, auto_decision

from ..support.deps import deps_for
from ..support.git import git, new_repo

COMMANDS = ["git status", "git diff", "git log -p", "git log", "git branch", "git status -s"]


def _repo(root: Path) -> Path:
    repo = new_repo(root / "ws")
    (repo / "a.txt").write_text("one\n")
    (repo / "b.txt").write_text("same\n")
    (repo / ".gitattributes").write_text("*.txt diff=conv filter=clean\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "a.txt").write_text("two\n")  # a change: diff, textconv and the filter run
    os.utime(repo / "b.txt", (1, 1))  # stat info only: status refreshes and writes the index
    return repo


def _hook(folder: Path, marker: Path) -> None:
    hook = folder / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)


def _submodule(repo: Path, marker: Path) -> None:
    """A nested repository recorded as a gitlink, whose own config names a command."""
    sub = repo / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / "s.txt").write_text("s\n")
    git(sub, "add", "s.txt")
    git(sub, "-c", "user.email=t@e", "-c", "user.name=T", "commit", "-q", "-m", "s")
    git(repo, "add", "sub")
    git(sub, "config", "core.fsmonitor", f"touch {marker}; false")
    os.utime(sub / "s.txt", (1, 1))


def _local(key: str, value: str) -> Callable[[Path, Path], None]:
    def setup(repo: Path, marker: Path) -> None:
        git(repo, "config", key, value.format(marker=marker))

    return setup


def _include(repo: Path, marker: Path) -> None:
    extra = repo / "extra.cfg"
    extra.write_text(f'[core]\n\tfsmonitor = "touch {marker}; false"\n')
    git(repo, "config", "include.path", str(extra))


def _hooks_path(repo: Path, marker: Path) -> None:
    hooks = marker.with_name(marker.name + ".hooks")
    hooks.mkdir()
    _hook(hooks, marker)
    git(repo, "config", "core.hooksPath", str(hooks))


RISKS: dict[str, Callable[[Path, Path], None]] = {
    "core.fsmonitor": _local("core.fsmonitor", "touch {marker}; false"),
    "diff textconv": _local("diff.conv.textconv", "touch {marker}; cat"),
    "diff.external": _local("diff.external", "touch {marker}; true"),
    "clean filter": _local("filter.clean.clean", "touch {marker}; cat"),
    "include.path": _include,
    "post-index-change hook": lambda repo, marker: _hook(repo / ".git" / "hooks", marker),
    "core.hooksPath": _hooks_path,
    "submodule config": _submodule,
}
"""Ways a repository makes a git read command run another command (pagers need a
terminal and gpg a signed commit, so they are left to the allow-list alone)."""


def _approved(ws: Path, sandbox: str = "subprocess") -> list[str]:
    deps = deps_for(ws, sandbox=sandbox)
    return [c for c in COMMANDS if auto_decision("run_shell_command", {"cmd": c}, deps)]


@pytest.mark.parametrize("risk", sorted(RISKS))
def test_no_auto_approved_git_command_runs_what_the_repository_names(tmp_path: Path, risk: str):
    repo = _repo(tmp_path)
    marker = tmp_path / "marker"
    RISKS[risk](repo, marker)
    assert not marker.exists()

    approved = _approved(repo)
    for command in approved:
        # As the subprocess sandbox runs it: /bin/sh in the workspace, the kernel's env.
        subprocess.run(command, shell=True, cwd=repo, capture_output=True, timeout=60)

    assert approved == [], f"{risk}: auto-approved {approved}"
    assert not marker.exists()


def test_the_risky_repositories_really_run_the_command(tmp_path: Path):
    """The cases above are real: run anyway, each makes one of the commands create the
    marker (so a classifier that approved them would have run it)."""
    ran = []
    for i, (risk, setup) in enumerate(sorted(RISKS.items())):
        repo = _repo(tmp_path / str(i))
        marker = tmp_path / f"marker-{i}"
        setup(repo, marker)
        for command in COMMANDS:
            subprocess.run(command, shell=True, cwd=repo, capture_output=True, timeout=60)
        if marker.exists():
            ran.append(risk)
    assert ran == sorted(RISKS)


def test_an_ordinary_repository_and_the_docker_sandbox_still_auto_approve(tmp_path: Path):
    repo = _repo(tmp_path)
    assert _approved(repo) == COMMANDS
    git(repo, "config", "core.fsmonitor", f"touch {tmp_path / 'marker'}; false")
    # In the container the command runs in the sandbox, as every approved command does.
    assert _approved(repo, sandbox="docker") == COMMANDS


def test_outside_a_repository_git_commands_are_approved(tmp_path: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "x").write_text("x")
    assert (
        auto_decision(
            "run_shell_command", {"cmd": "git status"}, deps_for(plain, sandbox="subprocess")
        )
        == SAFE_PREFIX
    )


def test_a_kernel_asks_for_git_status_in_such_a_repository(
    start_kernel, model_server, workspace: Path, tmp_path: Path
):
    """End to end: a headless run (which denies what needs asking) in a repository whose
    config names a command: the call is not auto-approved, so git never runs it."""
    repo = _repo(workspace)
    marker = tmp_path / "marker"
    RISKS["core.fsmonitor"](repo, marker)
    kernel = start_kernel(cwd=repo)
    call = {"name": "run_shell_command", "arguments": {"cmd": "git status"}}
    model_server.extend([{"tool_calls": [call]}, {"text": "ok"}])

    result = kernel.execute("what changed?", mode="headless", timeout=120)

    assert result.status == "ok"
    assert "**denied**" in result.markdown()
    assert not marker.exists()
