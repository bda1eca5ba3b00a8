"""A proposal that touches several cells, approved in part.

The person may accept or reject each cell of one call (``ToolCallView.parts``). The
decision label says which were accepted, so the card, the audit row, telemetry and a
recorded session all name them, and a replay applies the same cells again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["ALL_PARTS_REJECTED", "accepted_parts", "partial_label", "split_partial"]

ALL_PARTS_REJECTED = (
    "The user rejected every cell of this proposal, so nothing changed. Do not retry it as "
    "is; ask what they want instead, or propose something else."
)
"""What the model reads when the person rejected each cell of a multi-cell proposal."""

_PARTIAL = re.compile(r"\((\d+) of (\d+) cells: ([\d, ]+)\)")


def partial_label(label: str, accepted: Sequence[int], total: int) -> str:
    """``approved (2 of 3 cells: 1, 3)``: ``label`` for a call approved in part (cells
    counted from 1, as the card shows them); ``label`` itself when every cell was taken."""
    if len(accepted) >= total:
        return label
    shown = ", ".join(str(i + 1) for i in accepted)
    return f"{label} ({len(accepted)} of {total} cells: {shown})"


def accepted_parts(label: str) -> list[int] | None:
    """The parts (from 0) a decision label says were accepted; None: the whole call."""
    found = _PARTIAL.search(label)
    if found is None:
        return None
    return [int(n) - 1 for n in found.group(3).split(",") if n.strip()]


def split_partial(label: str) -> tuple[str, list[bool] | None]:
    """A decision label without its cells, and which cells it accepted (None: all), as a
    recording keeps them."""
    found = _PARTIAL.search(label)
    if found is None:
        return label, None
    accepted = set(accepted_parts(label) or [])
    cells = [i in accepted for i in range(int(found.group(2)))]
    return (label[: found.start()] + label[found.end() :]).strip(), cells
