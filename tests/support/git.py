"""Real git repositories for the tests of what Co lets run in one."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git", "new_repo"]


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its standard output. A failing command fails the test."""
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout


def new_repo(path: Path) -> Path:
    """An empty repository at ``path`` on branch main, with an author to commit as."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "T")
    return path
