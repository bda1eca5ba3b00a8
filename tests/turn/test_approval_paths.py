"""Auto-approval never reads Co's secrets, nor (without a sandbox) outside the workspace.

Hypothesis builds commands from the safe commands and path arguments (protected names,
globs, `..`, absolute paths, variables); for every command the classifier approves, the
real shell expands its arguments in the workspace, and none may be a protected file or,
in subprocess mode, lie outside the workspace. A recursive grep over a tree that holds a
protected file asks too.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from co_kernel.config import is_protected
from co_kernel.permissions._approval import SAFE_PREFIX, auto_decision

from ..support.deps import deps_for

ARGS = [
    ".env", "./.env", ".env.local", "sub/.env", "sub/../.env", ".e*", ".env?", "*", "sub/*",
    ".co/settings.json", ".co/*", ".co", "a.txt", "sub/b.txt", "sub", ".", "..", "../x",
    "/etc/passwd", "/", "~/.bashrc", "~", "$HOME/x", "sub/../../x", "/tmp", "-n", "-r",
    "-R", "--include=*.txt", "-l", "TODO", "-f", "-e", "link-out", "link-env",
]  # fmt: skip
COMMANDS = ["cat", "head", "tail", "grep", "grep -r", "ls", "wc", "stat", "du", "find", "file"]


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".co").mkdir()
    (ws / "a.txt").write_text("TODO a\n")
    (ws / "sub" / "b.txt").write_text("TODO b\n")
    (ws / ".env").write_text("KEY=secret\n")
    (ws / ".env.local").write_text("KEY=secret\n")
    (ws / "sub" / ".env").write_text("KEY=secret\n")
    (ws / ".co" / "settings.json").write_text('{"api_key": "secret"}\n')
    (root / "outside.txt").write_text("outside\n")
    (ws / "link-out").symlink_to(root / "outside.txt")
    (ws / "link-env").symlink_to(ws / ".env")
    return ws


def _expanded(ws: Path, args: list[str]) -> list[Path]:
    """What the shell makes of ``args`` in the workspace, as absolute resolved paths."""
    script = 'for a in "$@"; do printf "%s\\0" "$a"; done'
    line = " ".join(args)
    out = subprocess.run(
        ["sh", "-c", f"set -- {line}; {script}"], cwd=ws, capture_output=True, check=True,
        env={**os.environ, "HOME": str(ws.parent)},
    ).stdout  # fmt: skip
    words = [w.decode() for w in out.split(b"\0") if w]
    return [Path(os.path.realpath(ws / w)) for w in words if not w.startswith("-")]


VALUES = {"head": {"-n"}, "tail": {"-n"}, "file": {"-e"}}
"""Options among ARGS that take the next word as a value, not a file (their man pages:
a line count, the name of a test to skip)."""


def _files(command: str, args: list[str]) -> list[str]:
    """The arguments a command reads as files: grep's pattern is not one, nor an option's
    value (``head -n .env`` is a bad line count, and reads nothing)."""
    if command in VALUES:
        words, skip = [], False
        for a in args:
            if not skip:
                words.append(a)
            skip = not skip and a in VALUES[command]
        return words
    if not command.startswith("grep"):
        return args
    args = list(args)
    if "-e" in args[:-1]:
        del args[args.index("-e") + 1]
    elif "-f" not in args[:-1]:
        words = [a for a in args if not a.startswith("-")]
        if words:
            args.remove(words[0])
    return args


@settings(max_examples=300, deadline=None)
@given(
    command=st.sampled_from(COMMANDS),
    args=st.lists(st.sampled_from(ARGS), min_size=1, max_size=3),
    sandbox=st.sampled_from(["docker", "subprocess"]),
)
def test_what_is_auto_approved_reads_no_secret(command: str, args: list[str], sandbox: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = _workspace(Path(tmp).resolve())
        deps = deps_for(ws, sandbox=sandbox)
        line = " ".join([command, *args])
        if auto_decision("run_shell_command", {"cmd": line}, deps) != SAFE_PREFIX:
            return
        for path in _expanded(ws, _files(command, args)):
            if sandbox == "docker" and not (path == ws or ws in path.parents):
                continue  # the container's own file system, not the host's
            assert not is_protected(path, deps.settings, ws), (line, path)
            reads_tree = command == "grep -r" or (command == "grep" and {"-r", "-R"} & set(args))
            if path.is_dir() and reads_tree:
                inside = [p for p in path.rglob("*") if is_protected(p, deps.settings, ws)]
                assert not inside, (line, inside)
            if sandbox == "subprocess":
                assert path == ws or ws in path.parents, (line, path)


@pytest.mark.parametrize(
    ("command", "sandbox", "approved"),
    [
        ("cat .env", "docker", False),
        ("cat sub/.env", "docker", False),
        ("head -n 3 .co/settings.json", "docker", False),
        ("tail .e*", "docker", False),
        ("grep -r KEY .", "docker", False),
        ("grep -rn TODO", "docker", False),
        ("grep -r TODO sub", "docker", False),  # sub/.env
        ("grep -r TODO a.txt", "docker", True),
        ("cat a.txt sub/b.txt", "docker", True),
        ("ls -la", "docker", True),
        ("cat /etc/passwd", "docker", True),  # the container's own file
        ("cat /workspace/.env", "docker", False),
        ("grep -r KEY /workspace", "docker", False),
        ("cat /etc/passwd", "subprocess", False),
        ("cat ../outside.txt", "subprocess", False),
        ("cat link-out", "subprocess", False),
        ("cat ~/x", "subprocess", False),
        ("cat $HOME/x", "subprocess", False),
        ("ls", "subprocess", True),
        ("cat a.txt", "subprocess", True),
        ("echo /etc/passwd", "subprocess", True),  # a word, not a path
        ("date", "subprocess", True),
    ],
)
def test_paths_table(tmp_path: Path, command: str, sandbox: str, approved: bool) -> None:
    ws = _workspace(tmp_path.resolve())
    decision = auto_decision("run_shell_command", {"cmd": command}, deps_for(ws, sandbox=sandbox))
    assert (decision == SAFE_PREFIX) is approved, shlex.split(command)
