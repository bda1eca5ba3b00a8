"""`jupyter console` in a pseudo-terminal: Co's Markdown arrives rendered for the terminal."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pytest

from co_kernel.testing import ScriptedModelServer

from ..kernel_harness import ensure_kernelspec
from . import client_env

ANSWER = (
    "# Capitals\n\nThe capital of **France** is *Paris*.\n\n"
    "| country | capital |\n|---|---|\n| France | Paris |\n| Spain | Madrid |\n\n"
    "- one\n- two\n"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _console(co_home: Path, server: ScriptedModelServer, cwd: Path) -> pexpect.spawn:
    env = {**client_env(co_home, server), "TERM": "xterm"}
    console = Path(sys.executable).with_name("jupyter-console")
    child = pexpect.spawn(
        str(console), ["--kernel", "co", "--simple-prompt"], env=env, cwd=str(cwd),
        encoding="utf-8", timeout=90, dimensions=(40, 72),
    )  # fmt: skip
    child.expect(r"In \[1\]: ")
    return child


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
            child.sendeof()  # Ctrl-D: `exit` would be a prompt to Co
            if child.expect([r"\(\[y\]/n\)", pexpect.EOF]) == 0:
                child.sendline("y")
                child.expect(pexpect.EOF)
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
