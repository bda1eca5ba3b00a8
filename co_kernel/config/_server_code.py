"""The files of a folder that a project MCP server's command can load, for workspace trust.

Trust hashes what gives a folder power (``_trust.fingerprint``). A stdio MCP server runs
more than the file its command line names: ``python -m pkg.mod`` imports from the
server's working folder, ``python srv.py`` imports the modules beside ``srv.py``, a node
script requires its neighbours. Each of those files, when it lies in the folder, is as
much the server's code as the named one, and the sandbox (a ``!`` cell) can write there.
So every file the command can load from the folder joins the hashed set, conservatively:

- Python (``python``, ``python3.12``, ``uv run python``, a venv's interpreter, ``-m``,
  ``-c``, a script): every ``.py``/``.pth`` file under each import root inside the folder
  (the server's working folder for ``-m``/``-c``, the script's folder for a script, each
  ``PYTHONPATH`` entry of its ``env``), walking only into folders whose names can be
  packages; an interpreter inside the folder adds its venv's ``pyvenv.cfg`` and the
  ``.pth`` files of its ``site-packages`` (they run at start-up).
- node / bun / deno / npx / tsx: the script, the JavaScript/TypeScript files under its
  folder (``node_modules`` left out: it is the installed dependencies, usually tens of
  thousands of files), and the ``package.json`` and lock file of its package.
- a shell (``sh script.sh``, ``bash -c '...'``): the script, or each simple command of
  the ``-c`` line (split at ``&&``, ``||``, ``;``, ``|``, ``&``; ``exec`` and leading
  ``NAME=value`` assignments dropped) read as a command line of its own.
- ``uv run``: also the project it syncs before running (``pyproject.toml``, ``uv.lock``,
  ``.python-version``: they decide what gets installed and run) and its ``.venv``.
- ``npx``/``bunx`` of a package: the ``package.json`` and lock file of its working
  folder (they decide which local package runs).
- a program of the folder named as the command: the file; by its first line, what Python
  (its folder's modules) or Node (its neighbours and package) loads for it.
- any other command or argument that is a file in the folder: that file.

A server that would load more than ``MAX_FILES`` files (or ``MAX_BYTES``) is over the
bound: trust cannot vouch for it, and it does not start (``over_bound``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._mcp import expand_vars

__all__ = ["MAX_BYTES", "MAX_FILES", "ServerCode", "over_bound_message", "server_code"]

MAX_FILES = 2000
"""Files one MCP server may load from the folder for trust to vouch for them."""
MAX_BYTES = 64 * 1024 * 1024
"""Their bytes at most, together."""
_MAX_DIRS = 5000
"""Folders walked at most for one server (a folder of data under an import root): the walk
runs before every cell."""
_MAX_COUNTED = 10 * MAX_FILES
"""Files counted at most past the bound, to say how many there are."""

_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?(\.exe)?$")
_NODE = frozenset({"node", "nodejs", "bun", "deno", "npx", "tsx", "ts-node", "bunx"})
_SHELL = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_PY_SUFFIXES = (".py", ".pth")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx", ".json")
_JS_PACKAGE = ("package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock")
_JS_PACKAGE += ("pnpm-lock.yaml", "bun.lockb", "bun.lock", "deno.json", "deno.lock")
_SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules"})
_UV_PROJECT = ("pyproject.toml", "uv.lock", ".python-version")
_SHELL_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})
# Python options that take a value (``-W error``); the value is no script.
_PY_VALUE_OPTS = frozenset({"-W", "-X", "-Q"})
_UV_VALUE_OPTS = frozenset(
    {"--with", "--python", "-p", "--project", "--directory", "--env-file", "--group", "--extra"}
)


@dataclass
class ServerCode:
    """What one server loads from the folder."""

    files: set[str] = field(default_factory=set[str])
    """Real paths of the files, inside the folder."""
    bytes: int = 0
    over: bool = False
    """More than the bound: not every file is listed, trust cannot vouch for them."""
    count: int = 0
    """Files found (also past the bound)."""
    partial: bool = False
    """The walk stopped early: there are at least ``count`` files."""


class _Walk:
    """The files found so far. Strings, not ``Path``: the walk runs before every cell."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.prefix = self.root.rstrip(os.sep) + os.sep
        self.code = ServerCode()
        self.dirs = 0

    def inside(self, path: str | Path) -> str | None:
        """Its real path, if that lies in the folder."""
        with contextlib.suppress(OSError, ValueError):
            real = os.path.realpath(path)
            if real == self.root or real.startswith(self.prefix):
                return real
        return None

    def add(self, path: str | Path) -> None:
        real = self.inside(path)
        if real is not None and os.path.isfile(real):
            self._add_real(real)

    def _add_real(self, real: str, size: int | None = None) -> None:
        if real in self.code.files:
            return
        self.code.count += 1
        if size is None:
            with contextlib.suppress(OSError):
                size = os.stat(real).st_size
        self.code.bytes += size or 0
        if self.code.count > MAX_FILES or self.code.bytes > MAX_BYTES:
            self.code.over = True  # counted on (to say how many), never hashed
            return
        self.code.files.add(real)

    def tree(self, top: Path, suffixes: tuple[str, ...], *, packages_only: bool) -> None:
        """Files under ``top`` ending in ``suffixes``; ``packages_only``: walk only into
        folders whose names Python can import (``.venv`` or ``data-2024`` never are)."""
        real = self.inside(top)
        if real is None or not os.path.isdir(real):
            return
        pending = [real]  # real folders: links to folders are not walked into
        while pending:
            folder = pending.pop()
            self.dirs += 1
            if self.dirs > _MAX_DIRS or self.code.count > _MAX_COUNTED:
                self.code.over = self.code.partial = True
                return
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if entry.is_dir(follow_symlinks=False):
                        if name not in _SKIP_DIRS and (name.isidentifier() or not packages_only):
                            pending.append(entry.path)
                    elif name.endswith(suffixes) or (name in _JS_PACKAGE and not packages_only):
                        if entry.is_symlink():
                            self.add(entry.path)  # its target, if in the folder
                        elif entry.is_file(follow_symlinks=False):
                            self._add_real(entry.path, entry.stat(follow_symlinks=False).st_size)


