"""pydantic-ai's ``Instrumentation`` capability, tuned for a long notebook conversation.

A trace in Co is one turn. pydantic-ai's agent run span carries the whole conversation
in ``pydantic_ai.all_messages``, so every turn's span repeated every earlier turn: a
turn's tracing cost grew with the conversation, most of each stored run span was a copy
of the one before, and the database's cut (``MAX_ATTRIBUTE_CHARS``) kept the oldest
messages and dropped the turn's own. ``CoInstrumentation`` puts only the turn's messages
there and the number it left out in ``co.earlier_messages``. The model request spans
still show what each request sent (``gen_ai.input.messages``); the session store keeps
the conversation.

pydantic-ai puts each capability of a run in the chain that every stream event goes
through: a generator layer (``wrap_run_event_stream``) and a listener test
(``listens_to``) per event, per capability, even when the capability does nothing with
events. ``Instrumentation`` does nothing with them (its spans come from the run, model
request and tool hooks), yet that chain made about a sixth of the Python calls tracing
added to a benchmark turn (more with longer answers: the cost is per text delta).
The capability ``instrumentation`` returns also steps out of the event chain (same spans
and attributes). Should a later pydantic-ai give ``Instrumentation`` an event hook, it
stays in the chain, so nothing it records is lost.

``CoInstrumentationSettings`` converts each message of the conversation to its OTel form
once. A notebook conversation runs to hundreds of messages, and pydantic-ai converts all
of them on every turn, up to three times: the first request's input messages, the agent
run's ``pydantic_ai.all_messages`` and its end-of-run check that no message changed. The
settings' ``messages_to_otel_messages`` is the documented place to change that
conversion; Co's keeps each message's converted form while the message object and its
``parts`` list are the same ones (Co never edits a message in place: history processors
build new ones), so a turn converts only its own new messages. With binary content left
out (Co's setting), pydantic-ai walks every value of a tool's result looking for files to
strip, in Python, at some microseconds per value; a message whose parts hold only plain
data (text, numbers, lists, dicts: nearly all of them) is converted as it would be with
binary content kept, which is the same output without the walk.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, Instrumentation, WrapRunHandler
from pydantic_ai.messages import AgentStreamEvent, ModelMessage, ModelRequest, SystemPromptPart
from pydantic_ai.models.instrumented import InstrumentationSettings

__all__ = ["CoInstrumentation", "CoInstrumentationSettings", "instrumentation"]

MEMO_MESSAGES = 256
"""Messages whose OTel form is kept (the newest used). The window's older messages are
found in pydantic-ai's own cache of serialized input messages (shared across turns, see
``_ConversationMessageJson``) and never reach the conversion; what does is the turn's new
messages, each converted once for its response span and read again as the next request's
input and for the run span. A cleared or compacted conversation is let go as new turns
come."""


@dataclass(frozen=True)
class _Converted:
    message: ModelMessage
    """Held, so its id is not reused while the entry lives."""
    parts: Any
    """The message's ``parts`` list when converted (a new list means a changed message)."""
    mcp_url_ids: frozenset[str]
    otel: list[Any]
    """The OTel chat messages it became."""
    marked: bool
    """Whether pydantic-ai may mark its parts in place: handed out as copies, then."""


def _may_be_marked(message: ModelMessage) -> bool:
    # pydantic-ai marks the parts of request-scoped system prompts later requests leave out
    # (``visible: false``, in ``_span_input_messages``), in place: those messages get their
    # own dicts. Every other caller only serializes what it gets, so the rest are shared.
    return isinstance(message, ModelRequest) and any(
        isinstance(part, SystemPromptPart) and part.scope == "request" for part in message.parts
    )


