"""Streaming Markdown into a cell without quadratic traffic.

The answer is shown as a series of *segments*, each its own display output, and only the
block still being written is ever re-sent. A display update replaces its output whole, so
once the answer is longer than ``split_at`` characters, the blocks markdown-it has closed
(a following block has begun) go out once as their segment's last version, and the rest
moves to a new segment (``find_split``). Finished text is therefore sent once as HTML and
once as source, and each update in between carries the open block only.

Segments are cut only where two outputs look like one: JupyterLab's margins do not
collapse across outputs, and it gives a block that starts or ends an output other margins
(a heading's top, the last child's bottom), so a cut goes after a paragraph, list or
table and before a paragraph or table, and never next to a heading, a rule, a quote, a
code block (spaced like a Markdown cell's, ``_safe_html``) or HTML.

Every message also carries an envelope (header, parent header, signature: about 600 bytes
with ipykernel) that dwarfs the few dozen characters a fast model sends per 50 ms. So
updates are throttled twice: at most ``max_rate`` a second, and within a byte budget,
counting each message as its ``cost`` plus ``message_overhead``. The budget is what the
text received costs sent once as final versions, which no design can send less of, plus
``budget_ratio`` times its length for what streaming adds (envelopes, the open block sent
again), plus ``budget_allowance``, so short answers stream at full rate. When the budget
holds an update back, shown text still never trails the stream by more than ``max_lag``
seconds.

A link reference definition (``[1]: https://...``) applies to the whole answer wherever it
stands, often at its end, after the segments that use it were sent: at commit each segment
whose rendering it changes is sent once more, rendered with the answer's definitions.
"""

from __future__ import annotations

import itertools
import re
import secrets
import time
from collections.abc import Callable
from typing import Any, Protocol

from ._safe_html import markdown_blocks, needs_definitions, reference_definitions

__all__ = ["MarkdownStream", "find_block_boundary", "find_split"]

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


_ENDS_FLUSH = frozenset({"paragraph", "bullet_list", "ordered_list", "table"})
"""Blocks whose bottom margin (1em) is the whole gap to a following block without top margin."""
_STARTS_FLUSH = frozenset({"paragraph", "table"})
"""Blocks with no top margin, and no other style as an output's first child. Not code
blocks (their top margin collapses with the block above only inside one output), nor lists
(a list may end an output, not start one):
a list that starts an output sat 14 px lower than in one output (measured in JupyterLab
4 by tests/browser/test_streamed_layout.py when a cut fell between a paragraph and a list)."""


def find_split(text: str) -> int:
    """Index of the last place ``text`` can be cut into two outputs that look like one, or -1.

    The cut falls at the start of a block that markdown-it parsed after a blank line, so
    everything before it is finished, and between blocks whose spacing is the same whether
    JupyterLab lays them out in one output or in two (see the module docstring).
    """
    blocks = markdown_blocks(text)
    if len(blocks) < 2:
        return -1
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for (before, _), (after, line) in reversed(list(itertools.pairwise(blocks))):
        if (
            before in _ENDS_FLUSH
            and after in _STARTS_FLUSH
            and line > 0
            and not lines[line - 1].strip()
        ):
            return starts[line]
    return -1


class SegmentPublisher(Protocol):
    """Shows one version of a segment: ``definitions`` (reference definitions the segment
    uses but does not hold) are rendered with it, never shown as its source."""

    def __call__(
        self, display_id: str, text: str, update: bool, final: bool, definitions: str = "", /
    ) -> None: ...


class MarkdownStream:
    """Incremental Markdown rendering through display updates."""

    def __init__(
        self,
        publish: SegmentPublisher,
        *,
        max_rate: float = 20.0,
        split_at: int = 600,
        budget_ratio: float = 2.0,
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
        self._cost: Callable[[str, bool], int] = cost or (lambda seg, _final: len(seg))
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
        self._finished: dict[str, str] = {}
        """display id -> Markdown of each segment's last version sent."""
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
        floor = self._cost(self._text, True)
        if self.spent <= floor + self._ratio * self._received + self._allowance:
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
        """Send what changed: finished blocks once, as their segment's last version, then
        the open block.

        Once the answer is past ``split_at``, the blocks before ``find_split``'s cut are
        committed to the segment in progress and the rest goes to a new segment: at once
        when the old segment already showed some of it (else that text would vanish until
        the next update), otherwise with the next update, so a split costs no extra
        message. The final flush sends the segment in progress whole, in one message.
        """
        self._dirty = False
        seg = self._text[self._seg_start :]
        if not final and (self._seg_start or len(seg) > self._split_at):
            cut = find_split(seg)
            if cut > 0:
                shown, before = len(self._sent), self.messages
                self._send(seg[:cut], final=True)
                self._seg_start += cut
                self._seg_id, self._sent = None, ""
                seg = self._text[self._seg_start :]
                if shown <= cut and self.messages > before:
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
            # 64 random bits are unique enough, and the id rides twice on every message
            # (transient, and the tag a saved notebook keeps): half a uuid's 32 characters.
            self._seg_id = secrets.token_hex(8)
            self.segments += 1
        assert self._seg_id is not None
        self._publish(self._seg_id, seg, update, final)
        if final:
            self._finished[self._seg_id] = seg
        self._sent, self._sent_final = seg, final
        self.spent += self._cost(seg, final) + self._overhead
        self.messages += 1
        self._last = self._clock()

    def commit(self) -> str:
        """Final render of everything received; returns the full text."""
        self.cancel()
        self.flush(final=True)
        self._resolve_references()
        return self._text

    def _resolve_references(self) -> None:
        """Send again, with the answer's reference definitions, each segment they change."""
        definitions = reference_definitions(self._text) if "]:" in self._text else ""
        if not definitions:
            return
        for seg_id, seg in self._finished.items():
            if needs_definitions(seg, definitions):
                self._publish(seg_id, seg, True, True, definitions)
                self.spent += self._cost(seg, True) + self._overhead
                self.messages += 1

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
