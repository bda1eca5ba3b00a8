"""run_turn: one user turn as a state machine (seed 001 "Orchestration State Machine").

Streaming, approval chaining (a ``while``: a resumed run may ask again), provider-error
retries with one usage budget shared by every resume and retry, and interrupt recovery
that leaves a valid history behind.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._approval import (
    INTERRUPTED,
    auto_decision,
    decision_label,
    denial_message,
    is_refusal,
    normalise_args,
)
from ._frontend import ApprovalRequest, FrontendProtocol, ToolCallView, ToolResultView, TurnSummary
from ._provider_errors import ProviderErrorKind, backoff_delay, classify_provider_error

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.usage import RunUsage

    from ._deps import CoDeps

__all__ = ["INTERRUPTED_TOOL_RETURN", "TurnResult", "patch_dangling_tool_calls", "run_turn"]

INTERRUPTED_TOOL_RETURN = "Interrupted by user."


@dataclass
class TurnResult:
    """What a turn leaves behind."""

    messages: list[ModelMessage]
    """The whole conversation after the turn (valid: no dangling tool calls)."""
    output: str = ""
    """The answer text (all text parts of the turn)."""
    usage: RunUsage | None = None
    """Tokens and requests of the turn."""
    interrupted: bool = False
    """The person stopped the turn."""
    error: str | None = None
    """Why the turn ended without an answer."""
    requests: int = 0
    """Model requests made."""
    decisions: dict[str, str] = field(default_factory=dict)
    """How each side-effectful call was decided, by tool call id."""


class _Interrupted(Exception):
    """Carries the partial state of a stream out of its context manager."""

    def __init__(self, messages: list[ModelMessage]) -> None:
        self.messages = messages


def patch_dangling_tool_calls(messages: list[ModelMessage]) -> list[ModelMessage]:
    """Answer every unanswered tool call with a synthetic "Interrupted by user." return."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

    answered: set[str] = set()
    for msg in messages:
        if isinstance(msg, ModelRequest):
            for part in msg.parts:
                if hasattr(part, "tool_call_id") and part.part_kind in (
                    "tool-return",
                    "retry-prompt",
                ):
                    answered.add(part.tool_call_id)
    patched = list(messages)
    for i, msg in enumerate(messages):
        if not isinstance(msg, ModelResponse):
            continue
        dangling = [
            p for p in msg.parts if isinstance(p, ToolCallPart) and p.tool_call_id not in answered
        ]
        if dangling:
            returns = [
                ToolReturnPart(p.tool_name, INTERRUPTED_TOOL_RETURN, tool_call_id=p.tool_call_id)
                for p in dangling
            ]
            # Insert right after the response so the order stays call -> return.
            insert_at = patched.index(msg, i) + 1
            nxt = patched[insert_at] if insert_at < len(patched) else None
            if isinstance(nxt, ModelRequest):
                patched[insert_at] = ModelRequest(parts=[*returns, *nxt.parts])
            else:
                patched.insert(insert_at, ModelRequest(parts=returns))
            answered.update(p.tool_call_id for p in dangling)
    return patched


