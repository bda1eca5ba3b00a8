"""History governance (seed 001 ``_history.py``): what of the conversation the model sees.

The processors are pure functions from a valid history to a valid history: every tool
call keeps its answer, and the order of what is kept never changes. ``govern_history``
applies them in the order that keeps each one cheap on a long session: the window first
(it reads backwards only as far as it keeps), then the trimming of old tool outputs on
what is left. ``GovernHistory`` (in ``_govern.py``) runs them before every model request.

A *turn* starts at a request carrying a user prompt with no tool call open across it, so
cutting the history there never separates a call from its return.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeGuard, cast

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ToolCallPart

    from ..config import Settings

__all__ = [
    "SUMMARY_PREFIX",
    "TRIM_MARKER",
    "WINDOW_MARKER",
    "GovernedViews",
    "estimate_tokens",
    "govern_history",
    "is_summary",
    "truncate_history_window",
    "truncate_tool_returns",
    "turn_starts",
]

TRIM_MARKER = "\n[Co trimmed {n:,} more characters of this old tool output]"
"""Appended to a trimmed tool output; the model learns that the rest exists."""
_TRIMMED = re.compile(r"\n\[Co trimmed [\d,]+ more characters of this old tool output\]$")

WINDOW_MARKER = (
    "[Co: {n:,} earlier messages of this conversation are not shown to keep it within "
    "the history window.]"
)
"""Put before the first kept prompt when the window drops turns."""

SUMMARY_PREFIX = "[Co: summary of the earlier conversation]\n"
"""Starts the user prompt that carries a compaction summary; the window always keeps it."""

_CHARS_PER_TOKEN = 4


class GovernedViews:
    """The messages governance rebuilt, kept so the same input gives the same objects.

    Governance runs before every model request on the whole conversation, and a trimmed
    tool output or the window's marked first prompt is a new message each time. Whatever
    keys on message identity then sees a changed message on every request: with tracing
    on, pydantic-ai's instrumentation converts and serializes each of them again for every
    request span (a cost growing with the number of trimmed outputs in the window). Handed
    to the processors, this keeps each rebuilt message while its source message, the
    source's ``parts`` list and the rebuild's parameters are the same (Co never edits a
    message in place; a changed message is a new one), so an unchanged history yields the
    very same objects. ``govern_history`` keeps only what its last call used: a message
    that left the window (or a cleared or compacted conversation) is let go.
    """

    def __init__(self) -> None:
        self._views: dict[tuple[int, str], tuple[Any, Any, object, Any]] = {}
        self._used: dict[tuple[int, str], tuple[Any, Any, object, Any]] | None = None

    @contextmanager
    def one_pass(self) -> Iterator[None]:
        """Keep, from here on, only the views used inside this block."""
        self._used = {}
        try:
            yield
            self._views = self._used
        finally:
            self._used = None

    def view(self, source: Any, kind: str, key: object, build: Callable[[], Any]) -> Any:
        """The ``kind`` view of ``source`` for ``key``: the one kept, or ``build()`` kept now."""
        slot = (id(source), kind)
        entry = self._views.get(slot)
        if not (
            entry is not None
            and entry[0] is source
            and entry[1] is source.parts
            and entry[2] == key
        ):
            # The source is held, so its id is not reused while the entry lives.
            entry = (source, source.parts, key, build())
            self._views[slot] = entry
        if self._used is not None:
            self._used[slot] = entry
        return entry[3]


def _is_call(part: object) -> TypeGuard[ToolCallPart]:
    from pydantic_ai.messages import ToolCallPart

    return isinstance(part, ToolCallPart)


def _answer_id(part: Any) -> str | None:
    """The call id a request part answers, or None."""
    from pydantic_ai.messages import RetryPromptPart, ToolReturnPart

    if isinstance(part, ToolReturnPart):
        return part.tool_call_id
    if isinstance(part, RetryPromptPart) and part.tool_name is not None:
        return part.tool_call_id
    return None


def _has_prompt(message: Any) -> bool:
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    return isinstance(message, ModelRequest) and any(
        isinstance(p, UserPromptPart) for p in message.parts
    )


def is_summary(message: Any) -> bool:
    """Whether a message is the prompt that carries a compaction summary."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    if not isinstance(message, ModelRequest) or not message.parts:
        return False
    first = message.parts[0]
    return (
        isinstance(first, UserPromptPart)
        and isinstance(first.content, str)
        and first.content.startswith(SUMMARY_PREFIX)
    )


def turn_starts(messages: Sequence[ModelMessage]) -> list[int]:
    """Indices where a turn starts: a prompt request with no tool call open across it."""
    from pydantic_ai.messages import ModelRequest, ModelResponse

    starts: list[int] = []
    open_calls: set[str] = set()
    for i, msg in enumerate(messages):
        if isinstance(msg, ModelRequest):
            if not open_calls and _has_prompt(msg):
                starts.append(i)
            for part in msg.parts:
                call_id = _answer_id(part)
                if call_id is not None:
                    open_calls.discard(call_id)
        elif isinstance(msg, ModelResponse):
            open_calls.update(c.tool_call_id for c in msg.parts if _is_call(c))
    return starts


