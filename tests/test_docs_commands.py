"""Every command the README, CONTRIBUTING.md and docs/ show is one that works.

What counts as shown: each line of a ```sh, ```bash or ```shell block (and each `$ ` line of
a ```console block), and each inline `` `co-kernel ...` `` or `` `%magic ...` ``. Each is
checked the way it can be checked for real:

- a `co-kernel` subcommand, or a Python entry point of this repository (`python -m
  co_kernel...`, `python -m evals...`, `python scripts/x.py`), runs with `--help`, exits 0,
  and lists every option the docs show;
- a `%magic` is in the magic registry, and each literal word after it (`%mcp restart`)
  appears in that magic's `%help` text (its module docstring);
- `cd DIR` names a folder of the checkout; `pip install NAME` a requirement of pyproject.toml
  (which scripts/setup.sh installs);
- any other command appears, as shown, in a test, in scripts/ or in .ci/, or RUN_BY below
  names the file that runs it, and that file holds its program and every option shown.

A command added to the docs that none of these covers fails here, naming the file and line.
"""

from __future__ import annotations

import functools
import importlib
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from co_kernel.magics import CELL_MAGICS, MAGICS

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_BLOCKS = ("sh", "bash", "shell", "console")
# Where a command counts as run: the tests, the scripts and CI (never this file itself).
RUNNERS = [
    *(p for p in (REPO / "tests").rglob("*.py") if p != Path(__file__).resolve()),
    *(p for p in (REPO / "scripts").iterdir() if p.is_file()),
    *(p for p in (REPO / ".ci").iterdir() if p.is_file()),
]

# Commands shown in a form no runner has verbatim: the file that runs them. That file must
# hold the command's program and each of its options.
RUN_BY: dict[str, str] = {
    # The docs' example notebook is report.ipynb; the test writes one of that name.
    "CO_MODEL=replay:report.replay.jsonl pytest --nbval report.ipynb": (
        "tests/replay/test_record_notebooks.py"
    ),
    # scripts/test.sh runs pytest the same way over tests and notebooks.
    ".venv/bin/python -m pytest tests/magics -n 2": "scripts/test.sh",
    "npm run lint:check": "scripts/test.sh",  # there with --silent
    ".venv/bin/lint-imports": "tests/test_layers.py",  # the venv's, beside sys.executable
}

# Python entry points of this repository that `--help` may run (they parse arguments first).
HELPABLE_MODULES = ("co_kernel", "evals")
PYTHONS = ("python", "python3", ".venv/bin/python")
CO_KERNEL = ("co-kernel", ".venv/bin/co-kernel")


@dataclass(frozen=True)
class Shown:
    """One command as a document shows it."""

    doc: str
    """The document, relative to the checkout."""
    line: int
    """Its line in the document (1-based)."""
    text: str
    """The command: continuations joined, the `$ ` prompt and a trailing comment taken off."""
    kind: str
    """`shell` (a code block's line), `cli` (an inline `co-kernel ...`) or `magic`."""

    def __str__(self) -> str:
        return f"{self.doc}:{self.line} shows `{self.text}`"


INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
MAGIC = re.compile(r"%%?[a-z]+\b")


def shown_in(doc: str, text: str) -> list[Shown]:
    """The commands a Markdown text shows, in order."""
    found: list[Shown] = []
    lines = text.split("\n")
    fence: str | None = None
    prose: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip().lower()
            continue
        if fence is None:
            prose.append((number, line))
        elif fence in SHELL_BLOCKS:
            if fence == "console":
                if not stripped.startswith("$ ") and not pending:
                    continue
                stripped = stripped.removeprefix("$ ")
            stripped = re.sub(r"(^|\s)#.*$", "", stripped).strip()
            start = start if pending else number
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            command, pending = (pending + stripped).strip(), ""
            if command:
                found.append(Shown(doc, start, " ".join(command.split()), "shell"))
    # Inline code may wrap across lines: read the prose as one text, keep line numbers.
    joined = "\n".join(line for _, line in prose)
    starts = [number for number, _ in prose]
    for match in INLINE.finditer(joined):
        code = " ".join(match.group(1).split())
        number = starts[joined.count("\n", 0, match.start())]
        if code.startswith("co-kernel "):
            found.append(Shown(doc, number, code, "cli"))
        elif MAGIC.fullmatch(code.split(" ")[0]):
            found.append(Shown(doc, number, code, "magic"))
    return found


