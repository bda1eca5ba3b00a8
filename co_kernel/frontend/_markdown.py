"""Streaming Markdown into a cell without quadratic traffic.

The answer is shown as a series of *segments*, each its own display output. Only the
segment in progress is updated; when it grows past ``split_at`` characters and holds a
finished Markdown block (a blank line outside any code fence), the finished part is
committed and a new segment starts. Updates are throttled to ``max_rate`` a second and
to a byte budget proportional to the text received, with an idle flush so a slow stream
never lags behind.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["MarkdownStream", "find_block_boundary"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def find_block_boundary(text: str) -> int:
    """Index just after the last blank line that lies outside a code fence, or -1."""
    fence: str | None = None
    best = -1
    pos = 0
    prev_blank = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * 3
        elif fence is not None and stripped.startswith(fence) and stripped.strip(fence[0]) == "":
            fence = None
        pos += len(line)
        blank = stripped == ""
        if blank and fence is None and not prev_blank and line.endswith("\n"):
            best = pos
        prev_blank = blank
    # A boundary at the very end is not a finished block yet: the next line may continue it.
    return best if 0 < best < len(text) else -1


class MarkdownStream:
    """Incremental Markdown rendering through display updates."""

    def __init__(
        self,
        publish: Callable[[str, str, bool], None],
        *,
        max_rate: float = 20.0,
        split_at: int = 800,
        budget_ratio: float = 2.0,
        budget_allowance: int = 2048,
        idle_flush: float = 0.25,
        call_later: Callable[[float, Callable[[], None]], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._publish = publish
        self._interval = 1.0 / max_rate
        self._split_at = split_at
        self._ratio = budget_ratio
        self._allowance = budget_allowance
        self._idle = max(idle_flush, self._interval)
        self._call_later = call_later
        self._clock = clock
        self._text = ""
        self._seg_start = 0
        self._seg_id: str | None = None
        self._sent = ""
        self._last = float("-inf")
        self._received = 0
        self._spent = 0
        self._timer: Any = None
        self.segments = 0
        """Number of display outputs created."""

    @property
    def text(self) -> str:
        return self._text

    def feed(self, delta: str) -> None:
        if not delta:
            return
        self._text += delta
        self._received += len(delta)
        since = self._clock() - self._last
        in_budget = self._spent <= self._ratio * self._received + self._allowance
        if since >= self._interval and in_budget:
            self.flush()
        elif self._timer is None and self._call_later is not None:
            wait = (self._interval if in_budget else self._idle) - since
            self._timer = self._call_later(max(wait, 0.0), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Send the segment in progress if it changed."""
        seg = self._text[self._seg_start :]
        if len(seg) > self._split_at:
            cut = find_block_boundary(seg)
            if cut > 0:
                self._send(seg[:cut])
                self._seg_start += cut
                self._seg_id, self._sent = None, ""
                seg = self._text[self._seg_start :]
        self._send(seg)

    def _send(self, seg: str) -> None:
        if seg == self._sent or not seg.strip():
            return
        update = self._seg_id is not None
        if not update:
            self._seg_id = uuid.uuid4().hex
            self.segments += 1
        assert self._seg_id is not None
        self._publish(self._seg_id, seg, update)
        self._sent = seg
        self._spent += len(seg)
        self._last = self._clock()

    def commit(self) -> str:
        """Final render of everything received; returns the full text."""
        self.cancel()
        self.flush()
        return self._text

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
