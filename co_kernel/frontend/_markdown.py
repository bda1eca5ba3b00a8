"""Streaming Markdown into a cell without quadratic traffic.

The answer is shown as a series of *segments*, each its own display output, and only the
block still being written is ever re-sent. A display update replaces its output whole, so
once the segment in progress holds ``split_at`` characters of closed blocks (a following
block has begun), they go out once as its last version, and the rest moves to a new
segment (``find_split``). Finished text is therefore sent once as HTML and once as source,
and each update in between carries a few hundred characters and the open block. Each
output also costs its tag and wrapper in the saved notebook (about 200 bytes), which
``split_at`` keeps to a small share.

Segments are cut only where two outputs look like one. JupyterLab's margins do not
collapse across outputs, so where one output shows the larger of two margins, a cut takes
the smaller away (``Cut``; the styles are ``_safe_html.JOINS_KEY``'s): a list that starts
an output drops its top margin, a block before a code block or heading its bottom one, a
heading that starts an output keeps its whole top margin (the page halves an output's
first child's), and a long tight list is cut between its items, both parts without the
margins between them. A rule, a quote or HTML is never next to a cut, nor the end of a
heading (the page halves an output's last child's bottom margin, in the heading's em). So no open block grows past a few items or a code block
before it is cut: what an update re-sends stays bounded, and an answer costs bytes in
proportion to its length whatever its shape.

Every message also carries an envelope (header, parent header, signature: about 600 bytes
with ipykernel) that dwarfs the few dozen characters a fast model sends per 50 ms. So
updates are throttled twice: at most ``max_rate`` a second, and within a byte budget,
counting each message as what the publisher sent (else its ``cost``) plus
``message_overhead``. The budget is what the text received costs sent once as final
versions, which no design can send less of (at the rate its segments sent so far cost: a
table's HTML is twice a paragraph's), plus ``budget_ratio`` times that for what streaming
adds (envelopes, the open block sent again), plus ``budget_allowance``, so short answers
stream at full rate. When the budget
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
from dataclasses import dataclass
from typing import Any, Protocol

from ._safe_html import list_item_lines, markdown_blocks, needs_definitions, reference_definitions

__all__ = ["Cut", "MarkdownStream", "find_block_boundary", "find_split"]

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


_LISTS = frozenset({"bullet_list", "ordered_list"})
_CODE = frozenset({"fence", "code_block"})
_ENDS = frozenset({"paragraph", "table", *_LISTS, *_CODE})
"""Blocks an output may end with. Not a heading: as an output's last child it gets half
its bottom margin (JupyterLab's ``h2:last-child``), in its own font's em, which no fixed
margin of the block below can make up for."""
_STARTS = _ENDS | {"heading"}
"""Blocks an output may start with. A heading gets half its top margin there too, so it
says what the whole one is (``_safe_html._HEADING_TOP``), larger than any block's bottom
margin above it, which goes."""


@dataclass(frozen=True)
class Cut:
    """Where ``find_split`` cuts, and which margins go so that the gap stays the same."""

    at: int
    """Index of the first character of the second output."""
    above: bool
    """The second output's first block takes the top margin it has inside an answer: a
    list drops its own (it equals a paragraph's or a list's bottom one, which one output
    collapses into one gap, and is smaller than a code block's bottom one); a heading gets
    back the half the page takes from an output's first child."""
    below: bool
    """The first output's last block drops its bottom margin: a code block or heading
    follows (its top margin is the larger, the whole gap in one output), or the cut falls
    between two items of one list (no gap at all there)."""


def find_split(text: str, shortest: int = 1) -> Cut | None:
    """The last place ``text`` can be cut into two outputs that look like one, or None;
    also None when that would leave the first output shorter than ``shortest``.

    The cut falls at the start of a block that markdown-it parsed after a blank line, or of
    an item of a tight list that ends the text, so everything before it is finished, and
    where the spacing is the same whether JupyterLab lays it out in one output or in two
    (see the module docstring).
    """
    blocks = markdown_blocks(text)
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    best: Cut | None = None
    for (before, _), (after, line) in reversed(list(itertools.pairwise(blocks))):
        if before in _ENDS and after in _STARTS and line > 0 and not lines[line - 1].strip():
            heading = after == "heading"
            best = Cut(
                starts[line], above=after in _LISTS or heading, below=after in _CODE or heading
            )
            break
    items = list_item_lines(text)
    if len(items) > 1 and (best is None or starts[items[-1]] > best.at):
        best = Cut(starts[items[-1]], above=True, below=True)
    return best if best is not None and best.at >= shortest else None


class SegmentPublisher(Protocol):
    """Shows one version of a segment: ``definitions`` (reference definitions the segment
    uses but does not hold) are rendered with it, never shown as its source; ``joins``
    (above, below): where it continues a list of the previous output or goes on in the next
    (``_safe_html.JOINS_KEY``)."""

    def __call__(
        self,
        display_id: str,
        text: str,
        update: bool,
        final: bool,
        definitions: str = "",
        joins: tuple[bool, bool] = (False, False),
        /,
    ) -> int | None:
        """Returns the characters it sent (HTML and source), or None if it cannot tell."""
        ...


class MarkdownStream:
    """Incremental Markdown rendering through display updates."""

    def __init__(
        self,
        publish: SegmentPublisher,
        *,
        max_rate: float = 20.0,
        split_at: int = 400,
        budget_ratio: float = 0.8,
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
        self._joins_above = False
        """The segment in progress drops its first block's top margin (``Cut.above``)."""
        self._sent = ""
        self._sent_final = False
        self._dirty = False
        self._last = float("-inf")
        self._received = 0
        self._timer: Any = None
        self._finished: dict[str, tuple[str, tuple[bool, bool]]] = {}
        """display id -> Markdown and joins of each segment's last version sent."""
        self.segments = 0
        """Number of display outputs created."""
        self.messages = 0
        """Number of display messages published (creations and updates)."""
        self.spent = 0
        """Bytes published (as the publisher counts them, else ``cost``) plus
        ``message_overhead`` per message."""
        self._final_bytes = 0
        self._final_chars = 0
        """Bytes and characters of the segments' last versions."""

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
        floor = self._final_cost(self._text)
        if self.spent <= floor * (1 + self._ratio) + self._allowance:
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

        Once the segment is past ``split_at``, the blocks before ``find_split``'s cut are
        committed to the segment in progress and the rest goes to a new segment: at once
        when the old segment already showed some of it (else that text would vanish until
        the next update), otherwise with the next update, so a split costs no extra
        message. The final flush sends the segment in progress whole, in one message.
        """
        self._dirty = False
        seg = self._text[self._seg_start :]
        if not final and len(seg) > self._split_at:
            cut = find_split(seg, self._split_at)
            if cut is not None:
                shown, before = len(self._sent), self.messages
                self._send(seg[: cut.at], final=True, continues=cut.below)
                self._seg_start += cut.at
                self._seg_id, self._sent = None, ""
                self._joins_above = cut.above
                seg = self._text[self._seg_start :]
                if shown <= cut.at and self.messages > before:
                    self._dirty = True
                    return
        self._send(seg, final=final)

    def _send(self, seg: str, *, final: bool = False, continues: bool = False) -> None:
        """Publish ``seg``; ``final``: the segment's last version (the publisher may send
        more with it, e.g. the text itself, which the updates before it can do without);
        ``continues``: its last block drops its bottom margin (``Cut.below``)."""
        if not seg.strip() or (seg == self._sent and (self._sent_final or not final)):
            return
        update = self._seg_id is not None
        if not update:
            # 64 random bits are unique enough, and the id rides twice on every message
            # (transient, and the tag a saved notebook keeps): half a uuid's 32 characters.
            self._seg_id = secrets.token_hex(8)
            self.segments += 1
        assert self._seg_id is not None
        joins = (self._joins_above, continues)
        sent = self._publish(self._seg_id, seg, update, final, "", joins)
        if final:
            self._finished[self._seg_id] = (seg, joins)
        self._sent, self._sent_final = seg, final
        self._charge(seg, final, sent)
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
        for seg_id, (seg, joins) in self._finished.items():
            if needs_definitions(seg, definitions):
                sent = self._publish(seg_id, seg, True, True, definitions, joins)
                self._charge(seg, True, sent)
                self.messages += 1

    def _charge(self, seg: str, final: bool, sent: int | None) -> None:
        """Count a message: what the publisher says it sent, else ``cost``'s estimate."""
        size = self._cost(seg, final) if sent is None else sent
        self.spent += size + self._overhead
        if final:
            self._final_bytes += size
            self._final_chars += len(seg)

    def _final_cost(self, text: str) -> int:
        """What ``text`` costs sent once as final versions: at the rate the segments sent
        so far cost (a table's HTML is twice a paragraph's), before any, ``cost``'s."""
        if not self._final_chars:
            return self._cost(text, True)
        return len(text) * self._final_bytes // self._final_chars

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