def _last_turn_start(messages: Sequence[ModelMessage]) -> int:
    """Start of the newest turn, found by reading backwards (cheap on long histories)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse

    answered: set[str] = set()  # returns seen whose call lies further back
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if isinstance(msg, ModelResponse):
            for reply in msg.parts:
                if _is_call(reply):
                    answered.discard(reply.tool_call_id)
        elif isinstance(msg, ModelRequest):
            for part in msg.parts:
                call_id = _answer_id(part)
                if call_id is not None:
                    answered.add(call_id)
            if not answered and _has_prompt(msg):
                return i
    return 0


def truncate_tool_returns(
    messages: Sequence[ModelMessage], trim_chars: int, views: GovernedViews | None = None
) -> list[ModelMessage]:
    """Trim tool outputs older than the last turn to ``trim_chars``, with a marker.

    Messages that need no change are passed through as the same objects; a trimmed one is
    a new message with new parts, so the session's own history is never altered (with
    ``views``, the one built for that message before).
    """
    from pydantic_ai.messages import ModelRequest

    out = list(messages)
    for i in range(_last_turn_start(messages)):
        msg = out[i]
        if not isinstance(msg, ModelRequest):
            continue
        if views is None:
            out[i] = _trimmed(msg, trim_chars)
        else:
            # A kept view skips reading the parts again (long outputs are searched for
            # the marker); one that needs no trimming is the message itself.
            out[i] = views.view(msg, "trimmed", trim_chars, lambda m=msg: _trimmed(m, trim_chars))
    return out


def _trimmed(msg: Any, trim_chars: int) -> Any:
    """``msg`` with its long tool outputs trimmed, or ``msg`` itself when none is."""
    from pydantic_ai.messages import ToolReturnPart

    new_parts: list[Any] | None = None
    for j, part in enumerate(msg.parts):
        if not isinstance(part, ToolReturnPart):
            continue
        content = part.content
        if isinstance(content, str):
            text = content
        elif part.files:  # images and documents are not text to cut
            continue
        else:
            text = part.model_response_str()
        if len(text) <= trim_chars or _TRIMMED.search(text):
            continue
        if new_parts is None:
            new_parts = list(msg.parts)
        trimmed = text[:trim_chars] + TRIM_MARKER.format(n=len(text) - trim_chars)
        # The typed subclasses narrow `content`; a trimmed output is plain text.
        new_parts[j] = dataclasses.replace(cast(Any, part), content=trimmed)
    if new_parts is None:
        return msg
    return dataclasses.replace(msg, parts=new_parts)


def truncate_history_window(
    messages: Sequence[ModelMessage], max_messages: int, views: GovernedViews | None = None
) -> list[ModelMessage]:
    """Past ``max_messages``, drop the oldest whole turns and say so.

    A compaction summary at the head is always kept. The newest turn is kept whole even
    when it alone is longer than the window: cutting inside it could orphan a tool call.
    With ``views``, the first kept prompt carries the same marked message each time the
    same number of messages is dropped before it.
    """
    from pydantic_ai.messages import ModelRequest, ModelResponse, UserPromptPart

    if len(messages) <= max_messages:
        return list(messages)
    head = 0
    if messages and is_summary(messages[0]):
        head = 2 if len(messages) > 1 and isinstance(messages[1], ModelResponse) else 1
    budget = max_messages - head
    # Read backwards; a cut before message i is safe when every return at or after i
    # answers a call at or after i, and message i starts a prompt.
    answered: set[str] = set()
    cut: int | None = None
    for i in range(len(messages) - 1, head - 1, -1):
        msg = messages[i]
        if isinstance(msg, ModelResponse):
            for reply in msg.parts:
                if _is_call(reply):
                    answered.discard(reply.tool_call_id)
            continue
        if not isinstance(msg, ModelRequest):
            continue
        for part in msg.parts:
            call_id = _answer_id(part)
            if call_id is not None:
                answered.add(call_id)
        if answered or not _has_prompt(msg):
            continue
        if cut is not None and len(messages) - i > budget:
            break
        cut = i
    if cut is None or cut <= head:
        return list(messages)
    dropped = cut - head
    first = messages[cut]
    assert isinstance(first, ModelRequest)

    def mark() -> ModelMessage:
        note = UserPromptPart(WINDOW_MARKER.format(n=dropped))
        return dataclasses.replace(first, parts=[note, *first.parts])

    marked = mark() if views is None else views.view(first, "window", dropped, mark)
    return [*messages[:head], marked, *messages[cut + 1 :]]


def govern_history(
    messages: Sequence[ModelMessage], settings: Settings, views: GovernedViews | None = None
) -> list[ModelMessage]:
    """What the model is sent: the window, then old tool outputs trimmed."""
    if views is None:
        windowed = truncate_history_window(messages, settings.max_history_messages)
        return truncate_tool_returns(windowed, settings.tool_output_trim_chars)
    with views.one_pass():
        windowed = truncate_history_window(messages, settings.max_history_messages, views)
        return truncate_tool_returns(windowed, settings.tool_output_trim_chars, views)


def _part_chars(part: Any) -> int:
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return len(content)
    if content is not None:
        if hasattr(part, "model_response_str"):
            return len(part.model_response_str())
        return sum(len(c) for c in content if isinstance(c, str))
    args = getattr(part, "args", None)
    if isinstance(args, str):
        return len(args) + len(getattr(part, "tool_name", ""))
    if isinstance(args, dict):
        import json

        return len(json.dumps(args)) + len(getattr(part, "tool_name", ""))
    return 0


def estimate_tokens(messages: Sequence[ModelMessage]) -> int:
    """A cheap estimate of the prompt tokens a history costs (four characters a token)."""
    chars = 0
    for msg in messages:
        for part in msg.parts:
            chars += _part_chars(part) + 8  # a little per part for roles and framing
    return chars // _CHARS_PER_TOKEN
