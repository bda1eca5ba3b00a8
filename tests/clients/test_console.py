"""`jupyter console` in a pseudo-terminal: Co's Markdown arrives rendered for the terminal."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec
from . import terminal_env

ANSWER = (
    "# Capitals\n\nThe capital of **France** is *Paris*.\n\n"
    "| country | capital |\n|---|---|\n| France | Paris |\n| Spain | Madrid |\n\n"
    "- one\n- two\n"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _console(
    co_home: Path, server: ScriptedModelServer, cwd: Path, *, simple: bool = True
) -> pexpect.spawn:
    # A person's shell: its kernel does not inherit PYTEST_CURRENT_TEST, so ipykernel
    # captures the kernel's descriptors as it does for everyone. The full prompt
    # (prompt_toolkit, with history) never asks this pty where its cursor is.
    home = co_home.parent / "home"
    env = {**terminal_env(home, co_home, server), "PROMPT_TOOLKIT_NO_CPR": "1"}
    console = Path(sys.executable).with_name("jupyter-console")
    args = ["--kernel", "co", *(["--simple-prompt"] if simple else [])]
    child = pexpect.spawn(
        str(console), args, env=env, cwd=str(cwd), encoding="utf-8", timeout=90,
        dimensions=(40, 72),
    )  # fmt: skip
    _expect_prompt(child, 1)
    return child


def _expect_prompt(child: pexpect.spawn, n: int) -> None:
    # The full prompt colours the number: "In [", colour codes, "n", colour codes, "]: ".
    try:
        child.expect(rf"In \[(\x1b\[[0-9;]*m)*{n}(\x1b\[[0-9;]*m)*\]: ")
    except (pexpect.TIMEOUT, pexpect.EOF) as failed:
        # pexpect's own message keeps the last 100 characters; the whole screen since the
        # last match says what the console and its kernel were doing.
        shown = child.before if isinstance(child.before, str) else ""
        raise AssertionError(f"no prompt {n}: {type(failed).__name__}; shown:\n{shown}") from None


def _quit(child: pexpect.spawn) -> None:
    child.sendeof()  # Ctrl-D: `exit` would be a prompt to Co
    if child.expect([r"\(\[y\]/n\)", pexpect.EOF]) == 0:
        child.sendline("y")
        child.expect(pexpect.EOF)


@pytest.mark.slow
def test_answers_and_magic_tables_are_rendered_for_the_terminal(
    tmp_path: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    with ScriptedModelServer([{"text": ANSWER}]) as server:
        child = _console(co_home, server, tmp_path)
        try:
            child.sendline("Which capitals?")
            child.expect(r"In \[2\]: ")
            answer = child.before
            child.sendline("%status")
            child.expect(r"In \[3\]: ")
            status = child.before
            _quit(child)
        finally:
            child.close(force=True)
    plain = _ANSI.sub("", answer)
    # Rendered: no Markdown syntax left, bold as a terminal style, the table drawn.
    assert "**" not in plain and "# Capitals" not in plain and "|---" not in plain, plain
    assert "\x1b[1mFrance" in answer, answer
    assert "Capitals" in plain and "Madrid" in plain and "─" in plain, plain
    assert "• one" in plain, plain
    # %status: a table fitted to 72 columns, not pipes.
    status_plain = _ANSI.sub("", status)
    assert "| setting |" not in status_plain and "─" in status_plain, status_plain
    assert all(len(line) <= 72 for line in status_plain.splitlines()), status_plain


def _last_prompt(request: dict) -> str:
    [last] = [m for m in request["messages"] if m["role"] == "user"][-1:]
    content = last["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


@pytest.mark.slow
def test_up_arrow_brings_back_the_last_prompt_of_an_earlier_console(
    tmp_path: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    question = "Which city is the capital of France?"
    with ScriptedModelServer([{"text": "Paris."}, {"text": "Still Paris."}]) as server:
        first = _console(co_home, server, tmp_path)
        try:
            first.sendline(question)
            first.expect(r"In \[2\]: ")
            _quit(first)
        finally:
            first.close(force=True)
        # A new console, a new kernel: its history comes from Co's store, so the arrow
        # finds the prompt typed in the first one.
        second = _console(co_home, server, tmp_path, simple=False)
        try:
            second.send("\x1b[A")  # up arrow
            second.expect(re.escape(question))
            second.send("\r")
            second.expect("Still Paris.")
            _expect_prompt(second, 2)
            _quit(second)
        finally:
            second.close(force=True)
        assert len(server.requests) == 2
        assert _last_prompt(server.requests[1]) == question
