"""One colour and one word for each decision, wherever Co shows it.

A person answers the same question on the card (ipywidgets), in the status item's panel,
with a shortcut or on the console, and reads the verdict on the card, a toast, the tool
card's badge and the activity panel. Each choice and each verdict therefore has one tone
and one wording here, and the extension's twin (``labextension/src/approvals/approval.ts``) has the
same; ``tests/frontend/test_decisions.py`` keeps the two equal.

A tone is a name ipywidgets gives a button style, drawn from the JupyterLab theme's
colours: ``success`` (green), ``danger`` (red), ``warning`` (orange), and ``neutral``
(grey) for a question nobody decided. Deny is red because it stops what was proposed,
Approve all orange because it lets later calls run unasked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..permissions import (
    ALWAYS_ALLOWED,
    APPROVED,
    APPROVED_ALL,
    DENIED,
    INTERRUPTED,
    TIMED_OUT,
    is_refusal,
)
from ..turn import ApprovalDecision

__all__ = ["ACCENTS", "CANCELLED", "CHOICES", "VERDICTS", "Choice", "Tone", "verdict_tone"]

Tone = Literal["success", "danger", "warning", "neutral"]


@dataclass(frozen=True)
class Choice:
    """One answer to an approval question, as every client offers it."""

    decision: ApprovalDecision
    """What the turn receives."""
    label: str
    """The button's text (the card, the status item's panel, the commands)."""
    key: str
    """What the console takes for it (``[y]``)."""
    tone: Tone
    """Its colour."""
    tooltip: str
    """What it does, in a sentence."""


CHOICES: tuple[Choice, ...] = (
    Choice("approve", "Approve", "y", "success", "Run this call"),
    Choice(
        "deny",
        "Deny",
        "n",
        "danger",
        "Do not run it; the model is told and can propose something else",
    ),
    Choice(
        "approve_all", "Approve all", "a", "warning", "Run this and every later call this session"
    ),
)
"""The answers, in the order they are offered."""

CANCELLED = "cancelled"
"""The verdict of a question whose kernel restarted before anyone answered (drawn by the
extension, which sees the restart)."""

VERDICTS: dict[str, tuple[str, Tone]] = {
    APPROVED: ("approved", "success"),
    APPROVED_ALL: ("approved all", "success"),
    ALWAYS_ALLOWED: ("always allowed", "success"),
    DENIED: ("denied", "danger"),
    TIMED_OUT: ("timed out (denied)", "danger"),
    INTERRUPTED: ("interrupted", "neutral"),
    CANCELLED: ("cancelled", "neutral"),
}
"""Decision label -> how the verdict reads in a sentence, and its tone."""

ACCENTS: dict[Tone, str] = {
    "success": "#2e9e44",
    "danger": "#d9534f",
    "warning": "#f0ad4e",
    "neutral": "#9e9e9e",
}
"""Each tone as a colour where no theme is there to ask (a card's static HTML, a saved
notebook in another viewer): the light theme's, readable on dark ones too."""


def verdict_tone(label: str) -> Tone:
    """The tone of a decision label; one this table does not name is a denial's if the
    call did not run (``refused``), else an approval's."""
    known = VERDICTS.get(label)
    if known is not None:
        return known[1]
    return "danger" if is_refusal(label) else "success"
