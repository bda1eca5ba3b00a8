"""History governance: the processors' unit behaviour and, for random histories with tool
calls, that every processor returns a valid history in the original order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from co_kernel.config import Settings
from co_kernel.turn._compact import compacted_history, split_for_compaction
from co_kernel.turn._history_processors import (
    IMAGE_BYTES,
    SUMMARY_PREFIX,
    GovernedViews,
    describe_old_images,
    estimate_tokens,
    govern_history,
    is_summary,
    truncate_tool_returns,
    turn_starts,
)

from ..support.histories import synthetic_history, synthetic_turn, truncate_history_window

# -- the oracle ---------------------------------------------------------------


def _answers(msg: ModelMessage) -> list[str]:
    if not isinstance(msg, ModelRequest):
        return []
    return [p.tool_call_id for p in msg.parts if isinstance(p, ToolReturnPart)]


def assert_valid(messages: Sequence[ModelMessage]) -> None:
    """Every tool call is answered later, every answer follows its call, none twice."""
    assert messages, "a history the model is sent is never empty"
    assert isinstance(messages[0], ModelRequest), "a history starts with a request"
    open_calls: set[str] = set()
    answered: set[str] = set()
    for msg in messages:
        if isinstance(msg, ModelResponse):
            for part in msg.parts:
                if isinstance(part, ToolCallPart):
                    open_calls.add(part.tool_call_id)
        for call_id in _answers(msg):
            assert call_id in open_calls, f"answer to {call_id} without its call before it"
            assert call_id not in answered, f"{call_id} answered twice"
            open_calls.discard(call_id)
            answered.add(call_id)
    assert not open_calls, f"dangling tool calls: {sorted(open_calls)}"


def _signature(msg: ModelMessage) -> tuple[Any, ...]:
    """What identifies a message across processing (trimming and markers aside)."""
    items: list[Any] = [msg.kind]
    for part in msg.parts:
        if isinstance(part, UserPromptPart):
            text = part.content if isinstance(part.content, str) else ""
            if text.startswith("[Co:") and not text.startswith(SUMMARY_PREFIX):
                continue  # the window's marker
            items.append(("prompt", text[:40]))
        elif isinstance(part, TextPart):
            items.append(("text", part.content[:40]))
        elif isinstance(part, ToolCallPart | ToolReturnPart):
            items.append((part.part_kind, part.tool_call_id))
    return tuple(items)


def assert_order_kept(before: Sequence[ModelMessage], after: Sequence[ModelMessage]) -> None:
    """``after`` is ``before`` with messages left out, never reordered or invented."""
    wanted = iter(_signature(m) for m in before)
    for msg in after:
        sig = _signature(msg)
        assert any(sig == s for s in wanted), f"{sig} is not in the original order"


def _dump(messages: Sequence[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(list(messages))


def _contents(messages: Sequence[ModelMessage]) -> list[list[tuple[str, Any]]]:
    """What each message says, part by part (timestamps aside)."""
    return [[(p.part_kind, getattr(p, "content", None)) for p in m.parts] for m in messages]


# -- random histories ------------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> list[ModelMessage]:
    """Valid histories: turns of tool rounds, answers in any order, some answered only in
    the next turn's prompt request (as interrupt patching leaves them), maybe a summary."""
    messages: list[ModelMessage] = []
    if draw(st.booleans()):
        messages += compacted_history("earlier things happened", [])
    carried: list[ToolReturnPart] = []
    ids = iter(range(10_000))
    for turn in range(draw(st.integers(1, 12))):
        prompt = UserPromptPart(f"prompt {turn}")
        messages.append(ModelRequest(parts=[*carried, prompt]))
        carried = []
        rounds = draw(st.integers(0, 3))
        for r in range(rounds):
            calls = [
                ToolCallPart("tool", {"i": r}, tool_call_id=f"c{next(ids)}")
                for _ in range(draw(st.integers(1, 3)))
            ]
            text = [TextPart(f"thinking {turn}.{r}")] if draw(st.booleans()) else []
            messages.append(ModelResponse(parts=[*text, *calls]))
            returns = [
                ToolReturnPart(
                    "tool",
                    "x" * draw(st.integers(0, 5000))
                    if draw(st.booleans())
                    else {"rows": list(range(draw(st.integers(0, 800))))},
                    tool_call_id=c.tool_call_id,
                )
                for c in calls
            ]
            returns = draw(st.permutations(returns))
            last_round = r == rounds - 1
            if last_round and draw(st.integers(0, 4)) == 0:
                carried = list(returns)  # answered in the next prompt's request
                break
            messages.append(ModelRequest(parts=returns))
        else:
            messages.append(ModelResponse(parts=[TextPart(f"answer {turn}")]))
            continue
        # The turn ended on unanswered calls that the next request answers.
    if carried:
        messages.append(ModelRequest(parts=[*carried, UserPromptPart("prompt last")]))
        messages.append(ModelResponse(parts=[TextPart("answer last")]))
    return messages


_PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_PROPERTY
@given(histories())
def test_generated_histories_are_valid(history: list[ModelMessage]) -> None:
    assert_valid(history)


@_PROPERTY
@given(histories(), st.integers(4, 30))
def test_window_output_is_valid_ordered_and_bounded(
    history: list[ModelMessage], limit: int
) -> None:
    before = _dump(history)
    out = truncate_history_window(history, limit)
    assert _dump(history) == before, "the input history was changed"
    assert_valid(out)
    assert_order_kept(history, out)
    starts = turn_starts(history)
    last_turn = len(history) - starts[-1]
    head = 2 if is_summary(history[0]) else 0
    assert len(out) <= max(limit, head + last_turn)
    assert out[-1] is history[-1], "the newest turn is kept whole"
    if is_summary(history[0]):
        assert out[0] is history[0], "the summary is always kept"
    if len(history) <= limit:
        assert out == history
    assert len(truncate_history_window(out, limit)) == len(out), "idempotent"


@_PROPERTY
@given(histories(), st.integers(100, 3000))
def test_trim_output_is_valid_and_leaves_the_last_turn(
    history: list[ModelMessage], trim: int
) -> None:
    before = _dump(history)
    out = truncate_tool_returns(history, trim)
    assert _dump(history) == before, "the input history was changed"
    assert_valid(out)
    assert_order_kept(history, out)
    assert len(out) == len(history)
    last = turn_starts(history)[-1]
    assert all(a is b for a, b in zip(out[last:], history[last:], strict=True))
    for msg in out[:last]:
        for part in msg.parts:
            if isinstance(part, ToolReturnPart):
                assert len(part.model_response_str()) <= trim + 80
    assert _dump(truncate_tool_returns(out, trim)) == _dump(out), "idempotent"


@_PROPERTY
@given(histories(), st.integers(4, 30), st.integers(100, 3000))
def test_governed_history_is_valid(history: list[ModelMessage], limit: int, trim: int) -> None:
    config = Settings(max_history_messages=limit, tool_output_trim_chars=trim)
    out = govern_history(history, config)
    assert_valid(out)
    assert_order_kept(history, out)


@_PROPERTY
@given(histories(), st.integers(0, 4))
def test_compaction_keeps_a_valid_history(history: list[ModelMessage], keep: int) -> None:
    split = split_for_compaction(history, keep)
    if split is None:
        return
    cut, folded = split
    assert folded >= 1
    assert cut in turn_starts(history) or cut == len(history)
    out = compacted_history("the summary", history[cut:])
    assert is_summary(out[0])
    if len(out) > 2:
        assert_valid(out)
        assert_order_kept(history[cut:], out[2:])


# -- unit behaviour -------------------------------------------------------------------


def test_old_tool_outputs_are_trimmed_with_a_marker_and_the_last_turn_is_not() -> None:
    history = synthetic_turn(0, tool_calls=1, output_chars=5000) + synthetic_turn(
        1, tool_calls=1, output_chars=5000
    )
    out = truncate_tool_returns(history, 2000)
    old = out[2].parts[0]
    assert isinstance(old, ToolReturnPart)
    assert old.content.startswith("line 0.0 ")
    assert len(old.content) < 2100
    assert old.content.endswith("[Co trimmed 3,000 more characters of this old tool output]")
    newest = out[6].parts[0]
    assert isinstance(newest, ToolReturnPart) and len(newest.content) == 5000
    assert len(history[2].parts[0].content) == 5000  # type: ignore[union-attr]


def test_structured_tool_outputs_are_trimmed_as_their_json() -> None:
    call = ToolCallPart("query", {}, tool_call_id="q1")
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("first")]),
        ModelResponse(parts=[call]),
        ModelRequest(
            parts=[ToolReturnPart("query", {"rows": list(range(2000))}, tool_call_id="q1")]
        ),
        ModelResponse(parts=[TextPart("done")]),
        ModelRequest(parts=[UserPromptPart("second")]),
    ]
    part = truncate_tool_returns(history, 100)[2].parts[0]
    assert isinstance(part, ToolReturnPart)
    assert part.content.startswith('{"rows":[0,1,2,')
    assert "more characters of this old tool output" in part.content