def _expanded(text: str) -> str:
    try:
        return expand_vars(text)
    except KeyError:
        return text


def _user_path(text: str) -> Path:
    """``text`` with ``~`` expanded as the launch would; a ``~name`` of no user stays as it is."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        return Path(text)


def _file(word: str, cwd: Path) -> Path | None:
    if not word or word.startswith("-"):
        return None
    with contextlib.suppress(OSError, ValueError):
        path = cwd / _user_path(word)
        if path.is_file():
            return path
    return None


def _python(
    walk: _Walk, interpreter: Path | None, args: list[str], cwd: Path, env: dict[str, str]
) -> None:
    # The interpreter's own folder, not its target: a venv's bin/python is usually a link
    # to the system's python, outside the folder, while the venv is inside it.
    if interpreter is not None and walk.inside(interpreter.parent) is not None:
        # A venv in the folder: its configuration and the .pth files run at start-up.
        for venv in (interpreter.parent.parent, Path(os.path.realpath(interpreter)).parent.parent):
            walk.add(venv / "pyvenv.cfg")
            for site in venv.glob("lib*/python*/site-packages"):
                for pth in sorted(site.glob("*.pth")):
                    walk.add(pth)
    for entry in env.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            walk.tree(cwd / _user_path(entry), _PY_SUFFIXES, packages_only=True)
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("-m", "-c") or (word.startswith(("-m", "-c")) and len(word) > 2):
            walk.tree(cwd, _PY_SUFFIXES, packages_only=True)  # '' on sys.path: the cwd
            return
        if word in _PY_VALUE_OPTS:
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        script = _file(word, cwd)
        if script is not None:
            walk.add(script)
            walk.tree(Path(os.path.realpath(script)).parent, _PY_SUFFIXES, packages_only=True)
        return


def _node(walk: _Walk, name: str, args: list[str], cwd: Path) -> None:
    if name in ("npx", "bunx"):
        # A package name, not a file: which one runs depends on the folder's manifest.
        for package in _JS_PACKAGE:
            walk.add(cwd / package)
    for word in args:
        script = _file(word, cwd)
        if script is None:
            continue
        walk.add(script)
        folder = Path(os.path.realpath(script)).parent
        walk.tree(folder, _JS_SUFFIXES, packages_only=False)
        # Its package: the nearest package.json upwards (within the folder) and its lock.
        for up in (folder, *folder.parents):
            if walk.inside(up) is None:
                break
            if (up / "package.json").is_file():
                for name in _JS_PACKAGE:
                    walk.add(up / name)
                break


def _uv_run(walk: _Walk, rest: list[str], cwd: Path, env: dict[str, str], depth: int) -> None:
    """``uv run [options] COMMAND``: the project uv syncs first, then the command."""
    for project in _UV_PROJECT:
        walk.add(cwd / project)
    venv_python = cwd / ".venv" / "bin" / "python"
    if os.path.lexists(venv_python):
        _python(walk, venv_python, [], cwd, {})
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in _UV_VALUE_OPTS else rest[1:]
    if rest and rest[0].endswith(".py"):
        rest = ["python", *rest]
    _command(walk, rest, cwd, env, depth + 1)


def _shell(walk: _Walk, args: list[str], cwd: Path, env: dict[str, str], depth: int) -> None:
    """``sh -c LINE``: each simple command of the line, read as a command line."""
    if "-c" in args and args.index("-c") + 1 < len(args):
        with contextlib.suppress(ValueError):
            line = shlex.split(args[args.index("-c") + 1])
            for simple in _simple_commands(line):
                _command(walk, simple, cwd, env, depth + 1)


def _command(walk: _Walk, argv: list[str], cwd: Path, env: dict[str, str], depth: int = 0) -> None:
    if not argv or depth > 3:
        return
    command, args = argv[0], argv[1:]
    name = Path(command).name
    program = _file(command, cwd) if ("/" in command or command.startswith("~")) else None
    if program is not None:
        walk.add(program)
    for word in args:  # any argument that is a file in the folder is read or run
        found = _file(word, cwd)
        if found is not None:
            walk.add(found)
    if _PYTHON.match(name):
        _python(walk, program, args, cwd, env)
    elif name in ("uv", "uvx") and args and args[0] == "run":
        _uv_run(walk, args[1:], cwd, env, depth)
    elif name in _NODE:
        _node(walk, name, args, cwd)
    elif name in _SHELL:
        _shell(walk, args, cwd, env, depth)
    elif program is not None:
        # An executable of the folder: a Python script by its first line is its import path
        # too, a Node script (`#!/usr/bin/env node`) its neighbours and package.
        with contextlib.suppress(OSError), program.open("rb") as handle:
            first = handle.readline(200)
            if first.startswith(b"#!") and b"python" in first:
                walk.tree(Path(os.path.realpath(program)).parent, _PY_SUFFIXES, packages_only=True)
            elif first.startswith(b"#!") and re.search(rb"\b(node|bun|deno|tsx)\b", first):
                _node(walk, "node", [str(program)], cwd)


def _simple_commands(words: list[str]) -> list[list[str]]:
    """A shell line's simple commands (``cd x && exec python srv.py`` -> two), without
    ``exec`` and the ``NAME=value`` assignments before a command."""
    commands: list[list[str]] = [[]]
    for word in words:
        if word in _SHELL_SEPARATORS:
            commands.append([])
        elif commands[-1] or not (word == "exec" or _ASSIGNMENT.match(word)):
            commands[-1].append(word)
    return [command for command in commands if command]


def server_code(folder: Path, spec: dict[str, Any]) -> ServerCode:
    """The files of ``folder`` that the stdio server ``spec`` (as written in the project's
    settings) can load; empty for an HTTP server."""
    command = spec.get("command")
    if not isinstance(command, str) or not command.strip():
        return ServerCode()
    root = folder.resolve()
    raw_cwd = spec.get("cwd")
    cwd = root
    if isinstance(raw_cwd, str) and raw_cwd:
        cwd = root / _user_path(_expanded(raw_cwd))
    raw_env = spec.get("env")
    env = (
        {str(k): _expanded(str(v)) for k, v in raw_env.items()} if isinstance(raw_env, dict) else {}
    )
    args = [_expanded(a) for a in spec.get("args") or [] if isinstance(a, str)]
    walk = _Walk(root)
    _command(walk, [_expanded(command), *args], cwd, env)
    return walk.code


def over_bound_message(name: str, code: ServerCode) -> str:
    """Why a project MCP server does not start, and how to narrow what it loads."""
    more = "at least " if code.partial else ""
    return (
        f"the MCP server '{name}' loads {more}{code.count:,} files from this folder "
        f"(more than {MAX_FILES:,} files or {MAX_BYTES // (1024 * 1024)} MB): trust cannot "
        "vouch for them, so it does not start; give it a `cwd` (or a script folder) that "
        "holds only its code, or install it outside the folder"
    )
