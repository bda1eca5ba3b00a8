"""Synthetic conversations for tests and benchmarks of history governance and the store,
and the window cut alone (the session cuts it as one step of ``govern_history``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from co_kernel.turn._history_processors import GovernedViews, _lines, _windowed

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["synthetic_history", "synthetic_turn", "truncate_history_window"]


def synthetic_turn(
    n: int, *, tool_calls: int = 0, output_chars: int = 200, prefix: str = "t"
) -> list[ModelMessage]:
    """One turn: a prompt, ``tool_calls`` calls each answered with ``output_chars`` of output,
    and a final answer. Ids and texts carry ``n`` so every turn is distinct."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(f"prompt {n}: what next?")])]
    for c in range(tool_calls):
        call_id = f"{prefix}{n}_{c}"
        messages.append(
            ModelResponse(
                parts=[
                    ToolCallPart("run_shell", {"command": f"ls dir{n}_{c}"}, tool_call_id=call_id)
                ]
            )
        )
        line = f"line {n}.{c} "
        body = (line * (output_chars // len(line) + 1))[:output_chars]
        messages.append(
            ModelRequest(parts=[ToolReturnPart("run_shell", body, tool_call_id=call_id)])
        )
    messages.append(ModelResponse(parts=[TextPart(f"answer {n}: here is what I found.")]))
    return messages


def synthetic_history(
    turns: int, *, tool_every: int = 2, tool_calls: int = 1, output_chars: int = 3000
) -> list[ModelMessage]:
    """``turns`` turns; every ``tool_every``-th one makes ``tool_calls`` tool calls."""
    history: list[ModelMessage] = []
    for n in range(turns):
        calls = tool_calls if tool_every and n % tool_every == 0 else 0
        history.extend(synthetic_turn(n, tool_calls=calls, output_chars=output_chars))
    return history


def truncate_history_window(
    messages: Sequence[ModelMessage], max_messages: int, views: GovernedViews | None = None
) -> list[ModelMessage]:
    """Past ``max_messages``, drop old whole turns in steps of half the window, and say so.

    The cut falls at the first turn start past a multiple of the step, so it stays put
    while the conversation grows by a step: every request until then starts the same.
    A compaction summary at the head is always kept. The newest turn is kept whole even
    when it alone is longer than the window: cutting inside it could orphan a tool call.
    With ``views``, the first kept prompt carries the same marked message each time the
    same number of messages is dropped before it.
    """
    head, cut, _ = _lines(messages, max_messages)
    return _windowed(messages, head, cut, views)
