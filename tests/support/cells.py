"""What a cell showed, read from the messages a real kernel published."""

from __future__ import annotations

from typing import Any

from co_kernel.frontend import MIME_TOOL_CALL

from .kernel_harness import CellResult

__all__ = ["tool_cards"]


def tool_cards(result: CellResult) -> list[dict[str, Any]]:
    """The final state of every tool-call card of the cell, in the order first shown."""
    return [d[MIME_TOOL_CALL] for d in result.final_displays().values() if MIME_TOOL_CALL in d]
