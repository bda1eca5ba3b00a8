"""pydantic-ai's ``Instrumentation`` capability, without a pass over every stream event.

pydantic-ai puts each capability of a run in the chain that every stream event goes
through: a generator layer (``wrap_run_event_stream``) and a listener test
(``listens_to``) per event, per capability, even when the capability does nothing with
events. ``Instrumentation`` does nothing with them (its spans come from the run, model
request and tool hooks), yet that chain made about a sixth of the Python calls tracing
added to a benchmark turn (more with longer answers: the cost is per text delta).
``CoInstrumentation`` is the same capability, same spans and attributes, that steps out
of the event chain.

Should a later pydantic-ai give ``Instrumentation`` an event hook, ``instrumentation``
returns the plain capability instead, so nothing it records is lost.

``CoInstrumentationSettings`` converts each message of the conversation to its OTel form
once. A notebook conversation runs to hundreds of messages, and pydantic-ai converts all
of them on every turn, up to three times: the first request's input messages, the agent
run's ``pydantic_ai.all_messages`` and its end-of-run check that no message changed. The
settings' ``messages_to_otel_messages`` is the documented place to change that
conversion; Co's keeps each message's converted form while the message object and its
``parts`` list are the same ones (Co never edits a message in place: history processors
build new ones), so a turn converts only its own new messages.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterable
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, Instrumentation
from pydantic_ai.messages import AgentStreamEvent, ModelMessage
from pydantic_ai.models.instrumented import InstrumentationSettings

__all__ = ["CoInstrumentation", "CoInstrumentationSettings", "instrumentation"]

MEMO_MESSAGES = 4096
"""Messages whose OTel form is kept (the newest used); a long conversation fits."""


@dataclass(frozen=True)
class _Converted:
    message: ModelMessage
    """Held, so its id is not reused while the entry lives."""
    parts: Any
    """The message's ``parts`` list when converted (a new list means a changed message)."""
    mcp_url_ids: frozenset[str]
    otel: list[Any]
    """The OTel chat messages it became; handed out as copies, never itself."""


def _copy(otel_messages: list[Any]) -> list[Any]:
    # Callers mark parts in place (``visible: false`` on old request-scoped prompts): each
    # gets its own message and part dicts. Values below a part are only read.
    return [
        {**message, "parts": [dict(part) for part in message["parts"]]}
        if isinstance(message.get("parts"), list)
        else dict(message)
        for message in otel_messages
    ]


class CoInstrumentationSettings(InstrumentationSettings):
    """``InstrumentationSettings`` that convert each message to its OTel form once."""

    def __init__(self, *, memo_messages: int = MEMO_MESSAGES, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._memo: OrderedDict[int, _Converted] = OrderedDict()
        self._memo_messages = memo_messages

    def messages_to_otel_messages(
        self, messages: list[ModelMessage], *, mcp_url_ids: frozenset[str] = frozenset()
    ) -> list[Any]:
        result: list[Any] = []
        for message in messages:
            result.extend(_copy(self._converted(message, mcp_url_ids).otel))
        return result

    def _converted(self, message: ModelMessage, mcp_url_ids: frozenset[str]) -> _Converted:
        memo = self._memo
        key = id(message)
        entry = memo.get(key)
        if (
            entry is not None
            and entry.message is message
            and entry.parts is message.parts
            and entry.mcp_url_ids == mcp_url_ids
        ):
            memo.move_to_end(key)
            return entry
        otel = super().messages_to_otel_messages([message], mcp_url_ids=mcp_url_ids)
        entry = _Converted(message, message.parts, mcp_url_ids, otel)
        memo[key] = entry
        memo.move_to_end(key)
        while len(memo) > self._memo_messages:
            memo.popitem(last=False)
        return entry


class CoInstrumentation(Instrumentation):
    """``Instrumentation`` that hands the event stream through untouched."""

    def wrap_run_event_stream(  # type: ignore[override]
        self, ctx: RunContext[Any], *, stream: AsyncIterable[AgentStreamEvent]
    ) -> AsyncIterable[AgentStreamEvent]:
        # The stream itself, not a generator around it: no layer to pass per event.
        return stream

    def listens_to(self, event: AgentStreamEvent) -> bool:
        return False


def _uses_events(capability: AbstractCapability[Any]) -> bool:
    return capability.has_on_event or capability.has_wrap_run_event_stream


def instrumentation(settings: InstrumentationSettings) -> Instrumentation:
    """The instrumentation capability for these settings (lean unless events matter)."""
    plain = Instrumentation(settings=settings)
    if _uses_events(plain):
        return plain
    return CoInstrumentation(settings=settings)