def all_shown() -> list[Shown]:
    return [
        shown
        for path in DOCS
        for shown in shown_in(str(path.relative_to(REPO)), path.read_text(encoding="utf-8"))
    ]


def _words(command: str) -> list[str]:
    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
        words.pop(0)
    return words


def _options(words: list[str]) -> list[str]:
    """The options a command shows (`[--user | --prefix DIR]` gives --user and --prefix)."""
    options = []
    for word in words:
        word = word.strip("[]")
        if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", word):
            options.append(word.split("=")[0])
    return options


@functools.cache
def _help(argv: tuple[str, ...]) -> tuple[int, str]:
    run = subprocess.run(
        [*argv, "--help"], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )
    return run.returncode, run.stdout + run.stderr


def _check_help(shown: Shown, argv: list[str], options: list[str]) -> list[str]:
    """`argv --help` works and names each option; a problem per line otherwise."""
    code, out = _help(tuple(argv))
    if code != 0:
        return [f"{shown}: `{' '.join(argv)} --help` exits {code}:\n{out[-2000:]}"]
    return [
        f"{shown}: `{' '.join(argv)} --help` has no option {option}"
        for option in options
        if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", out)
    ]


def _check_cli(shown: Shown, words: list[str]) -> list[str]:
    """A `co-kernel` subcommand: its words up to the first option or argument, then --help."""
    path = []
    for word in words[1:]:
        if not re.fullmatch(r"[a-z]+", word):
            break
        path.append(word)
    co_kernel = str(Path(sys.executable).with_name("co-kernel"))
    problems = _check_help(shown, [co_kernel, *path], _options(words))
    if not problems:
        # A lower-case argument (`secrets set foo`) is no subcommand: trust the usage line.
        usage = _help((co_kernel, *path))[1].split("\n", 1)[0]
        if not usage.startswith("usage: co-kernel"):
            problems.append(f"{shown}: no usage line from `co-kernel {' '.join(path)} --help`")
    return problems


def _pyproject_requirements() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    names = [*project["project"]["dependencies"]]
    for group in project["project"].get("optional-dependencies", {}).values():
        names += group
    for group in project.get("dependency-groups", {}).values():
        names += [r for r in group if isinstance(r, str)]
    return {Requirement(r).name.lower() for r in names}


@functools.cache
def _runner_lines() -> dict[str, list[str]]:
    return {
        str(path.relative_to(REPO)): [
            " ".join(line.split()) for line in path.read_text(errors="replace").splitlines()
        ]
        for path in RUNNERS
    }


def _check_run(shown: Shown, part: str) -> list[str]:
    """A command no `--help` can vouch for: some test or script must run it."""
    if any(part in line for lines in _runner_lines().values() for line in lines):
        return []
    runner = RUN_BY.get(part)
    if runner is None:
        return [
            f"{shown}, which no test or script runs: run it as shown in a test, in scripts/"
            f" or .ci/, or name the file that runs it in RUN_BY ({Path(__file__).name})"
        ]
    path = REPO / runner
    if not path.is_file():
        return [f"{shown}: RUN_BY names {runner}, which does not exist"]
    text = path.read_text()
    words = _words(part)
    program = words[0].rsplit("/", 1)[-1]
    envs = re.findall(r"\b([A-Z_][A-Z0-9_]*)=", part)
    missing = [w for w in [program, *_options(words), *envs] if w not in text]
    return [f"{shown}: {runner} (RUN_BY) never mentions {', '.join(missing)}"] if missing else []


def _check_shell(shown: Shown) -> list[str]:
    problems = []
    for part in (p.strip() for p in shown.text.split("&&")):
        words = _words(part)
        if not words:
            continue
        if words[0] == "cd":
            if not (REPO / words[1]).is_dir():
                problems.append(f"{shown}: there is no folder {words[1]}")
        elif words[0] in CO_KERNEL:
            problems += _check_cli(shown, words)
        elif words[0] in PYTHONS and words[1:2] == ["-m"] and len(words) > 2:
            module = words[2]
            if module.split(".")[0] in HELPABLE_MODULES:
                argv = [sys.executable, "-m", module]
                problems += _check_help(shown, argv, _options(words[3:]))
            else:
                problems += _check_run(shown, part)
        elif words[0] in PYTHONS and len(words) > 1 and (REPO / words[1]).is_file():
            argv = [sys.executable, str(REPO / words[1])]
            problems += _check_help(shown, argv, _options(words[2:]))
        elif words[:2] == ["pip", "install"]:
            known = _pyproject_requirements()
            problems += [
                f"{shown}: {name} is no requirement of pyproject.toml"
                for name in words[2:]
                if Requirement(name).name.lower() not in known
            ]
        else:
            problems += _check_run(shown, part)
    return problems


