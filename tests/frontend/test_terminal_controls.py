"""The terminal sanitiser and the hidden-character marks, on hand-picked and generated text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from co_kernel.frontend import hidden_characters, hidden_warning, mark_hidden, terminal_safe

ESC = "\x1b"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        # OSC 52 writes the clipboard, OSC 2 the window title, OSC 8 hides a link's target.
        (f"{ESC}]52;c;cm0gLXJmIH4={chr(7)}", "␛]52;c;cm0gLXJmIH4=␇"),
        (f"{ESC}]2;pwned{ESC}\\", "␛]2;pwned␛\\"),
        (
            f"{ESC}]8;;https://evil.test{ESC}\\docs{ESC}]8;;{ESC}\\",
            "␛]8;;https://evil.test␛\\docs␛]8;;␛\\",
        ),
        # Clear screen, cursor home and moves, erase line.
        (f"{ESC}[2J{ESC}[H{ESC}[3A{ESC}[2K", "␛[2J␛[H␛[3A␛[2K"),
        # 8-bit CSI and OSC, NEL: C1 controls have no pictures.
        ("\x9b2J\x9d0;t\x07\x85", "⟨U+009B⟩2J⟨U+009D⟩0;t␇⟨U+0085⟩"),
        # BEL, backspaces over text, DEL, a NUL.
        ("ok\x07\x08\x08no\x7f\x00", "ok␇␈␈no␡␀"),
    ],
)
def test_controls_and_sequences_are_shown_not_obeyed(raw: str, shown: str) -> None:
    assert terminal_safe(raw) == shown
    assert terminal_safe(raw, keep_sgr=False) == shown


def test_a_lone_carriage_return_is_shown_and_line_ends_are_kept() -> None:
    # "\r" returns over what was printed: the harmless command hides the real one.
    assert terminal_safe("rm -rf ~\recho safe   ") == "rm -rf ~␍echo safe   "
    assert terminal_safe("a\r\nb\n\tc\r\n") == "a\r\nb\n\tc\r\n"


def test_colour_and_weight_are_kept_hiding_styles_are_shown() -> None:
    coloured = f"{ESC}[1;31merror{ESC}[0m {ESC}[38;5;208mo{ESC}[48;2;1;2;3mk{ESC}[m {ESC}[2;3;4m"
    assert terminal_safe(coloured) == coloured
    # Conceal, reverse video (Co's question marker), blink: shown, whole.
    assert terminal_safe(f"{ESC}[8msecret") == "␛[8msecret"
    assert terminal_safe(f"{ESC}[7m Co {ESC}[0m") == f"␛[7m Co {ESC}[0m"
    assert terminal_safe(f"{ESC}[1;5m!") == "␛[1;5m!"
    assert terminal_safe(f"{ESC}[38;5m") == "␛[38;5m"  # incomplete 256-colour
    # Without SGR (arguments, diffs, answers): colours are shown too.
    assert terminal_safe(f"{ESC}[31mred{ESC}[0m", keep_sgr=False) == "␛[31mred␛[0m"


def test_hidden_characters_are_marked_and_named() -> None:
    text = "access = 'user\u202e \u2066// admin\u2069\u2066'\u200b\ufeff\U000e0041"
    assert mark_hidden(text) == (
        "access = 'user⟨U+202E⟩ ⟨U+2066⟩// admin⟨U+2069⟩⟨U+2066⟩'⟨U+200B⟩⟨U+FEFF⟩⟨U+E0041⟩"
    )
    found = hidden_characters(text)
    assert found[0] == "U+202E RIGHT-TO-LEFT OVERRIDE"
    assert len(found) == 6  # each character once
    warning = hidden_warning(found)
    assert warning.startswith("⚠ Hidden characters") and "U+202E RIGHT-TO-LEFT OVERRIDE" in warning
    # An emoji's presentation selector is part of what one sees: not flagged.
    assert hidden_characters("⚠️ ok") == [] and hidden_warning([]) == ""


def _hiding(params: str) -> bool:
    """Whether an SGR's parameters blink, reverse or conceal (colour indexes aside)."""
    values = [int(p or 0) for p in params.split(";")]
    i = 0
    while i < len(values):
        if values[i] in (38, 48):
            i += 3 if values[i + 1 : i + 2] == [5] else 5
            continue
        if values[i] in (5, 6, 7, 8):
            return True
        i += 1
    return False


_OBEYED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@given(st.text(alphabet=st.sampled_from("\x1b\x9b\x9d\x07\x08\r\n\t[]();m0123478HJK ab\x85")))
def test_no_control_reaches_the_terminal_but_line_ends_and_kept_sgr(text: str) -> None:
    plain = terminal_safe(text, keep_sgr=False)
    assert _OBEYED.search(plain.replace("\r\n", "")) is None
    styled = terminal_safe(text)
    # What is left of ESC after taking out every kept SGR: nothing.
    rest = re.sub(r"\x1b\[[0-9;]*m", "", styled).replace("\r\n", "")
    assert _OBEYED.search(rest) is None, repr(styled)
    for params in re.findall(r"\x1b\[([0-9;]*)m", styled):
        assert not _hiding(params), repr(styled)
    # Sanitised text is stable: showing it again changes nothing.
    assert terminal_safe(styled) == styled and terminal_safe(plain, keep_sgr=False) == plain


def test_the_extensions_twin_marks_the_same_characters() -> None:
    # A saved notebook's card is marked by the extension (format.ts), a live one by the
    # kernel: the same characters must be flagged in both places.
    source = (Path(__file__).parents[2] / "labextension" / "src" / "format.ts").read_text()
    table = source[source.index("const HIDDEN") : source.index("function isHidden")]
    ranges = [(int(lo, 16), int(hi, 16)) for lo, hi in re.findall(r"\[0x(\w+), 0x(\w+)\]", table)]
    assert ranges
    for code in range(0xE0200):
        in_ts = any(lo <= code <= hi for lo, hi in ranges)
        assert bool(hidden_characters(chr(code))) == in_ts, hex(code)
