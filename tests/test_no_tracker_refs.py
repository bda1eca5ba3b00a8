"""Comments, docstrings, test names and documents give reasons, not tracker numbers or history.

A reader of the repository has no tracker to follow a number to, and a comment that tells
what the code once did says nothing about what it guards against now: either way the
comment should state the rule or the reason instead. Public references stay: an upstream
project's ``owner/repo#N`` and the incident or CVE a test guards against.

Tracker references are searched in the whole text of every file (identifiers and strings
too, so a test's name cannot carry one). History phrases are searched in what explains
code (Python comments and docstrings, TypeScript comments) and in documents and scripts;
a message Co shows the person ("You no longer trust ...") is behaviour, not narration.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = (
    "co_kernel",
    "labextension/src",
    "labextension/tests",
    "tests",
    "scripts",
    "benchmarks",
    "docs",
    "notebooks",
    ".ci",
)
FILES = ("pyproject.toml", "README.md", "CONTRIBUTING.md", "conftest.py", "labextension/build.sh")
SUFFIXES = frozenset({".py", ".ts", ".tsx", ".toml", ".md", ".sh", ".ipynb"})
SKIPPED = (
    ROOT / "co_kernel" / "labextension",  # the extension's build output
    Path(__file__).resolve(),  # this file names what it forbids, to test the patterns
)
SKIPPED_PARTS = frozenset({"__pycache__", "node_modules", ".ipynb_checkpoints"})

TRACKER = re.compile(
    # "issue 27", "Issue #27", "seed 003", "task 4", test_issue_27 ...
    r"(?<![A-Za-z])(?:(?:issue|seed)[ _]?#?\d+|task ?#?\d+)"
    # ... and a bare "#27" (not an HTML entity, a colour, an anchor or owner/repo#27)
    r"|(?:^|(?<=[\s(\[]))#\d+(?![\w-])",
    re.IGNORECASE | re.MULTILINE,
)
HISTORY = re.compile(r"\b(?:as before|used to|no longer)\b", re.IGNORECASE)

ALLOWED = frozenset(
    {
        # A person's note in the notes tool's test data: "#42" must not read as a tag.
        ("tests/tools/test_notes.py", "issue #42"),
    }
)


def _sources() -> Iterator[Path]:
    for name in FILES:
        yield ROOT / name
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if (
                path.suffix in SUFFIXES
                and path.is_file()
                and not SKIPPED_PARTS.intersection(path.parts)
                and not any(path.is_relative_to(s) for s in SKIPPED)
            ):
                yield path


def _notebook_text(path: Path) -> str:
    """The cells' sources (outputs are what a recorded run printed, not ours to word)."""
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    return "\n".join("".join(c.get("source", "")) for c in cells)


def _python_prose(text: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and each docstring, attribute docstrings included."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            yield node.lineno, node.value.value


def _typescript_prose(text: str) -> Iterator[tuple[int, str]]:
    for match in re.finditer(r"//[^\n]*|/\*.*?\*/", text, re.DOTALL):
        yield text.count("\n", 0, match.start()) + 1, match.group()


def _findings(path: Path) -> Iterator[str]:
    rel = path.relative_to(ROOT).as_posix()
    text = _notebook_text(path) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8")
    for match in TRACKER.finditer(text):
        if (rel, match.group()) not in ALLOWED:
            line = text.count("\n", 0, match.start()) + 1
            yield f"{rel}:{line}: {match.group()!r} names a tracker entry"
    if path.suffix == ".py":
        prose = list(_python_prose(text))
    elif path.suffix in (".ts", ".tsx"):
        prose = list(_typescript_prose(text))
    else:
        prose = [(1, text)]
    for start, chunk in prose:
        for match in HISTORY.finditer(chunk):
            line = start + chunk.count("\n", 0, match.start())
            yield f"{rel}:{line}: {match.group()!r} tells history instead of a reason"


def test_no_tracker_references_or_history() -> None:
    sources = list(_sources())
    assert len(sources) > 300, "the search must reach the package, the tests and the docs"
    found = [finding for path in sources for finding in _findings(path)]
    assert not found, (
        "Say the rule or the reason the code stands for (what it guards against and why), "
        "not a tracker number or what the code once did; a public incident, a CVE or an "
        "upstream owner/repo#N may be named:\n" + "\n".join(found)
    )


def test_the_search_finds_what_it_forbids() -> None:
    """The patterns catch each form, and leave random seeds, colours and anchors alone."""
    caught = [
        "# the reply (issue 27)",
        "def test_issue_36_cards():",
        "/** The panel (seed 003's monitor). */",
        "# #21 item 9: a headless denial",
        "see Task 4",
    ]
    assert all(TRACKER.search(text) for text in caught)
    kept = [
        "rng = random.Random(seed)",
        "color:#222;",
        "&#104;ttp://",
        "[section 5](#5-managed-settings)",
        "moby/moby#27289",
        "pytest-dev/pytest-xdist#1386",
    ]
    assert not [text for text in kept if TRACKER.search(text)]
    # Narration in a comment is found; the same words in a message the person reads are not.
    code = 'x = 1  # the kernel used to drop it\nsay("You no longer trust it")\n'
    assert [line for line, chunk in _python_prose(code) if HISTORY.search(chunk)] == [1]