_PLAIN = (str, int, float, bool, type(None))


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is JSON-like data only (no file, no object of any other kind)."""
    if isinstance(value, _PLAIN):
        return True
    if depth > 32:
        return False
    if type(value) is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    if type(value) in (list, tuple):
        return all(_plain(v, depth + 1) for v in value)
    return False


def _binary_free(message: ModelMessage) -> bool:
    """Whether no part of the message can carry binary content: its contents are plain."""
    return all(_plain(getattr(part, "content", None)) for part in message.parts)


def _copy(otel_messages: list[Any]) -> list[Any]:
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
        self._keeping_binary: InstrumentationSettings | None = None
        """These settings with binary content kept, for messages that hold none."""
        if not self.include_binary_content:
            self._keeping_binary = InstrumentationSettings(
                **{**kwargs, "include_binary_content": True}
            )

    def messages_to_otel_messages(
        self, messages: list[ModelMessage], *, mcp_url_ids: frozenset[str] = frozenset()
    ) -> list[Any]:
        result: list[Any] = []
        for message in messages:
            entry = self._converted(message, mcp_url_ids)
            result.extend(_copy(entry.otel) if entry.marked else entry.otel)
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
        settings: InstrumentationSettings = self
        if self._keeping_binary is not None and _binary_free(message):
            settings = self._keeping_binary
        otel = InstrumentationSettings.messages_to_otel_messages(
            settings, [message], mcp_url_ids=mcp_url_ids
        )
        entry = _Converted(message, message.parts, mcp_url_ids, otel, _may_be_marked(message))
        memo[key] = entry
        memo.move_to_end(key)
        while len(memo) > self._memo_messages:
            memo.popitem(last=False)
        return entry


class _ConversationMessageJson(dict[int, Any]):
    """pydantic-ai's cache of each input message's serialized JSON, kept across runs.

    pydantic-ai keeps it for one run, so every turn serialized the conversation it sends
    again, and at the end of each run serializes every cached message once more to check
    that none was edited in place. Co never edits one (history processors build new
    messages, and the settings' memo would miss an in-place edit anyway), so this cache
    answers False to that check's ``if cache`` (the only place pydantic-ai tests it for
    truth) and the check is skipped. Requests still find and refresh their messages in it.
    """

    def __bool__(self) -> bool:
        return False


@dataclass
class CoInstrumentation(Instrumentation):
    """``Instrumentation`` whose run span holds the turn's messages, not the conversation's,
    and whose runs share one cache of serialized messages."""

    _conversation_json: _ConversationMessageJson = field(
        default_factory=_ConversationMessageJson, init=False, repr=False
    )

    _history_end: ModelMessage | None = field(default=None, init=False, repr=False)
    """The last message of the history the run started from."""

    _in_run: bool = field(default=False, init=False, repr=False)
    """Whether a run is using this instance now."""

    async def for_run(self, ctx: RunContext[Any]) -> Instrumentation:
        run = await super().for_run(ctx)
        assert isinstance(run, CoInstrumentation)
        # The conversation's cache is this one's.
        run._message_json_cache = self._conversation_json
        run._history_end = ctx.messages[-1] if ctx.messages else None
        if self._in_run:
            # A run inside a run using this instance: pydantic-ai's copy keeps them apart.
            return run
        # Turns run one after the other. This instance takes the new run's state (all of
        # it, as pydantic-ai's ``for_run`` set it) and serves the run itself: when a
        # capability's ``for_run`` returns a new object, pydantic-ai rebuilds the agent's
        # whole capability chain (ordering and dispatch) for the run, on every turn.
        conversation = self._conversation_json
        vars(self).update(vars(run))
        self._conversation_json = conversation
        return self

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> Any:
        self._in_run = True
        try:
            return await super().wrap_run(ctx, handler=handler)
        finally:
            self._in_run = False

    def _run_span_end_attributes(
        self,
        ctx: RunContext[Any],
        message_history: list[ModelMessage],
        metadata: dict[str, Any] | None,
    ) -> dict[str, str | int | float | bool]:
        earlier = self._new_message_index
        if earlier and not (
            len(message_history) >= earlier and message_history[earlier - 1] is self._history_end
        ):
            # Not the run's whole history (a failed run reports the last request's input,
            # which history processors may have cut): pydantic-ai's attributes as they are.
            return super()._run_span_end_attributes(ctx, message_history, metadata)
        # pydantic-ai marks where the run's messages start; here they all are the run's.
        self._new_message_index = 0
        try:
            attributes = super()._run_span_end_attributes(ctx, message_history[earlier:], metadata)
        finally:
            self._new_message_index = earlier
        attributes["co.earlier_messages"] = earlier
        return attributes


class _EventFreeInstrumentation(CoInstrumentation):
    """``CoInstrumentation`` that hands the event stream through untouched."""

    def wrap_run_event_stream(  # type: ignore[override]
        self, ctx: RunContext[Any], *, stream: AsyncIterable[AgentStreamEvent]
    ) -> AsyncIterable[AgentStreamEvent]:
        # The stream itself, not a generator around it: no layer to pass per event.
        return stream

    def listens_to(self, event: AgentStreamEvent) -> bool:
        return False


def _uses_events(capability: AbstractCapability[Any]) -> bool:
    return capability.has_on_event or capability.has_wrap_run_event_stream


def instrumentation(settings: InstrumentationSettings) -> CoInstrumentation:
    """The instrumentation capability for these settings (out of the event chain unless
    pydantic-ai's uses events)."""
    if _uses_events(Instrumentation(settings=settings)):
        return CoInstrumentation(settings=settings)
    return _EventFreeInstrumentation(settings=settings)
