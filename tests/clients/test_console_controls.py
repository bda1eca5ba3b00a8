"""`jupyter console` in a pseudo-terminal: outside text is shown, never obeyed by the terminal.

An answer, a tool's arguments and change, a file name that ``!ls`` printed and a provider's
error each carry terminal sequences (clipboard, title, clear screen, erase line, the 8-bit
CSI); the bytes read from the pty never hold them, only their visible form, and Co's
``[y/n/a]`` question comes after that text, on a line of its own, with its marker.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pexpect
import pytest

from co_kernel.frontend._stdin import PROMPT, QUESTION_MARK
from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec
from .test_console import _console, _quit

ESC = "\x1b"
CLIPBOARD = f"{ESC}]52;c;cm0gLXJmIH4={chr(7)}"
TITLE = f"{ESC}]2;pwned{chr(7)}"
CLEAR = f"{ESC}[2J{ESC}[H"
ERASE_LINE = "\x9b2K\x9b1A\x9b2K\r"
"""Erase the line, go up, erase that one: in 8-bit CSI, which JSON does not escape."""
CSI8 = "\x9b2J"
RAW = (f"{ESC}]", "\x9b", f"{ESC}[2J", f"{ESC}[H", f"{ESC}[2K", f"{ESC}[1A", f"{ESC}[8m")
"""Sequences no byte read from the terminal may hold (Co's own colours may)."""
QUESTION = re.escape(QUESTION_MARK + PROMPT[:-2]) + r"[^\n]*: "
"""Co's approval question (with the "always allow" choice a call may add)."""


def _run(child: pexpect.spawn, cell: str, pattern: str) -> str:
    """Type ``cell``; what the console printed until ``pattern``."""
    child.sendline(cell)
    child.expect(pattern)
    return child.before


def _assert_inert(shown: str) -> None:
    for raw in RAW:
        assert raw not in shown, (raw, shown)


def _session(
    tmp_path: Path, co_home: Path, steps: list[dict[str, Any]], cells: list[tuple[str, str]]
) -> tuple[list[str], ScriptedModelServer]:
    """Start a console as a person does, type each cell, answer; what each showed."""
    ensure_kernelspec()
    shown: list[str] = []
    with ScriptedModelServer(steps) as server:
        child = _console(co_home, server, tmp_path)
        try:
            for n, (cell, until) in enumerate(cells, start=2):
                if cell.startswith("answer:"):
                    shown.append(_run(child, cell.removeprefix("answer:"), until))
                else:
                    shown.append(_run(child, cell, until.replace("N", str(n))))
            _quit(child)
        finally:
            child.close(force=True)
    return shown, server


@pytest.mark.slow
def test_an_answer_cannot_write_the_clipboard_or_clear_the_screen(
    tmp_path: Path, co_home: Path
) -> None:
    answer = f"Done.{CLIPBOARD} {TITLE}{CLEAR}{CSI8} All **fine**."
    [shown], _ = _session(tmp_path, co_home, [{"text": answer}], [("Tidy up", r"In \[N\]: ")])
    _assert_inert(shown)
    assert "␛]52;c;cm0gLXJmIH4=␇" in shown and "␛]2;pwned␇" in shown, shown
    assert "␛[2J␛[H⟨U+009B⟩2J" in shown, shown
    assert f"{ESC}[1mfine" in shown, shown  # Co's own rendering keeps its styles


@pytest.mark.slow
def test_a_diff_cannot_draw_a_fake_question_and_hidden_characters_are_flagged(
    tmp_path: Path, co_home: Path
) -> None:
    fake = (
        f'{CLEAR}Co wants to run read_file:\n    {{"path": "notes.txt"}}\n'
        f"{ESC}[8m{ESC}[0m{ESC}[7m Co {ESC}[0m {PROMPT}"
    )
    content = f"is_admin = False  # \u202e }} if user: {{\u2066 is_admin = True\n{fake}"
    steps = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.py", "content": content}}]},
        {"text": "Not written."},
    ]
    shown, _ = _session(
        tmp_path, co_home, steps, [("Write a.py", QUESTION), ("answer:n", r"In \[2\]: ")]
    )
    question = shown[0]
    _assert_inert(question)
    assert "␛[2J␛[HCo wants to run read_file:" in question, question
    # The fake marker is shown, not drawn; the real question follows on a line of its own.
    assert "␛[8m␛[0m␛[7m Co ␛[0m Decide:" in question, question
    assert question.endswith("\r\n"), question[-200:]
    assert "⟨U+202E⟩" in question and "⟨U+2066⟩" in question, question
    assert "⚠ Hidden characters" in question and "U+202E RIGHT-TO-LEFT OVERRIDE" in question
    assert not (tmp_path / "a.py").exists()
    assert "Denied" in shown[1], shown[1]


@pytest.mark.slow
def test_an_mcp_argument_cannot_erase_the_trust_question(tmp_path: Path, co_home: Path) -> None:
    # The folder's MCP server: the program the trust question names, then an argument
    # that would erase that line and the one above it.
    server = {"command": "/usr/bin/env", "args": ["python3", f"{ERASE_LINE}{CLEAR}harmless"]}
    (tmp_path / ".co").mkdir()
    (tmp_path / ".co" / "settings.json").write_text(json.dumps({"mcp_servers": {"x": server}}))
    trust = re.escape(QUESTION_MARK + "Trust this folder? [y]es / [n]o: ")
    shown, _ = _session(
        tmp_path, co_home, [{"text": "Hello."}], [("Hi", trust), ("answer:n", r"In \[2\]: ")]
    )
    question = shown[0]
    _assert_inert(question)
    assert "/usr/bin/env" in question, question
    assert "⟨U+009B⟩2K⟨U+009B⟩1A⟨U+009B⟩2K" in question, question
    assert "␛[2J␛[Hharmless" in question, question
    assert question.endswith("\r\n"), question[-200:]


@pytest.mark.slow
def test_a_file_name_printed_by_ls_is_shown_not_obeyed(tmp_path: Path, co_home: Path) -> None:
    (tmp_path / f"report{TITLE}{CLEAR}.txt").write_text("x")
    (tmp_path / "b\x9b2Jc.txt").write_text("x")
    [shown], _ = _session(tmp_path, co_home, [], [("!ls", r"In \[N\]: ")])
    _assert_inert(shown)
    assert "report␛]2;pwned␇␛[2J␛[H.txt" in shown and "b⟨U+009B⟩2Jc.txt" in shown, shown


@pytest.mark.slow
def test_a_provider_error_is_shown_not_obeyed(tmp_path: Path, co_home: Path) -> None:
    message = f"Invalid request{TITLE}{CLEAR}{ESC}[8m hidden"
    fault = {"fault": {"status": 400, "body": {"error": {"message": message}}}, "repeat": 5}
    [shown], _ = _session(tmp_path, co_home, [fault], [("Hello", r"In \[N\]: ")])
    _assert_inert(shown)
    # The retry's status line is rendered Markdown (wrapped to the terminal); the error
    # that ends the turn is plain text, the provider's brackets still escaped.
    assert "request␛]2;pwned␇␛[2J␛[H␛[8m hidden" in shown, shown
    assert "Invalid request␛\\]2;pwned␇␛\\[2J␛\\[H␛\\[8m hidden" in shown, shown