def test_window_drops_whole_old_turns_and_says_how_many() -> None:
    history = synthetic_history(
        10, tool_every=1, tool_calls=1, output_chars=50
    )  # 4 messages a turn
    # 40 messages, a window of 12: it moves in steps of 6, cut back to the first turn
    # start at or after 5 steps (30): message 32, the prompt of turn 8.
    out = truncate_history_window(history, 12)
    assert len(out) == 8
    first = out[0]
    assert isinstance(first, ModelRequest)
    marker = first.parts[0]
    assert isinstance(marker, UserPromptPart)
    assert "32 earlier messages" in str(marker.content)
    assert first.parts[1].content == "prompt 8: what next?"  # type: ignore[union-attr]
    assert out[1:] == history[33:]


def test_window_keeps_a_compaction_summary_and_an_oversized_last_turn() -> None:
    summary = compacted_history("we did things", [])
    long_turn = synthetic_turn(99, tool_calls=8, output_chars=10)  # 18 messages
    history = summary + synthetic_history(3, tool_calls=1) + long_turn
    out = truncate_history_window(history, 10)
    assert out[:2] == summary
    assert out[2:][1:] == long_turn[1:]
    assert "earlier messages" in str(out[2].parts[0].content)  # type: ignore[union-attr]
    assert_valid(out)


def test_a_turn_answered_in_the_next_prompt_is_not_cut_apart() -> None:
    call = ToolCallPart("tool", {}, tool_call_id="x1")
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("one")]),
        ModelResponse(parts=[call]),
        ModelRequest(
            parts=[
                ToolReturnPart("tool", "Interrupted by user.", tool_call_id="x1"),
                UserPromptPart("two"),
            ]
        ),
        ModelResponse(parts=[TextPart("answer two")]),
    ]
    assert turn_starts(history) == [0]
    assert truncate_history_window(history, 4) == history
    out = truncate_history_window([*history, *synthetic_turn(5)], 4)
    assert_valid(out)


def test_governing_an_unchanged_history_again_gives_the_same_messages() -> None:
    # Each model request governs the whole conversation again. With the views kept, the
    # trimmed outputs and the window's marked prompt are the very objects sent before
    # (what keys on message identity, like the tracing's message cache, sees no change).
    history = synthetic_history(6, tool_every=1, tool_calls=1, output_chars=3000)
    config = Settings(max_history_messages=14, tool_output_trim_chars=500)
    views = GovernedViews()
    first = govern_history(history, config, views)
    again = govern_history(list(history), config, views)
    assert _contents(first) == _contents(govern_history(history, config)), "as without views"
    assert all(a is b for a, b in zip(first, again, strict=True))
    rebuilt = [
        i for i, (a, b) in enumerate(zip(first, history[-len(first) :], strict=True)) if a is not b
    ]
    assert 0 in rebuilt, "the window's marked prompt is a rebuilt message"
    assert len(rebuilt) >= 2, "and so are the trimmed outputs"

    # A new turn leaves the window where it was (it moves in steps of half the window):
    # the whole earlier request is sent again as the very same objects.
    longer = [*history, *synthetic_turn(6, tool_calls=1, output_chars=3000)]
    same = govern_history(longer, config, views)
    assert all(a is b for a, b in zip(first, same, strict=False))
    # Two more move it: the newly marked first prompt is a new message, and the messages
    # still trimmed the same way are the same objects.
    kept = {id(m) for m in same}
    for n in (7, 8):
        longer += synthetic_turn(n, tool_calls=1, output_chars=3000)
    moved = govern_history(longer, config, views)
    assert id(moved[0]) not in kept
    assert "earlier messages" in str(moved[0].parts[0].content)  # type: ignore[union-attr]
    assert sum(id(m) in kept for m in moved) >= len(moved) - 8


def test_kept_views_follow_the_settings_and_the_source_message() -> None:
    history = synthetic_history(3, tool_every=1, tool_calls=1, output_chars=3000)
    views = GovernedViews()
    trimmed_500 = truncate_tool_returns(history, 500, views)[2]
    trimmed_200 = truncate_tool_returns(history, 200, views)[2]
    assert trimmed_200 is not trimmed_500, "a new trim length is a new view"
    assert len(trimmed_200.parts[0].content) < 300  # type: ignore[union-attr]

    # A message whose parts were replaced (never done by Co, but possible) is rebuilt.
    source = history[2]
    changed = [*history[:2], ModelRequest(parts=list(source.parts)), *history[3:]]
    assert truncate_tool_returns(changed, 200, views)[2] is not trimmed_200
    assert truncate_tool_returns(history, 200, views)[2] is trimmed_200


