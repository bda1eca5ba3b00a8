"""History governance moves in steps: consecutive requests share their earlier prefix.

Each request of a growing conversation is governed as the model would be sent it; the
previous request must then be a prefix of the next one's messages except where the
window or the tool-output trimming moved, which happens once per half window.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart

from co_kernel.config import Settings
from co_kernel.turn._history_processors import RUNAWAY_MARKER, GovernedViews, govern_history

from ..support.histories import synthetic_turn


def _contents(messages: Sequence[ModelMessage]) -> list[list[tuple[str, Any]]]:
    return [[(p.part_kind, getattr(p, "content", None)) for p in m.parts] for m in messages]


def _requests(history: Sequence[ModelMessage], config: Settings) -> list[list[ModelMessage]]:
    """What each model request of the conversation is sent (with kept views, as a session)."""
    views = GovernedViews()
    return [
        govern_history(history[: i + 1], config, views)
        for i, message in enumerate(history)
        if isinstance(message, ModelRequest)
    ]


def _breaks(requests: Sequence[Sequence[ModelMessage]]) -> int:
    """Requests that do not start with the whole previous request."""
    count = 0
    for before, after in itertools.pairwise(requests):
        if _contents(after[: len(before)]) != _contents(before):
            count += 1
    return count


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4000)), min_size=1, max_size=60),
    st.integers(6, 40),
    st.integers(100, 2000),
)
def test_requests_break_their_prefix_at_most_once_per_half_window(
    turns: list[tuple[int, int]], limit: int, trim: int
) -> None:
    history: list[ModelMessage] = []
    for n, (calls, chars) in enumerate(turns):
        history += synthetic_turn(n, tool_calls=calls, output_chars=chars)
    config = Settings(max_history_messages=limit, tool_output_trim_chars=trim)
    requests = _requests(history, config)
    step = limit // 2
    # The window and the trimming move together, once per step of history: at most
    # one break per step, plus one for a turn that straddles a step line.
    assert _breaks(requests) <= len(history) // step + 1
    requests_at = [i for i, m in enumerate(history) if isinstance(m, ModelRequest)]
    prompts_at = [i for i in requests_at if history[i].parts[0].part_kind == "user-prompt"]
    newest = history[prompts_at[-1] : requests_at[-1] + 1]
    sent = _contents(requests[-1][-len(newest) :])
    # Whole, though its prompt may carry the window's marker in front.
    assert sent[1:] == _contents(newest)[1:], "the newest turn is never trimmed"
    assert sent[0][-1] == _contents(newest)[0][-1]


def test_a_long_conversation_keeps_its_prefix_for_nine_requests_in_ten() -> None:
    history: list[ModelMessage] = []
    for n in range(200):
        history += synthetic_turn(n)
    requests = _requests(history, Settings(max_history_messages=40))
    assert len(requests) == 200
    assert _breaks(requests) <= 20  # before: every request after the 20th
    assert all(len(r) <= 40 for r in requests)
    # Cut back to half the window: right after a step the model still sees 20 messages.
    assert min(len(r) for r in requests[20:]) >= 20


def test_tool_outputs_are_trimmed_once_and_never_differently() -> None:
    history: list[ModelMessage] = []
    for n in range(40):
        history += synthetic_turn(n, tool_calls=1, output_chars=5000)
    requests = _requests(history, Settings(max_history_messages=24, tool_output_trim_chars=300))
    seen: dict[str, str] = {}
    for request in requests:
        for message in request:
            for part in message.parts:
                if part.part_kind == "tool-return":
                    text = str(part.content)
                    key = part.tool_call_id  # type: ignore[union-attr]
                    if key in seen and len(seen[key]) < 5000:
                        assert text == seen[key], "a trimmed output never changes again"
                    seen[key] = text
    assert any("Co trimmed" in text for text in seen.values())
    assert _breaks(requests) <= len(history) // 12 + 1


def test_a_runaway_answer_is_cut_where_its_loop_starts() -> None:
    sane = "Here is the plan for the data cleaning, step by step. " * 3
    loop = "h-" * 2000
    history: list[ModelMessage] = [
        *synthetic_turn(0),
        ModelRequest(parts=synthetic_turn(1)[0].parts),
        ModelResponse(parts=[TextPart(sane + loop)], finish_reason="length"),
        ModelRequest(parts=synthetic_turn(2)[0].parts),
        ModelResponse(parts=[TextPart(sane + loop)], finish_reason="stop"),
        *synthetic_turn(3),
    ]
    sent = govern_history(history, Settings())
    cut = sent[3].parts[0]
    assert isinstance(cut, TextPart)
    assert cut.content.startswith(sane)
    assert len(cut.content) < len(sane) + 600
    kept = cut.content.index("\n[Co cut")
    assert cut.content[kept:] == RUNAWAY_MARKER.format(n=len(sane) + len(loop) - kept)
    assert sent[5] is history[5], "an answer that ended by itself is left alone"
    numbers = " ".join(str(n * 7919 % 10007) for n in range(900))
    capped = ModelResponse(parts=[TextPart(numbers)], finish_reason="length")
    assert govern_history([*history, capped], Settings())[-1] is capped, "not a loop"
