"""A model wrapper that turns tool calls written as text into real tool calls.

For local models (see ``_textcalls``): the wrapped model's answer is scanned for calls to
the registered tools, and each one found becomes a ``ToolCallPart``, so pydantic-ai runs
it through the same flow as a native call, approvals included. Streaming keeps working:
prose is passed on as it arrives and only text that may still become a call is held.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Hashable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from pydantic_ai.messages import (
    ModelResponse,
    ModelResponsePart,
    ModelResponseStreamEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
)
from pydantic_ai.models import StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel

from ._textcalls import ScanState, TextCall, recognise_tool_calls, scan_text

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.usage import RequestUsage

__all__ = ["TextToolCallModel"]


def _may_resolve(held: str, delta: str) -> bool:
    """Whether ``delta`` can settle the text the scanner holds (else skip the rescan).

    An unbalanced bracket waits for a closing one, a call fence for a backtick and a
    ``<tool_call>`` for a ``>``; rescanning a long held call on every token would cost
    quadratic time on a machine that is busy generating.
    """
    if held[0] in "{[":
        return "}" in delta or "]" in delta
    if held.startswith("```") and "\n" in held:
        return "`" in delta
    if held.startswith("<tool_call>"):
        return ">" in delta
    return True


def _tool_names(params: ModelRequestParameters) -> frozenset[str]:
    return frozenset(tool.name for tool in params.function_tools)


def _call_part(call: TextCall) -> ToolCallPart:
    from pydantic_ai._utils import generate_tool_call_id

    return ToolCallPart(call.name, dict(call.arguments), tool_call_id=generate_tool_call_id())


def rewrite_parts(
    parts: Sequence[ModelResponsePart], names: frozenset[str]
) -> list[ModelResponsePart]:
    """The parts of a complete response with text-written calls turned into tool calls."""
    out: list[ModelResponsePart] = []
    for part in parts:
        if not isinstance(part, TextPart):
            out.append(part)
            continue
        segments = recognise_tool_calls(part.content, names)
        if not any(isinstance(s, TextCall) for s in segments):
            out.append(part)
            continue
        for segment in segments:
            if isinstance(segment, TextCall):
                out.append(_call_part(segment))
            elif segment.strip():
                out.append(TextPart(segment))
    return out


class TextToolCallModel(WrapperModel):
    """Wraps a model whose tool calls may arrive as JSON in its text."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        from dataclasses import replace

        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        names = _tool_names(model_request_parameters)
        if not names:
            return response
        return replace(response, parts=rewrite_parts(response.parts, names))

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as inner:
            names = _tool_names(model_request_parameters)
            if not names:
                yield inner
                return
            yield _RecognisingStream(model_request_parameters, _inner=inner, _names=names)


