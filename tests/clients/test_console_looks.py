"""`jupyter console` in a pseudo-terminal, as a person reads it: a diff coloured like git's
(when the terminal shows colours), long table cells wrapped, a `%status` that fits a screen."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec
from . import terminal_env
from .test_console import _expect_prompt, _quit
from .test_console_controls import QUESTION

ESC = "\x1b"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
OLD = "total = df.groupby('month').sum()\n"
NEW = "total = df.resample('MS', on='date').sum()\n"
LONG_PATH = "/srv/projects/2026/quarterly-reports/revenue/replays/analysis-of-the-dip.replay.jsonl"


def _console(
    co_home: Path, server: ScriptedModelServer, cwd: Path, rows: int, cols: int, **extra: str
) -> pexpect.spawn:
    """`jupyter console --kernel co` in a terminal of ``rows`` x ``cols``, as a person's
    shell starts it (``extra``: what that shell also sets, e.g. NO_COLOR)."""
    env = {
        **terminal_env(co_home.parent / "home", co_home, server),
        "PROMPT_TOOLKIT_NO_CPR": "1",
        **extra,
    }
    console = Path(sys.executable).with_name("jupyter-console")
    child = pexpect.spawn(
        str(console), ["--kernel", "co", "--simple-prompt"], env=env, cwd=str(cwd),
        encoding="utf-8", timeout=90, dimensions=(rows, cols),
    )  # fmt: skip
    _expect_prompt(child, 1)
    return child


def _edit_question(tmp_path: Path, co_home: Path, **extra: str) -> str:
    """The `[y/n/a]` question of an edit of script.py, answered no; what the console showed."""
    ensure_kernelspec()
    tmp_path.mkdir()
    (tmp_path / "script.py").write_text("import pandas as pd\n" + OLD)
    call = {"path": "script.py", "old": OLD, "new": NEW}
    steps = [
        {"tool_calls": [{"name": "edit_file", "arguments": call}]},
        {"text": "Left as it was."},
    ]
    with ScriptedModelServer(steps) as server:
        child = _console(co_home, server, tmp_path, 40, 100, **extra)
        try:
            child.sendline("Resample by month instead.")
            child.expect(QUESTION)
            question = child.before
            child.sendline("n")
            _expect_prompt(child, 2)
            _quit(child)
        finally:
            child.close(force=True)
    assert (tmp_path / "script.py").read_text() == "import pandas as pd\n" + OLD
    return question


@pytest.mark.slow
def test_the_diff_is_coloured_like_git_where_the_terminal_shows_colours(
    tmp_path: Path, co_home: Path
) -> None:
    question = _edit_question(tmp_path / "colour", co_home)
    lines = question.replace("\r\n", "\n").split("\n")
    added = [line for line in lines if _ANSI.sub("", line) == "+" + NEW.rstrip("\n")]
    removed = [line for line in lines if _ANSI.sub("", line) == "-" + OLD.rstrip("\n")]
    assert added == [f"{ESC}[32m+{NEW.rstrip()}{ESC}[0m"], question
    assert removed == [f"{ESC}[31m-{OLD.rstrip()}{ESC}[0m"], question
    hunk = [line for line in lines if _ANSI.sub("", line).startswith("@@")]
    assert hunk and all(line.startswith(f"{ESC}[36m@@") for line in hunk), question
    # The context line and the arguments stay plain.
    assert "\n import pandas as pd\n" in "\n".join(lines), question
    assert not any(_ANSI.search(line) for line in lines if '"path"' in line), question
    # A person who asked for no colours (NO_COLOR) gets the same diff, plain.
    plain = _edit_question(tmp_path / "plain", co_home, NO_COLOR="1").replace("\r\n", "\n")
    assert "\n+" + NEW.rstrip() + "\n" in plain and "\n-" + OLD.rstrip() + "\n" in plain, plain
    # Nothing in it is coloured (the reset before the question is Co's, and no colour).
    assert not re.search(r"\x1b\[(?!0m)[0-9;]*m", plain), plain


@pytest.mark.slow
def test_a_long_table_cell_is_wrapped_within_the_terminal(tmp_path: Path, co_home: Path) -> None:
    ensure_kernelspec()
    answer = (
        f"The scripts:\n\n| name | where |\n|---|---|\n| dip | {LONG_PATH} |\n| plain | short |\n"
    )
    with ScriptedModelServer([{"text": answer}]) as server:
        child = _console(co_home, server, tmp_path, 40, 60)
        try:
            child.sendline("Where are the scripts?")
            _expect_prompt(child, 2)
            shown = child.before
            _quit(child)
        finally:
            child.close(force=True)
    lines = [_ANSI.sub("", line) for line in shown.replace("\r\n", "\n").split("\n")]
    # The answer: after the echoed prompt, before the footer line (stderr, "── model · …").
    start = lines.index("The scripts:")
    end = next(i for i, line in enumerate(lines) if line.startswith("── "))
    lines = lines[start:end]
    table = [line for line in lines if line.strip()]
    assert [line for line in lines if len(line) > 60] == []
    assert "…" not in "".join(table), table
    # The path's pieces, read down its column, are the whole path.
    column = "".join(line.split(" ", 3)[-1].strip() for line in table if "/" in line)
    assert LONG_PATH in column.replace(" ", ""), table


@pytest.mark.slow
def test_status_fits_a_terminal_and_status_all_shows_everything(
    tmp_path: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    with ScriptedModelServer([]) as server:
        child = _console(co_home, server, tmp_path, 24, 80)
        try:
            child.sendline("%status")
            _expect_prompt(child, 2)
            short = child.before
            child.sendline("%status all")
            _expect_prompt(child, 3)
            full = child.before
            _quit(child)
        finally:
            child.close(force=True)
    short_lines = _ANSI.sub("", short).replace("\r\n", "\n").strip("\n").split("\n")[1:]
    full_plain = _ANSI.sub("", full)
    # One screen, the echoed command and the next prompt included.
    assert len(short_lines) <= 22, f"{len(short_lines)} lines:\n" + "\n".join(short_lines)
    short_plain = "\n".join(short_lines)
    for what in ("compat:scripted", "reachable", "%yolo", "sandbox", "secrets"):
        assert what in short_plain, short_plain
    assert "%status all shows all" in short_plain, short_plain
    # The rest is one command away: rows the short one sums up or leaves out.
    for what in ("gemini_api_key", "telemetry", "paths", "sessions"):
        assert what in full_plain and what not in short_plain, what
    assert len(full_plain.splitlines()) > 40
