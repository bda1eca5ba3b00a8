"""MarkdownStream: segments split only between finished blocks, paced by rate and bytes.

A real MarkdownStream publishes into a recorder; time is a fake clock whose ``call_later``
runs the stream's timers as the test advances it, so a 30-second stream takes milliseconds.
"""

from __future__ import annotations

import heapq
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from co_kernel.frontend import (
    Cut,
    MarkdownStream,
    find_block_boundary,
    find_split,
    markdown_to_html,
)

_TOKEN = re.compile(r"\s*\S{1,4}|\s+")


@dataclass
class Published:
    """One display message as the stream published it."""

    at: float
    """Fake time of publication."""
    display_id: str
    """The segment it belongs to."""
    text: str
    """The segment's whole Markdown at that moment."""
    update: bool
    """update_display_data (True) or a new display_data (False)."""
    final: bool = False
    """The segment's last version (the notebook adds the source as text/plain to it)."""
    definitions: str = ""
    """Reference definitions rendered with the segment (never part of its source)."""


@dataclass
class FakeLoop:
    """A clock and call_later that run timers only when the test advances time."""

    now: float = 0.0
    """Current fake time in seconds."""
    timers: list[list[object]] = field(default_factory=list)
    """Heap of [due, sequence, callback or None when cancelled]."""
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def clock(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Handle:
        entry: list[object] = [self.now + delay, next(self._seq), callback]
        heapq.heappush(self.timers, entry)
        return _Handle(entry)

    def advance(self, to: float) -> None:
        while self.timers and float(self.timers[0][0]) <= to:  # type: ignore[arg-type]
            due, _, callback = heapq.heappop(self.timers)
            self.now = float(due)  # type: ignore[arg-type]
            if callable(callback):
                callback()
        self.now = to


@dataclass
class _Handle:
    entry: list[object]
    """The timer's heap entry."""

    def cancel(self) -> None:
        self.entry[2] = None


@dataclass
class Run:
    """A whole streamed answer: what was published and the stream that did it."""

    published: list[Published]
    """Every message in order."""
    stream: MarkdownStream
    """The stream, for its counters."""
    duration: float
    """Fake seconds from first token to commit."""

    def finals(self) -> dict[str, str]:
        """display_id -> last text, in creation order."""
        shown: dict[str, str] = {}
        for p in self.published:
            shown[p.display_id] = p.text
        return shown

    def content_bytes(self) -> int:
        """Bytes of the JSON content of every message, as the kernel would send it."""
        return sum(
            len(
                json.dumps(
                    {
                        "data": {"text/markdown": p.text},
                        "metadata": {},
                        "transient": {"display_id": p.display_id},
                    },
                    ensure_ascii=False,
                ).encode()
            )
            for p in self.published
        )


def stream_answer(
    text: str, tokens_per_second: float, *, max_rate: float = 20.0, pause: float = 0.0, **kw: float
) -> Run:
    """Feed ``text`` token by token at a steady rate, then commit after ``pause`` seconds."""
    loop = FakeLoop()
    published: list[Published] = []

    def publish(
        display_id: str,
        seg: str,
        update: bool,
        final: bool,
        definitions: str = "",
        joins: tuple[bool, bool] = (False, False),
    ) -> None:
        published.append(Published(loop.now, display_id, seg, update, final, definitions))

    stream = MarkdownStream(
        publish, max_rate=max_rate, call_later=loop.call_later, clock=loop.clock, **kw
    )  # type: ignore[arg-type]
    tokens = _TOKEN.findall(text)
    for i, token in enumerate(tokens):
        loop.advance((i + 1) / tokens_per_second)
        stream.feed(token)
    end = len(tokens) / tokens_per_second + pause
    loop.advance(end)
    assert stream.commit() == text
    return Run(published, stream, end)


# -- a realistic answer whose fences and list items are known ------------------------------

_WORDS = (  # noqa: SIM905 - a sentence reads better than a column of strings
    "the kernel streams each answer into a cell as rendered markdown without resending"
).split()


@dataclass
class Answer:
    """Markdown built from blocks, with the spans a split must never fall inside."""

    text: str
    """The Markdown."""
    unsplittable: list[tuple[int, int]]
    """(start, end) offsets of fenced code and of list items with continuation paragraphs."""


def _para(n: int) -> str:
    words = [_WORDS[(n * 7 + i) % len(_WORDS)] for i in range(20 + n % 30)]
    return " ".join(words).capitalize() + "."


def build_answer(kinds: list[int]) -> Answer:
    """One block per entry of ``kinds``: paragraph, heading, list, fences of three kinds."""
    blocks: list[tuple[str, bool]] = []
    for n, kind in enumerate(kinds):
        if kind == 0:
            blocks.append((_para(n), False))
        elif kind == 1:
            blocks.append((f"## Section {n}", False))
        elif kind == 2:
            blocks.append(("\n".join(f"- {_para(n + i)[:40]}" for i in range(3)), False))
        elif kind == 3:  # blank lines inside a fence are not boundaries
            blocks.append(
                (f"```python\nx = {n}\n\n\ndef f():\n    return x\n\nprint(f())\n```", True)
            )
        elif kind == 4:  # a longer fence is not closed by a shorter one
            blocks.append((f"````markdown\n```\ninner {n}\n```\n\nstill inside\n````", True))
        elif kind == 5:  # tilde fence
            blocks.append((f"~~~\nplain {n}\n\nmore\n~~~", True))
        else:  # a list item that goes on after a blank line, with an indented fence
            item = f"1. Step {n}:\n\n   ```bash\n   make\n\n   make test\n   ```\n\n   {_para(n)}"
            blocks.append((item, True))
    text, spans = "", []
    for body, keep in blocks:
        if text:
            text += "\n\n"
        if keep:
            spans.append((len(text), len(text) + len(body)))
        text += body
    return Answer(text + "\n", spans)


def realistic_answer(size: int) -> Answer:
    kinds = [0, 1, 0, 2, 0, 3, 0, 4, 1, 0, 5, 6, 0, 2]
    n = 0
    answer = build_answer([])
    while len(answer.text) < size:
        n += len(kinds)
        answer = build_answer((kinds * (n // len(kinds)))[:n])
    return answer


def cuts(run: Run) -> list[int]:
    """Offsets in the answer where one segment ends and the next begins."""
    offsets, pos = [], 0
    for text in list(run.finals().values())[:-1]:
        pos += len(text)
        offsets.append(pos)
    return offsets


# -- block boundaries ---------------------------------------------------------------------------


def test_boundary_is_after_the_last_blank_line_before_a_new_block() -> None:
    text = "# Title\n\nFirst paragraph.\n\nSecond"
    assert find_block_boundary(text) == text.index("Second")


def test_no_boundary_inside_a_fence_or_at_the_very_end() -> None:
    assert find_block_boundary("```\ncode\n\nmore code\n") == -1
    assert find_block_boundary("Para.\n\n") == -1, "the next line may still continue the block"
    text = "Intro.\n\n```\na\n\nb\n```\n\nAfter"
    assert find_block_boundary(text) == text.index("After")


def test_a_longer_fence_is_not_closed_by_a_shorter_one() -> None:
    text = "````\n```\n\nstill code\n"
    assert find_block_boundary(text) == -1
    closed = text + "````\n\nProse"
    assert find_block_boundary(closed) == closed.index("Prose")


def test_no_boundary_before_an_indented_continuation() -> None:
    text = "1. Step one:\n\n   details of step one\n"
    assert find_block_boundary(text) == -1
    text = "- item\n\n      indented code\n\nNext"
    assert find_block_boundary(text) == text.index("Next")


def test_an_indented_fence_inside_a_list_item_is_still_a_fence() -> None:
    text = "Intro.\n\n1. Run:\n\n   ```\n   a\n\n   b\n"
    assert find_block_boundary(text) == text.index("1. Run")


def test_a_split_falls_only_where_two_outputs_look_like_one() -> None:
    # Between paragraphs and tables: the same gap in one output or two.
    text = "Intro.\n\n| a |\n|---|\n| 1 |\n\nAfter"
    assert find_split(text) == Cut(text.index("After"), above=False, below=False)
    # Before a list, which drops its top margin (one output shows the larger of the two).
    assert find_split("Intro.\n\n- a\n- b\n\n1. c\n") == Cut(
        len("Intro.\n\n- a\n- b\n\n"), above=True, below=False
    )
    # Between the items of a tight list: no margin on either side of the cut.
    assert find_split("Intro.\n\n- a\n- b\n") == Cut(len("Intro.\n\n- a\n"), above=True, below=True)
    # Before code: the block above drops its bottom margin (code's top one is larger).
    text = "Intro.\n\n```\ncode\n```\n\nAfter"
    assert find_split(text) == Cut(text.index("After"), above=False, below=False)
    assert find_split("Intro.\n\n```\ncode\n```\n") == Cut(
        len("Intro.\n\n"), above=False, below=True
    )
    # Not inside a loose list: its one item alone would render tight.
    assert find_split("- a\n\n- b\n") is None
    # Before a heading, which keeps its whole top margin (the page halves a first child's),
    # the block above dropping its bottom one; never after one (a last child's is halved).
    assert find_split("Intro.\n\n## Title\n\nMore") == Cut(
        len("Intro.\n\n"), above=True, below=True
    )
    assert find_split("## Title\n\nMore") is None
    # Only after a blank line: a block that interrupts a paragraph may still change it.
    assert find_split("Intro.\n```\ncode\n```\n") is None


# -- streaming -------------------------------------------------------------------------------------


def test_the_first_token_is_shown_at_once() -> None:
    loop = FakeLoop()
    published: list[str] = []
    stream = MarkdownStream(
        lambda _id, text, _upd, _final, _defs="", _joins=(False, False): published.append(text),
        call_later=loop.call_later,
        clock=loop.clock,
    )
    stream.feed("Hello")
    assert published == ["Hello"]


def at_a_boundary(text: str, cut: int) -> bool:
    """A cut after a blank line, or at the start of a list item (between two items)."""
    between_items = text[cut - 1] == "\n" and re.match(r"- |\d+\. ", text[cut:]) is not None
    return text[cut - 2 : cut] == "\n\n" or between_items


def test_a_20_kb_answer_streams_in_segments_that_add_up_to_it() -> None:
    answer = realistic_answer(20_000)
    run = stream_answer(answer.text, tokens_per_second=200)
    finals = list(run.finals().values())
    assert "".join(finals) == answer.text
    assert run.stream.segments == len(finals) > 5
    for cut in cuts(run):
        assert at_a_boundary(answer.text, cut), "segments end at a blank line or between items"
        assert not any(start < cut < end for start, end in answer.unsplittable), (
            f"split inside a fence or list item at {cut}: {answer.text[cut - 40 : cut + 40]!r}"
        )
    assert run.published[0].update is False
    assert all(p.update for p in run.published[1:] if p.display_id == run.published[0].display_id)


def test_updates_never_exceed_the_rate() -> None:
    run = stream_answer(realistic_answer(20_000).text, tokens_per_second=1000, max_rate=20)
    flushes = sorted({p.at for p in run.published})
    for i, at in enumerate(flushes):
        in_window = [t for t in flushes[i:] if t < at + 1.0]
        assert len(in_window) <= 20 + 1, f"{len(in_window)} flushes within a second from {at}"
    assert len(flushes) <= run.duration * 20 + 2


def test_bytes_stay_linear_in_the_answer() -> None:
    # The whole-buffer design costs ~270x for this answer; the bound is the 4x.
    for size in (20_000, 40_000):
        text = realistic_answer(size).text
        run = stream_answer(text, tokens_per_second=200)
        ratio = run.content_bytes() / len(text.encode())
        assert ratio < 4, f"{size}: content bytes {ratio:.2f}x the answer"
        # The envelope of every message (~600 bytes) counts too.
        wire = run.content_bytes() + 600 * len(run.published)
        assert wire < 4 * len(text.encode()), f"{size}: wire bytes {wire / len(text):.2f}x"


def test_a_short_answer_streams_at_full_rate() -> None:
    text = "# Plan\n\nFirst paragraph of the answer, long enough to need several chunks.\n\n- one\n"
    run = stream_answer(text, tokens_per_second=150)
    updates = [p for p in run.published if p.update]
    assert len(updates) >= 3
    assert list(run.finals().values()) == [text]


def test_a_slow_stream_is_never_shown_more_than_max_lag_behind() -> None:
    text = realistic_answer(3_000).text
    run = stream_answer(text, tokens_per_second=20, max_lag=1.0)
    times = [p.at for p in run.published]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert max(gaps) <= 1.0 + 1 / 20 + 1e-9


def test_a_reference_defined_after_its_segment_was_sent_still_renders_as_a_link() -> None:
    # A definition applies to the whole answer wherever it stands; models often list them
    # at the end, after the segments using them went out as their last versions.
    filler = "\n\n".join(f"Paragraph {i} of the report, " + "words " * 30 for i in range(12))
    text = (
        "See [the source][src] and ![chart][img].\n\n"
        f"{filler}\n\n"
        "[src]: https://example.org/sales\n"
        '[img]: http://127.0.0.1:9/chart.png "Q3"\n'
    )
    run = stream_answer(text, tokens_per_second=200)
    first = run.published[0].display_id
    assert run.stream.segments > 1
    last = [p for p in run.published if p.display_id == first][-1]
    assert last.final and last.text.startswith("See [the source][src]")
    assert "[src]" not in last.text.split("\n\n", 1)[1], "the source stays the segment's own"
    html = markdown_to_html(f"{last.text}\n\n{last.definitions}")
    assert 'href="https://example.org/sales"' in html
    assert "chart.png" in html and "[chart][img]" not in html
    untouched = [p for p in run.published if p.definitions and "[" not in p.text]
    assert untouched == [], "segments the definitions do not change are not sent again"


def test_a_paused_stream_is_flushed_by_the_timer_and_commit_sends_the_rest() -> None:
    loop = FakeLoop()
    published: list[str] = []
    stream = MarkdownStream(
        lambda _id, text, _upd, _final, _defs="", _joins=(False, False): published.append(text),
        call_later=loop.call_later,
        clock=loop.clock,
    )
    stream.feed("One")
    loop.advance(0.01)
    stream.feed(" two")  # within the rate interval: held back
    assert published == ["One"]
    loop.advance(0.5)  # no more text arrives; the timer shows it
    assert published == ["One", "One two"]
    stream.feed(" three")
    assert published[-1] == "One two three"
    stream.feed(" four")
    stream.commit()
    assert published[-1] == "One two three four"
    count = len(published)
    loop.advance(5.0)
    assert len(published) == count, "nothing is published after the commit"


_BLOCK_KINDS = st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(
    kinds=_BLOCK_KINDS,
    tokens_per_second=st.sampled_from([15.0, 200.0, 3000.0]),
    split_at=st.sampled_from([50, 600]),
)
def test_any_answer_is_shown_whole_and_split_only_between_blocks(
    kinds: list[int], tokens_per_second: float, split_at: int
) -> None:
    answer = build_answer(kinds)
    run = stream_answer(answer.text, tokens_per_second, split_at=split_at)
    assert "".join(run.finals().values()) == answer.text
    for cut in cuts(run):
        assert at_a_boundary(answer.text, cut)
        assert not any(start < cut < end for start, end in answer.unsplittable)
    # A segment's text only grows, except that its last message may trim what it showed
    # past the block boundary where it was split off.
    history: dict[str, list[str]] = {}
    for p in run.published:
        history.setdefault(p.display_id, []).append(p.text)
    for texts in history.values():
        for before, after in itertools.pairwise(texts[:-1]):
            assert after.startswith(before)
        if len(texts) > 1:
            assert texts[-1].startswith(texts[-2]) or texts[-2].startswith(texts[-1])


def test_finished_blocks_are_sent_once() -> None:
    """Past ``split_at``, an update carries only what is not finished yet and less than a
    segment of finished blocks: the rest went out as its segment's last version, and is
    not sent again."""
    answer = realistic_answer(20_000).text
    run = stream_answer(answer, 200)
    sent_before_split = 0
    for p in run.published:
        if p.final:
            sent_before_split += 1
        elif sent_before_split:
            # What it could have cut off is less than a segment (400 characters by default).
            assert find_split(p.text, 400) is None, (
                f"an update re-sent finished blocks: {p.text[:80]!r}"
            )
    assert sent_before_split > 10


def test_each_segment_ends_with_exactly_one_final_version() -> None:
    """The last message of every segment is marked final, and only that one, so the
    notebook sends the source (text/plain) once per segment instead of with every update."""
    answer = realistic_answer(8_000).text
    run = stream_answer(answer, 200)
    by_segment: dict[str, list[Published]] = {}
    for p in run.published:
        by_segment.setdefault(p.display_id, []).append(p)
    assert len(by_segment) > 3
    for messages in by_segment.values():
        assert [m.final for m in messages] == [False] * (len(messages) - 1) + [True]
    assert "".join(ms[-1].text for ms in by_segment.values()) == answer
