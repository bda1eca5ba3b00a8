"""One colour and one word per decision: the kernel's table and the extension's are equal.

The card (ipywidgets, drawn by the kernel) and the status item's panel, the toast, the
tool card's badge and the activity panel (drawn by the extension) show the same answers
and verdicts; each side keeps them in one table, and this test reads both.
"""

from __future__ import annotations

import re
from pathlib import Path

from co_kernel.frontend._base import DECISION_TEXT
from co_kernel.frontend._decisions import CHOICES, VERDICTS
from co_kernel.frontend._stdin import PROMPT
from co_kernel.frontend._widgets import BUTTONS

APPROVAL_TS = Path(__file__).parents[2] / "labextension" / "src" / "approvals" / "approval.ts"


def _table(name: str) -> str:
    """The body of ``export const NAME ... = { ... };`` in approval.ts."""
    text = APPROVAL_TS.read_text()
    found = re.search(rf"export const {name}\b[^=]*= \{{\n(.*?)\n\}};", text, re.DOTALL)
    assert found, f"{name} is missing from {APPROVAL_TS.name}"
    return found.group(1)


def test_the_extension_offers_each_answer_as_the_kernel_does() -> None:
    entry = re.compile(r"^\s+(\w+): \{ label: '([^']*)', key: '(\w)', tone: '(\w+)' \},?$")
    lines = _table("CHOICES").splitlines()
    ts = [entry.match(line) for line in lines]
    assert all(ts), lines
    assert [m.groups() for m in ts if m] == [(c.decision, c.label, c.key, c.tone) for c in CHOICES]


def test_the_extension_words_and_colours_each_verdict_as_the_kernel_does() -> None:
    entry = re.compile(r"^\s+'?([\w ]+)'?: \{ text: '([^']*)', tone: '(\w+)' \},?$")
    lines = _table("VERDICTS").splitlines()
    ts = [entry.match(line) for line in lines]
    assert all(ts), lines
    assert {m.group(1): (m.group(2), m.group(3)) for m in ts if m} == VERDICTS


def test_the_card_and_the_console_use_the_same_words_and_colours() -> None:
    # The card's buttons: ipywidgets' button style is the tone.
    assert [(label, style) for label, _, style, _ in BUTTONS] == [
        (c.label, c.tone) for c in CHOICES
    ]
    assert "[y] Approve / [n] Deny / [a] Approve all" in PROMPT
    # Each verdict line on a card or the console starts with the verdict's own words.
    for label, (text, _tone) in VERDICTS.items():
        if label in DECISION_TEXT:
            shown = DECISION_TEXT[label].split(" ", 1)[1]
            assert shown.lower().startswith(text), (label, shown)