@dataclass
class _RecognisingStream(StreamedResponse):
    """Re-emits the wrapped stream's events with text-written calls as tool call parts."""

    _inner: StreamedResponse
    """The wrapped model's stream."""
    _names: frozenset[str]
    """Registered tool names; only these are recognised."""
    _scan: ScanState = field(default_factory=ScanState, init=False)
    """Progress through the current text part."""
    _text: str = field(default="", init=False)
    """The wrapped stream's current text part so far."""
    _text_index: int | None = field(default=None, init=False)
    """The wrapped stream's index of that text part."""
    _out_part: int = field(default=0, init=False)
    """Counter for our own text parts (a call between two texts splits them)."""

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        async for event in self._inner:
            if isinstance(event, PartStartEvent):
                part = event.part
                if isinstance(part, TextPart):
                    if event.index != self._text_index:
                        for out in self._flush_text():
                            yield out
                        self._text_index = event.index
                    for out in self._feed(part.content):
                        yield out
                    continue
                for out in self._flush_text():
                    yield out
                for out in self._forward_start(event.index, part):
                    yield out
            elif isinstance(event, PartDeltaEvent):
                delta = event.delta
                if isinstance(delta, TextPartDelta):
                    for out in self._feed(delta.content_delta):
                        yield out
                else:
                    for out in self._forward_delta(event.index, delta):
                        yield out
            # PartEndEvent and FinalResultEvent are derived again from our own parts.
        for out in self._flush_text():
            yield out
        self._copy_metadata()

    # -- text ------------------------------------------------------------------

    def _feed(self, delta: str) -> list[ModelResponseStreamEvent]:
        if not delta:
            return []
        held = self._text[self._scan.position :]
        self._text += delta
        if held and not _may_resolve(held, delta):
            return []
        return self._emit(scan_text(self._text, self._scan, self._names, final=False))

    def _flush_text(self) -> list[ModelResponseStreamEvent]:
        if self._text_index is None:
            return []
        events = self._emit(scan_text(self._text, self._scan, self._names, final=True))
        self._text, self._scan, self._text_index = "", ScanState(), None
        self._out_part += 1
        return events

    def _emit(self, segments: list[str | TextCall]) -> list[ModelResponseStreamEvent]:
        events: list[ModelResponseStreamEvent] = []
        for segment in segments:
            if isinstance(segment, TextCall):
                self._out_part += 1
                part = _call_part(segment)
                events.append(
                    self._parts_manager.handle_tool_call_part(
                        vendor_part_id=None,
                        tool_name=part.tool_name,
                        args=part.args,
                        tool_call_id=part.tool_call_id,
                    )
                )
            else:
                events.extend(
                    self._parts_manager.handle_text_delta(
                        vendor_part_id=("text", self._out_part),
                        content=segment,
                        ignore_leading_whitespace=True,
                    )
                )
        return events

    # -- everything else passes through -------------------------------------------

    def _forward_start(self, index: int, part: ModelResponsePart) -> list[ModelResponseStreamEvent]:
        key: Hashable = ("inner", index)
        manager = self._parts_manager
        if isinstance(part, ThinkingPart):
            return list(
                manager.handle_thinking_delta(
                    vendor_part_id=key,
                    content=part.content,
                    id=part.id,
                    signature=part.signature,
                    provider_name=part.provider_name,
                )
            )
        if isinstance(part, ToolCallPart):
            event = manager.handle_tool_call_delta(
                vendor_part_id=key,
                tool_name=part.tool_name,
                # Its typed argument shapes (TypedDicts) are dicts too.
                args=cast("str | dict[str, Any] | None", part.args),
                tool_call_id=part.tool_call_id,
                provider_name=part.provider_name,
                provider_details=part.provider_details,
            )
            return [event] if event is not None else []
        return [manager.handle_part(vendor_part_id=key, part=part)]

    def _forward_delta(self, index: int, delta: Any) -> list[ModelResponseStreamEvent]:
        key: Hashable = ("inner", index)
        manager = self._parts_manager
        if isinstance(delta, ThinkingPartDelta):
            return list(
                manager.handle_thinking_delta(
                    vendor_part_id=key,
                    content=delta.content_delta,
                    signature=delta.signature_delta,
                    provider_name=delta.provider_name,
                )
            )
        if isinstance(delta, ToolCallPartDelta):
            event = manager.handle_tool_call_delta(
                vendor_part_id=key,
                tool_name=delta.tool_name_delta,
                args=delta.args_delta,
                tool_call_id=delta.tool_call_id,
            )
            return [event] if event is not None else []
        return []

    def _copy_metadata(self) -> None:
        inner = self._inner
        self.provider_response_id = inner.provider_response_id
        self.provider_details = inner.provider_details
        self.finish_reason = inner.finish_reason
        self.canonical_system = inner.canonical_system
        if any(isinstance(p, ToolCallPart) for p in self._parts_manager.get_parts()):
            # The model "stopped"; with a call recognised the run must go on to the tool.
            self.finish_reason = "tool_call"

    # -- what the wrapped stream knows ------------------------------------------------

    @property
    def usage(self) -> RequestUsage:
        return self._inner.usage

    async def close_stream(self) -> None:
        await self._inner.cancel()

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def provider_name(self) -> str | None:
        return self._inner.provider_name

    @property
    def provider_url(self) -> str | None:
        return self._inner.provider_url

    @property
    def timestamp(self) -> datetime:
        return self._inner.timestamp
