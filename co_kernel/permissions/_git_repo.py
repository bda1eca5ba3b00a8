"""Whether a git command in the workspace could run a command the repository chose.

Git runs commands named in its configuration even for commands that only read: `git
status` and `git diff` run `core.fsmonitor`, `git diff` and `git log -p` a
`diff.<driver>.textconv` or `diff.external`, both a `filter.<driver>.clean`, `git log`
the `gpg.program` under `log.showSignature`; `git status` runs the `post-index-change`
hook when it refreshes the index, and a populated submodule brings a configuration of its
own. The workspace's `.git` can be written by whatever ran there (a background process
of an approved command, an unpacked archive), so without a sandbox an auto-approved `git
status` could run anything on the host.

So the classifier auto-approves a git command on the host only when every configuration
entry that comes from the repository (scopes local and worktree) or from a file inside
the workspace (with the home folder as the workspace, ``~/.gitconfig`` is in it) is one
of a few keys that name no command (an allow-list: git has too many command-valued keys,
under names the repository picks, to list the dangerous ones), the hooks folder holds
only ``*.sample`` files and the index has no submodule. Whatever git cannot answer
counts as a risk.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

__all__ = ["repo_may_run_commands"]

_INERT = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase"
    r"|precomposeunicode|symlinks|autocrlf|eol|quotepath)"
    r"|extensions\.objectformat"
    r"|remote\..+\.(url|pushurl|fetch|tagopt|prune)"
    r"|branch\..+\.(remote|merge|rebase|description)"
    r"|user\.(name|email)|init\.defaultbranch|pull\.(rebase|ff)|push\.default|fetch\.prune"
    r"|color\.[a-z.]+"
    r"|status\.(short|branch|showuntrackedfiles|relativepaths|aheadbehind|renames)"
    r"|log\.(decorate|date|abbrevcommit|follow)"
    r"|diff\.(renames|algorithm|mnemonicprefix|noprefix|context|indentheuristic|colormoved)",
    re.DOTALL,
)
"""Configuration keys (as ``git config --list`` prints them) that never name a command."""

_TIMEOUT = 10.0
_GITLINK = b"160000 "


def _git(workspace: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(
            ["git", *args], cwd=workspace, capture_output=True, timeout=_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _untrusted_keys(listing: bytes, workspace: Path) -> list[str]:
    """Keys of the entries that come from the repository or from a file in the workspace."""
    fields = listing.split(b"\0")
    keys: list[str] = []
    for scope, origin, entry in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
        where = origin.decode(errors="replace")
        in_workspace = where.startswith("file:") and _inside(workspace / where[5:], workspace)
        if scope in (b"local", b"worktree") or in_workspace:
            keys.append(entry.partition(b"\n")[0].decode(errors="replace"))
    return keys


def _inside(path: Path, root: Path) -> bool:
    real = os.path.realpath(path)
    return real == str(root) or real.startswith(str(root).rstrip("/") + "/")


def _has_hooks(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(not e.name.endswith(".sample") for e in entries)
    except FileNotFoundError:
        return False
    except OSError:
        return True


def repo_may_run_commands(workspace: Path) -> bool:
    """Whether a git command run in ``workspace`` could run a command that the repository's
    configuration, hooks or submodules name (see the module docstring)."""
    workspace = Path(os.path.realpath(workspace))
    listing = _git(workspace, "config", "--list", "--show-scope", "--show-origin", "-z")
    if listing is None or listing.returncode != 0:
        return True
    if any(not _INERT.fullmatch(key) for key in _untrusted_keys(listing.stdout, workspace)):
        return True
    hooks = _git(workspace, "rev-parse", "--git-path", "hooks")
    if hooks is None:
        return True
    if hooks.returncode != 0:
        # Outside a repository git reads no repository configuration and runs no hook.
        return b"not a git repository" not in hooks.stderr
    if _has_hooks(workspace / os.fsdecode(hooks.stdout.strip())):
        return True
    index = _git(workspace, "ls-files", "--stage", "-z")
    if index is None or index.returncode != 0:
        return True
    return any(entry.startswith(_GITLINK) for entry in index.stdout.split(b"\0"))