class _TurnRunner:
    """State of one turn; run() is the state machine."""

    def __init__(
        self,
        agent: Agent[CoDeps, Any],
        prompt: str | Sequence[Any],
        *,
        deps: CoDeps,
        history: list[ModelMessage],
        frontend: FrontendProtocol,
        provider: str,
        model_label: str,
    ) -> None:
        from pydantic_ai.usage import RunUsage, UsageLimits

        settings = deps.settings
        self.agent = agent
        self.prompt = prompt
        self.deps = deps
        self.history = list(history)
        self.frontend = frontend
        self.provider = provider
        self.model_label = model_label
        self.limits = UsageLimits(request_limit=settings.max_request_limit)
        self.usage = RunUsage()
        self.messages: list[ModelMessage] = list(history)
        self.text_parts: list[str] = []
        self.pending_text = ""
        self.tool_started: dict[str, float] = {}
        self.decisions: dict[str, str] = {}
        self.shown_calls: set[str] = set()
        self.call_args: dict[str, Any] = {}
        self.verbose = settings.verbose

    # -- streaming ---------------------------------------------------------

    async def _stream_once(self, user_input: Any, deferred: Any) -> Any:
        from pydantic_ai import AgentRunResultEvent
        from pydantic_ai.messages import (
            FunctionToolCallEvent,
            FunctionToolResultEvent,
            PartDeltaEvent,
            PartEndEvent,
            PartStartEvent,
            TextPart,
            TextPartDelta,
            ThinkingPart,
            ThinkingPartDelta,
        )

        result = None
        async with self.agent.run_stream_events(
            user_input,
            message_history=self.messages,
            deferred_tool_results=deferred,
            deps=self.deps,
            usage=self.usage,
            usage_limits=self.limits,
        ) as events:
            try:
                async for event in events:
                    if isinstance(event, PartStartEvent):
                        if isinstance(event.part, TextPart) and event.part.content:
                            self._text(event.part.content)
                        elif isinstance(event.part, ThinkingPart) and self.verbose:
                            self.frontend.on_thinking_delta(event.part.content)
                    elif isinstance(event, PartDeltaEvent):
                        delta = event.delta
                        if isinstance(delta, TextPartDelta):
                            self._text(delta.content_delta)
                        elif (
                            isinstance(delta, ThinkingPartDelta)
                            and self.verbose
                            and delta.content_delta
                        ):
                            self.frontend.on_thinking_delta(delta.content_delta)
                    elif isinstance(event, PartEndEvent):
                        if isinstance(event.part, TextPart):
                            self._commit_text()
                        elif isinstance(event.part, ThinkingPart) and self.verbose:
                            self.frontend.on_thinking_commit()
                    elif isinstance(event, FunctionToolCallEvent):
                        self._tool_call(event.part)
                    elif isinstance(event, FunctionToolResultEvent):
                        self._tool_result(event.part)
                    elif isinstance(event, AgentRunResultEvent):
                        result = event.result
            except asyncio.CancelledError:
                raise _Interrupted(self._partial_messages(events)) from None
        return result

    def _partial_messages(self, events: Any) -> list[ModelMessage]:
        try:
            return list(events.all_messages())
        except Exception:  # the run may not have started; fall back to what we had
            return list(self.messages)

    def _text(self, delta: str) -> None:
        if delta:
            self.pending_text += delta
            self.frontend.on_text_delta(delta)

    def _commit_text(self) -> None:
        if self.pending_text:
            self.text_parts.append(self.pending_text)
            self.pending_text = ""
        self.frontend.on_text_commit()

    def _tool_call(self, part: Any) -> None:
        if self.pending_text:
            self._commit_text()
        self.tool_started[part.tool_call_id] = time.monotonic()
        self.call_args[part.tool_call_id] = part.args
        if part.tool_call_id in self.shown_calls:
            return
        self.shown_calls.add(part.tool_call_id)
        self.frontend.on_tool_call(ToolCallView(part.tool_call_id, part.tool_name, part.args))

    def _audit(self, result: ToolResultView, args: Any) -> None:
        audit = self.deps.audit
        if audit is None:
            return
        from ..telemetry import AuditEvent, audit_target

        content = result.content
        size = (
            len(content)
            if isinstance(content, str)
            else len(str(content))
            if content is not None
            else 0
        )
        audit.record(
            AuditEvent(
                session_id=self.deps.session_id,
                turn=self.deps.turn_index,
                tool=result.name,
                target=audit_target(normalise_args(args)),
                decision=result.decision or "auto",
                status=result.status,
                result_size=size,
                duration_ms=result.duration * 1000 if result.duration is not None else None,
            )
        )

    def _tool_result(self, part: Any) -> None:
        started = self.tool_started.pop(part.tool_call_id, None)
        # Only calls that needed approval carry a decision; read-only tools have none.
        decision = self.decisions.get(part.tool_call_id)
        kind = getattr(part, "part_kind", "")
        status = "ok"
        if is_refusal(decision) or getattr(part, "outcome", None) == "denied":
            status = "denied"
        elif kind == "retry-prompt" or getattr(part, "outcome", "success") == "failed":
            status = "error"
        content = getattr(part, "content", None)
        if kind == "retry-prompt":
            content = part.model_response() if hasattr(part, "model_response") else content
        view = ToolResultView(
            part.tool_call_id,
            getattr(part, "tool_name", None) or "tool",
            content,
            status=status,
            # A refused call never ran: it has no duration to show.
            duration=(time.monotonic() - started) if started and status != "denied" else None,
            decision=decision,
        )
        self.frontend.on_tool_result(view)
        self._audit(view, self.call_args.pop(part.tool_call_id, None))

    # -- approvals ---------------------------------------------------------

    async def _decide(self, requests: Any) -> Any:
        """Answer one batch of deferred calls: yolo, safe prefix, or ask the person.

        Calls are decided in order, so "Approve all" on one call also covers the rest of
        the batch (``auto_decision`` sees ``deps.auto_confirm``).
        """
        from pydantic_ai import DeferredToolResults, ToolDenied

        results = DeferredToolResults()
        timeout = self.deps.settings.approval_timeout
        for call in requests.approvals:
            call_id = call.tool_call_id
            self.call_args[call_id] = call.args
            meta = requests.metadata.get(call_id, {})
            view = ToolCallView(call_id, call.tool_name, call.args, needs_approval=True)
            view.detail = meta.get("detail") if isinstance(meta, dict) else None
            self.shown_calls.add(call_id)
            label = auto_decision(call.tool_name, normalise_args(call.args), self.deps)
            if label is not None:
                view.decision = label
                self.frontend.on_tool_call(view)
            else:
                label = await self._ask(view, timeout)
            self.decisions[call_id] = label
            if is_refusal(label):
                results.approvals[call_id] = ToolDenied(denial_message(label, timeout))
            else:
                results.approvals[call_id] = True
        for call in requests.calls:
            # External calls are not used by Co's tools; never leave them dangling.
            results.calls[call.tool_call_id] = "This tool cannot run here."
        return results

    async def _ask(self, view: ToolCallView, timeout: float | None) -> str:
        try:
            choice = await self.frontend.prompt_approval(ApprovalRequest(view, timeout=timeout))
        except asyncio.CancelledError:
            self.decisions[view.call_id] = INTERRUPTED
            raise
        except Exception as exc:
            # A frontend that cannot ask (widgets or stdin broken) must not run the call.
            self.frontend.on_notice(
                f"Could not ask for approval of `{view.name}` ({type(exc).__name__}: {exc}); "
                "the call was denied.",
                "error",
            )
            choice = "deny"
        if choice == "approve_all":
            # Session yolo: the rest of this batch and of the session runs without asking.
            self.deps.auto_confirm = True
        return decision_label(choice)

    # -- the state machine -------------------------------------------------

    async def run(self) -> TurnResult:
        from pydantic_ai import DeferredToolRequests
        from pydantic_ai.exceptions import UsageLimitExceeded

        user_input: Any = self.prompt
        deferred = None
        attempts = 0
        reflected: set[str] = set()
        retries = self.deps.settings.model_http_retries
        while True:
            try:
                result = await self._stream_once(user_input, deferred)
                if result is None:  # pragma: no cover - the stream always ends with a result
                    return self._end(error="The model returned no result.")
                self.messages = list(result.all_messages())
                self.usage = result.usage
                if isinstance(result.output, DeferredToolRequests):
                    deferred = await self._decide(result.output)
                    user_input = None
                    continue
                self.frontend.clear_status()
                return self._end()
            except _Interrupted as stop:
                self.messages = self._salvage(stop.messages)
                return self._end(interrupted=True)
            except asyncio.CancelledError:
                # Interrupted outside a stream: while asking for approval or backing off.
                self.messages = self._salvage(self.messages)
                return self._end(interrupted=True)
            except UsageLimitExceeded as exc:
                self.frontend.clear_status()
                return self._end(
                    error=f"Stopped: this turn reached its budget ({exc}). "
                    "Raise `max_request_limit` or ask for a smaller step."
                )
            except Exception as exc:
                action = classify_provider_error(
                    exc, provider=self.provider, model=self.model_label
                )
                if action is None:
                    raise
                self._discard_partial_text()
                if action.kind is ProviderErrorKind.ABORT:
                    self.frontend.clear_status()
                    return self._end(error=action.message)
                if action.kind is ProviderErrorKind.REFLECT and action.body not in reflected:
                    reflected.add(action.body)
                    user_input, deferred = self._reflection(user_input, action.body), None
                    continue
                attempts += 1
                if action.kind is ProviderErrorKind.REFLECT or attempts > retries:
                    self.frontend.clear_status()
                    tried = f" after {attempts} attempt(s)" if attempts > 1 else ""
                    return self._end(error=f"{action.message}{tried}.")
                delay = backoff_delay(action, attempts)
                self.frontend.on_status(
                    f"{action.message}; retrying in {delay:.0f} s ({attempts}/{retries})…"
                )
                try:
                    await asyncio.sleep(delay)
                except asyncio.CancelledError:
                    self.messages = self._salvage(self.messages)
                    return self._end(interrupted=True)

    def _reflection(self, user_input: Any, body: str) -> Any:
        note = (
            f"[Co] The provider rejected the previous request with this error: {body}\n"
            "Correct the request (for example the tool arguments) and try again."
        )
        if isinstance(user_input, str):
            return f"{user_input}\n\n{note}"
        return note

    def _discard_partial_text(self) -> None:
        # A failed request's partial text is not part of the answer; a retry streams anew.
        self.pending_text = ""

    def _salvage(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """History after an interrupt: keep the partial answer, answer dangling calls."""
        from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

        messages = list(messages)
        if self.pending_text:
            self.text_parts.append(self.pending_text)
            if messages and isinstance(messages[-1], ModelRequest):
                messages.append(
                    ModelResponse(parts=[TextPart(self.pending_text + " [interrupted]")])
                )
            self.pending_text = ""
        if not any(
            isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
            for m in messages[len(self.history) :]
        ) and isinstance(self.prompt, str):
            # Interrupted before the run recorded the prompt: keep it so the next turn has context.
            messages.append(ModelRequest(parts=[UserPromptPart(self.prompt)]))
            messages.append(ModelResponse(parts=[TextPart("[interrupted before answering]")]))
        return patch_dangling_tool_calls(messages)

    def _end(self, *, interrupted: bool = False, error: str | None = None) -> TurnResult:
        if self.pending_text:
            self._commit_text()
        if error is not None:
            self.messages = patch_dangling_tool_calls(self.messages)
        return TurnResult(
            messages=self.messages,
            output="".join(self.text_parts),
            usage=self.usage,
            interrupted=interrupted,
            error=error,
            requests=self.usage.requests,
            decisions=dict(self.decisions),
        )


async def run_turn(
    agent: Agent[CoDeps, Any],
    prompt: str | Sequence[Any],
    *,
    deps: CoDeps,
    history: list[ModelMessage],
    frontend: FrontendProtocol,
    provider: str,
    model_label: str,
) -> TurnResult:
    """Run one user turn to its end; never raises for provider faults or interrupts."""
    started = time.monotonic()
    runner = _TurnRunner(
        agent,
        prompt,
        deps=deps,
        history=history,
        frontend=frontend,
        provider=provider,
        model_label=model_label,
    )
    result = await runner.run()
    usage = result.usage
    if result.error:
        frontend.on_notice(result.error, "error")
    frontend.on_turn_end(
        TurnSummary(
            model=model_label,
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0,
            requests=getattr(usage, "requests", 0) or 0,
            duration=time.monotonic() - started,
            interrupted=result.interrupted,
            error=result.error,
        )
    )
    return result
