"""Streaming Markdown into a cell without quadratic traffic.

The answer is shown as a series of *segments*, each its own display output. Only the
segment in progress is updated; when it grows past ``split_at`` characters and holds a
finished Markdown block (a blank line outside any code fence), the finished part is
committed and the rest moves to a new segment, so each update re-sends at most about one
segment, never the whole answer.

Every message also carries an envelope (header, parent header, signature: about 600 bytes
with ipykernel) that dwarfs the few dozen characters a fast model sends per 50 ms. So
updates are throttled twice: at most ``max_rate`` a second, and within a byte budget of
``budget_ratio`` times the text received (plus ``budget_allowance``, so short answers
stream at full rate), counting each message as its text plus ``message_overhead``. When the
budget holds an update back, shown text still never trails the stream by more than
``max_lag`` seconds.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["MarkdownStream", "find_block_boundary"]

# Any indentation: a fence inside a list item is indented, and a line wrongly taken for a
# fence only costs a missed split, while a missed fence would split a code block.
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def find_block_boundary(text: str) -> int:
    """Index just after the last blank line that ends a finished block, or -1.

    The blank line must lie outside any code fence and be followed by an unindented line
    (the start of the next block): an indented one continues a list item, or is indented
    code, which a split would detach from its block.
    """
    fence: str | None = None
    best = -1
    candidate = -1
    pos = 0
    prev_blank = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        blank = stripped == ""
        if candidate >= 0 and not blank:
            if not line[0].isspace():
                best = candidate
            candidate = -1
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif (
            fence is not None
            and m
            and m.group(1).startswith(fence)
            and stripped.strip(fence[0]) == ""
        ):
            fence = None
        pos += len(line)
        if blank and fence is None and not prev_blank and line.endswith("\n"):
            candidate = pos
        prev_blank = blank
    return best


class MarkdownStream:
    """Incremental Markdown rendering through display updates."""

    def __init__(
        self,
        publish: Callable[[str, str, bool, bool], None],
        *,
        max_rate: float = 20.0,
        split_at: int = 600,
        budget_ratio: float = 3.0,
        budget_allowance: int = 8192,
        message_overhead: int = 600,
        max_lag: float = 1.0,
        call_later: Callable[[float, Callable[[], None]], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        cost: Callable[[str, bool], int] | None = None,
    ) -> None:
        """``cost(segment, final)``: bytes a message of that segment puts on the wire, not
        counting ``message_overhead`` (default: the segment's length)."""
        self._publish = publish
        self._cost = cost or (lambda seg, _final: len(seg))
        self._interval = 1.0 / max_rate
        self._split_at = split_at
        self._ratio = budget_ratio
        self._allowance = budget_allowance
        self._overhead = message_overhead
        self._max_lag = max(max_lag, self._interval)
        self._call_later = call_later
        self._clock = clock
        self._text = ""
        self._seg_start = 0
        self._seg_id: str | None = None
        self._sent = ""
        self._sent_final = False
        self._dirty = False
        self._last = float("-inf")
        self._received = 0
        self._timer: Any = None
        self.segments = 0
        """Number of display outputs created."""
        self.messages = 0
        """Number of display messages published (creations and updates)."""
        self.spent = 0
        """Estimated bytes published: ``cost`` plus ``message_overhead`` per message."""

    @property
    def text(self) -> str:
        return self._text

    def feed(self, delta: str) -> None:
        if not delta:
            return
        self._text += delta
        self._received += len(delta)
        self._dirty = True
        self._pace()

    def _wait(self) -> float:
        """Seconds until the next update may go out; zero or less means now."""
        since = self._clock() - self._last
        if self.spent <= self._ratio * self._received + self._allowance:
            return self._interval - since
        return self._max_lag - since

    def _pace(self) -> None:
        if not self._dirty:
            return
        wait = self._wait()
        if wait <= 0:
            self.flush()
        if self._dirty and self._timer is None and self._call_later is not None:
            # Fire even if no more text comes, so a paused stream is shown in time.
            self._timer = self._call_later(max(wait, self._interval), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._pace()

    def flush(self, *, final: bool = False) -> None:
        """Send the segment in progress if it changed.

        A finished block is committed to its segment; the rest goes to a new segment, at
        once when ``final`` or when the old segment already showed some of it (else that
        text would vanish until the next update), otherwise with the next update, so a
        split costs no extra message.
        """
        self._dirty = False
        seg = self._text[self._seg_start :]
        if len(seg) > self._split_at:
            cut = find_block_boundary(seg)
            if cut > 0:
                shown, before = len(self._sent), self.messages
                self._send(seg[:cut], final=True)
                self._seg_start += cut
                self._seg_id, self._sent = None, ""
                seg = self._text[self._seg_start :]
                if not final and shown <= cut and self.messages > before:
                    self._dirty = True
                    return
        self._send(seg, final=final)

    def _send(self, seg: str, *, final: bool = False) -> None:
        """Publish ``seg``; ``final``: the segment's last version (the publisher may send
        more with it, e.g. the text itself, which the updates before it can do without)."""
        if not seg.strip() or (seg == self._sent and (self._sent_final or not final)):
            return
        update = self._seg_id is not None
        if not update:
            self._seg_id = uuid.uuid4().hex
            self.segments += 1
        assert self._seg_id is not None
        self._publish(self._seg_id, seg, update, final)
        self._sent, self._sent_final = seg, final
        self.spent += self._cost(seg, final) + self._overhead
        self.messages += 1
        self._last = self._clock()

    def commit(self) -> str:
        """Final render of everything received; returns the full text."""
        self.cancel()
        self.flush(final=True)
        return self._text

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