def test_views_of_messages_no_longer_governed_are_let_go() -> None:
    config = Settings(max_history_messages=14, tool_output_trim_chars=500)
    views = GovernedViews()
    history = synthetic_history(6, tool_every=1, tool_calls=1, output_chars=3000)
    first = govern_history(history, config, views)
    # A cleared conversation: the views of the old one are not held any more...
    govern_history(synthetic_history(1, tool_calls=1, output_chars=3000), config, views)
    rebuilt = [m for m, h in zip(first, history[-len(first) :], strict=True) if m is not h]
    assert rebuilt, "the old conversation had rebuilt messages"
    assert not any(m is r for m in govern_history(history, config, views) for r in rebuilt)
    # ...while the same conversation governed twice keeps them.
    again = govern_history(history, config, views)
    assert govern_history(history, config, views) == again
    assert all(a is b for a, b in zip(govern_history(history, config, views), again, strict=True))


def _png(width: int, height: int, noise: bool = False) -> BinaryContent:
    import io
    import os

    img = (
        Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))
        if noise
        else Image.new("RGB", (width, height), "orange")
    )
    buffer = io.BytesIO()
    img.save(buffer, "PNG")
    return BinaryContent(buffer.getvalue(), media_type="image/png")


def _image_turn(n: int, images: list[BinaryContent]) -> list[ModelMessage]:
    """A turn whose one tool call returns its text and ``images``, as run_python does."""
    call = ToolCallPart("run_python", {"code": f"plot {n}"}, tool_call_id=f"p{n}")
    result = ToolReturnPart("run_python", [f"images of {n}", *images], tool_call_id=f"p{n}")
    return [
        ModelRequest(parts=[UserPromptPart(f"plot {n}")]),
        ModelResponse(parts=[call]),
        ModelRequest(parts=[result]),
        ModelResponse(parts=[TextPart(f"drew {n}")]),
    ]


def _sent_images(messages: Sequence[ModelMessage]) -> list[BinaryContent]:
    return [
        item
        for msg in messages
        if isinstance(msg, ModelRequest)
        for part in msg.parts
        if isinstance(part, ToolReturnPart | UserPromptPart) and isinstance(part.content, list)
        for item in part.content
        if isinstance(item, BinaryContent)
    ]


def test_images_of_older_turns_are_sent_as_one_line_and_kept_in_the_history() -> None:
    first, second, third = _png(320, 200), _png(300, 100), _png(200, 150)
    prompt = ModelRequest(parts=[UserPromptPart(["what does @fig show?", _png(64, 48)])])
    history = [
        prompt,
        ModelResponse(parts=[TextPart("a box")]),
        *_image_turn(1, [first]),
        *_image_turn(2, [second]),
        *_image_turn(3, [third]),
    ]
    saved = list(history)
    out = describe_old_images(history)
    assert_valid(out)
    assert _sent_images(out) == [second, third], "the images of the last two turns"
    old = out[4].parts[0]
    assert isinstance(old, ToolReturnPart)
    assert (
        old.content == "images of 1\n[Co: PNG image 320x200, 1 KB, shown earlier; not sent again]"
    )
    assert out[0].parts[0].content == [  # type: ignore[union-attr]
        "what does @fig show?",
        "[Co: PNG image 64x48, 0 KB, shown earlier; not sent again]",
    ]
    # The conversation the session keeps is untouched: every image is still there.
    assert history == saved and len(_sent_images(history)) == 4
    assert _sent_images([prompt]) != []


def test_images_are_sent_within_a_byte_budget_newest_first() -> None:
    big = [_png(220, 220, noise=True) for _ in range(6)]
    size = len(big[0].data)
    assert 100_000 < size < 150_000
    out = describe_old_images(_image_turn(1, big))
    kept = _sent_images(out)
    assert kept == big[-(IMAGE_BYTES // size) :], "the newest, as many as fit"
    assert sum(len(i.data) for i in kept) <= IMAGE_BYTES
    text = out[2].parts[0].content  # type: ignore[union-attr]
    assert isinstance(text, list) and text[0] == "images of 1"
    assert text[1].startswith("[Co: PNG image 220x220,")
    # One image larger than the budget is still sent when it is the newest.
    assert _sent_images(describe_old_images(_image_turn(1, big), budget=10)) == [big[-1]]


def test_described_images_are_the_same_messages_on_every_request() -> None:
    config = Settings()
    views = GovernedViews()
    history = [*_image_turn(1, [_png(40, 30)]), *_image_turn(2, []), *_image_turn(3, [])]
    first = govern_history(history, config, views)
    assert _sent_images(first) == []
    assert all(a is b for a, b in zip(first, govern_history(history, config, views), strict=True))


def test_estimate_is_about_four_characters_a_token() -> None:
    history = [ModelRequest(parts=[UserPromptPart("x" * 4000)])]
    assert 950 <= estimate_tokens(history) <= 1050