def _check_magic(shown: Shown) -> list[str]:
    first, *rest = shown.text.split(" ")
    name = first.lstrip("%")
    if first.startswith("%%"):
        return [] if name in CELL_MAGICS else [f"{shown}: %%{name} is no cell magic"]
    if name not in MAGICS:
        return [f"{shown}: %{name} is not in the magic registry (co_kernel.magics.MAGICS)"]
    doc = importlib.import_module(f"co_kernel.magics.{MAGICS[name]}").__doc__ or ""
    said = " ".join(doc.split())
    problems = []
    words = [first]
    for word in rest:
        if not re.fullmatch(r"[a-z]+", word):
            break
        words.append(word)
        if " ".join(words) not in said:
            problems.append(f"{shown}: `%help {name}` never shows `{' '.join(words)}`")
            break
    return problems


def check(shown: Shown) -> list[str]:
    """What is wrong with a shown command: nothing when it is covered."""
    if shown.kind == "magic":
        return _check_magic(shown)
    if shown.kind == "cli":
        return _check_cli(shown, _words(shown.text))
    return _check_shell(shown)


SHOWN = all_shown()


@pytest.mark.parametrize("shown", SHOWN, ids=lambda s: f"{s.doc}:{s.line}")
def test_each_command_the_docs_show_works(shown: Shown) -> None:
    problems = check(shown)
    assert not problems, "\n".join(problems)


def test_the_docs_show_the_quick_start_the_cli_and_the_magics() -> None:
    """The reader finds what it should: a broken reader would let every doc pass."""
    texts = {(s.doc, s.text) for s in SHOWN}
    assert ("README.md", "scripts/start.sh") in texts
    assert ("README.md", "scripts/test.sh") in texts
    kinds = {s.kind for s in SHOWN}
    assert kinds == {"shell", "cli", "magic"}
    assert len({s.doc for s in SHOWN}) >= 6


def test_every_run_by_entry_is_still_shown() -> None:
    parts = {p.strip() for s in SHOWN if s.kind == "shell" for p in s.text.split("&&")}
    assert set(RUN_BY) <= parts, f"RUN_BY names commands no doc shows: {set(RUN_BY) - parts}"


def test_a_command_nobody_runs_fails_with_where_it_is_shown() -> None:
    doc = (
        "Intro `%status` and `%nosuchmagic`.\n\n"
        "```sh\n"
        "co-kernel status --no-such-option   # a comment\n"
        "frobnicate --all \\\n"
        "  --now\n"
        "```\n\n"
        "```console\n"
        "$ co-kernel nosuchcommand\n"
        "output that is not a command\n"
        "```\n"
    )
    shown = shown_in("docs/new.md", doc)
    assert [(s.line, s.kind, s.text) for s in shown] == [
        (4, "shell", "co-kernel status --no-such-option"),
        (5, "shell", "frobnicate --all --now"),
        (10, "shell", "co-kernel nosuchcommand"),
        (1, "magic", "%status"),
        (1, "magic", "%nosuchmagic"),
    ]
    problems = {s.text: check(s) for s in shown}
    assert problems["%status"] == []
    assert problems["%nosuchmagic"] == [
        "docs/new.md:1 shows `%nosuchmagic`: %nosuchmagic is not in the magic registry"
        " (co_kernel.magics.MAGICS)"
    ]
    assert "has no option --no-such-option" in problems["co-kernel status --no-such-option"][0]
    assert problems["frobnicate --all --now"] == [
        "docs/new.md:5 shows `frobnicate --all --now`, which no test or script runs: run it"
        " as shown in a test, in scripts/ or .ci/, or name the file that runs it in RUN_BY"
        " (test_docs_commands.py)"
    ]
    assert "exits 2" in problems["co-kernel nosuchcommand"][0]
