"""Outside text made inert for a terminal, and hidden characters made visible.

``terminal_safe`` is the one sanitiser for text from outside the person (an answer, a tool's
arguments, a diff, a file name, a provider's error, what a ``!`` command printed) on its way
to a terminal. A terminal obeys control characters: an OSC sequence writes the clipboard
(52), sets the window title (2) or hides a link's target (8); a CSI sequence clears the
screen or moves the cursor; a lone carriage return or backspaces overwrite what was shown;
the single C1 characters U+009B and U+009D start CSI and OSC sequences on terminals that
take 8-bit controls, and survive JSON escaping. So every control character is shown as a
visible mark instead (``␛]52;…␇``, ``␛[2J``, ``⟨U+009B⟩``): the person sees that the text
tried something, and nothing happens. Kept as they are: newline, tab, CR+LF, and, where
``keep_sgr``, SGR sequences that only colour or weight text (what ``ls --color``, a test
runner or a Python traceback prints). An SGR that can hide or disguise text (conceal,
reverse video, blink) is shown like any other sequence, which is also what keeps Co's own
question marker (reverse video, ``_stdin.QUESTION_MARK``) out of reach of outside text.

``mark_hidden`` is the one "find and mark" for characters a reader cannot see but a
program reads: bidi controls (Trojan Source, CVE-2021-42574), zero-width characters, the
BOM, invisible operators, tag characters and variation selectors (ASCII smuggling). An
approval question on the console and the approval and tool cards in a notebook show each
as ``⟨U+202E⟩`` and say so in a warning (``hidden_warning``). The JupyterLab extension
draws its tool card from the marked payload and its ``hidden`` list, and marks again with
its twin (``markHidden`` in ``labextension/src/format.ts``, same character set): a saved
notebook's card comes from the file, which no kernel marked.
"""

from __future__ import annotations

import re
import unicodedata

from ..inert import control_picture

__all__ = ["hidden_characters", "hidden_warning", "mark_hidden", "terminal_safe"]

_KEPT_SGR = frozenset(
    {0, 1, 2, 3, 4, 9, 22, 23, 24, 29, 39, 49}
    | set(range(30, 38))
    | set(range(40, 48))
    | set(range(90, 98))
    | set(range(100, 108))
)
"""Reset, bold, dim, italic, underline, strike-through, their ends, and colours. Not kept:
blink (5, 6), reverse video (7), conceal (8) and the rest, whose use on outside text is to
hide it or to pass for Co's own marker."""

_SGR = re.compile(r"\x1b\[([0-9;]*)m")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")
"""Every C0 control but tab and newline, DEL, every C1 control, and a CR not ending a
line (CR+LF is how some programs end lines; a lone CR returns over what was shown)."""

_HIDDEN = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u2069\u3164\ufe00-\ufe0d\ufeff\uffa0\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
"""Characters that show nothing (or reorder what is around them) yet are read by a program
or a model. Variation selectors 15 and 16 (U+FE0E, U+FE0F) are left alone: they choose
text or emoji style of a visible character, as in ``⚠️``."""


def _sgr_is_kept(params: str) -> bool:
    if not params:
        return True  # ESC [ m is a reset
    values = [int(p) if p else 0 for p in params.split(";")]
    i = 0
    while i < len(values):
        value = values[i]
        if value in (38, 48):  # 256-colour or true colour: 38;5;n or 38;2;r;g;b
            kind = values[i + 1] if i + 1 < len(values) else None
            width = {5: 1, 2: 3}.get(kind) if kind is not None else None
            if width is None or i + 2 + width > len(values):
                return False
            i += 2 + width
            continue
        if value not in _KEPT_SGR:
            return False
        i += 1
    return True


def _visible(text: str) -> str:
    return _CONTROL.sub(lambda m: control_picture(m.group(0)), text)


def terminal_safe(text: str, *, keep_sgr: bool = True) -> str:
    """``text`` with every control character and sequence shown instead of obeyed.

    ``keep_sgr``: keep colour and weight sequences (``_KEPT_SGR``); without it, every SGR
    is shown too, for text that Co's own styling must stand apart from.
    """
    if not keep_sgr:
        return _visible(text)
    out: list[str] = []
    last = 0
    for match in _SGR.finditer(text):
        if _sgr_is_kept(match.group(1)):
            out.append(_visible(text[last : match.start()]))
            out.append(match.group(0))
            last = match.end()
    out.append(_visible(text[last:]))
    return "".join(out)


def hidden_characters(text: str) -> list[str]:
    """The hidden characters in ``text``, each once, as ``U+202E RIGHT-TO-LEFT OVERRIDE``."""
    found = dict.fromkeys(_HIDDEN.findall(text))
    return [f"U+{ord(c):04X} {unicodedata.name(c, 'invisible character')}" for c in found]


def mark_hidden(text: str) -> str:
    """``text`` with each hidden character shown as ``⟨U+202E⟩`` in its place."""
    return _HIDDEN.sub(lambda m: control_picture(m.group(0)), text)


def hidden_warning(found: list[str]) -> str:
    """One line that says which hidden characters were found (marked ``⟨U+…⟩``)."""
    if not found:
        return ""
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return (
        f"⚠ Hidden characters, marked ⟨U+…⟩ where they are: {shown}. They can make code or "
        "text read differently from what runs; check before approving."
    )
