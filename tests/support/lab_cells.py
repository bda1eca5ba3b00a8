"""A notebook cell in JupyterLab or Notebook 7, as the browser tests watch it."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["wait_for_prompt"]


def wait_for_prompt(cell: Any, expected: str, timeout: float = 60) -> None:
    """Wait until the cell's input prompt reads ``expected`` (``"[1]:"`` once it has run)."""
    prompt = cell.locator(".jp-InputPrompt")
    deadline = time.monotonic() + timeout
    while prompt.inner_text().strip() != expected:
        assert time.monotonic() < deadline, f"prompt is {prompt.inner_text()!r}"
        time.sleep(0.1)
