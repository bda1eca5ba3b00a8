"""run_turn: one user turn as a state machine (seed 001 "Orchestration State Machine").

Streaming, approval chaining (a ``while``: a resumed run may ask again), provider-error
retries with one usage budget shared by every resume and retry, and interrupt recovery
that leaves a valid history behind.

Whatever happens, the history a turn returns is one the next turn can send: every tool
call has a return, and a turn that produced nothing but a failed request leaves the
history as it found it. A retry continues from the failed request (the tools that already
ran are not run again); a 400 is answered by showing the model the error once.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from ..models import ErrorAction, ProviderErrorKind, backoff_delay, classify_provider_error
from ..permissions import (
    INTERRUPTED,
    auto_decision,
    decision_label,
    denial_message,
    is_refusal,
    normalise_args,
    record_decision,
    replayed_decision,
)
from ._frontend import (
    ApprovalRequest,
    FrontendProtocol,
    TodoView,
    ToolCallView,
    ToolResultView,
    TurnSummary,
)

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.usage import RunUsage, UsageLimits

    from ..deps import CoDeps

__all__ = [
    "INTERRUPTED_TOOL_RETURN",
    "TurnResult",
    "TurnScope",
    "current_turn",
    "patch_dangling_tool_calls",
    "run_turn",
]

INTERRUPTED_TOOL_RETURN = "Interrupted by user."
INTERRUPTED_MARK = "[interrupted]"
"""Appended to a partial answer kept in the history, so the model knows it was cut."""

log = logging.getLogger(__name__)


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


@dataclass
class TurnScope:
    """What a tool may reach of the turn that called it (``current_turn()``, while it runs)."""

    frontend: FrontendProtocol
    """Where the turn is shown; a subagent's progress and approvals go through it."""
    provider: str
    """The provider of the turn's model, for classifying a subagent's provider errors."""
    model_label: str
    """provider:model of the turn."""
    capabilities: Callable[[], Sequence[AbstractCapability[Any]]] | None = None
    """Fresh copies of the session's telemetry capabilities (tracing, rate limits), so a
    subagent's requests are traced and counted like the turn's."""


# The turn a tool call runs in. A context variable, not a CoDeps field: it belongs to
# the running task (a subagent's run sets its own inside the tool call that started
# it), and the deps that tools receive stay free of the turn machinery above them.
_current_turn: contextvars.ContextVar[TurnScope | None] = contextvars.ContextVar(
    "co_current_turn", default=None
)


def current_turn() -> TurnScope | None:
    """The turn whose tool call is running; None for a tool called outside ``run_turn``."""
    return _current_turn.get()


class _Interrupted(Exception):
    """Carries the partial state of a stream out of its context manager."""

    def __init__(self, messages: list[ModelMessage]) -> None:
        self.messages = messages


def patch_dangling_tool_calls(
    messages: list[ModelMessage], content: str = INTERRUPTED_TOOL_RETURN
) -> list[ModelMessage]:
    """Answer every unanswered tool call with a synthetic return (seed 002 7.5)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

    answered: set[str] = set()
    for msg in messages:
        if isinstance(msg, ModelRequest):
            for part in msg.parts:
                call_id = getattr(part, "tool_call_id", None)
                if call_id is not None and part.part_kind in ("tool-return", "retry-prompt"):
                    answered.add(call_id)
    patched = list(messages)
    for i, msg in enumerate(messages):
        if not isinstance(msg, ModelResponse):
            continue
        dangling = [
            p for p in msg.parts if isinstance(p, ToolCallPart) and p.tool_call_id not in answered
        ]
        if dangling:
            returns = [
                ToolReturnPart(p.tool_name, content, tool_call_id=p.tool_call_id) for p in dangling
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


def _tidy(messages: list[ModelMessage]) -> list[ModelMessage]:
    """A run's live messages without the traces of a request that never completed.

    pydantic-ai records a failed or cancelled request as a trailing ``interrupted``
    response (empty, or holding the partial text and half-streamed tool calls) and a tool
    that blew up as an empty request; neither is something to send again.
    """
    from pydantic_ai.messages import ModelRequest, ModelResponse

    tidy = [m for m in messages if not (isinstance(m, ModelRequest) and not m.parts)]
    while tidy and isinstance(tidy[-1], ModelResponse) and tidy[-1].state == "interrupted":
        tidy.pop()
    return tidy


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
        usage: RunUsage | None = None,
        limits: UsageLimits | None = None,
        child: bool = False,
        capabilities: Callable[[], Sequence[AbstractCapability[Any]]] | None = None,
        subagent: str | None = None,
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
        # One budget for the whole turn: the first run, every approval resume and every
        # retry share this limit and this usage, so N approval hops never get N budgets.
        # A subagent's run is given its caller's live usage and limits: it spends the budget
        # of the turn that delegated to it.
        self.limits = limits or UsageLimits(request_limit=settings.max_request_limit)
        self.usage = usage if usage is not None else RunUsage()
        self.child = child
        self.capabilities = capabilities
        """A subagent's run inside a tool call: an interrupt is re-raised by its caller."""
        self.subagent = subagent
        """The subagent's name when this run is one: its audit rows say whose calls they were."""
        self.todos_seen = [dict(t) for t in deps.todos]
        """The checklist as last shown; a tool that changes it is followed by ``on_todos``."""
        self.messages: list[ModelMessage] = list(history)
        self.partial: list[ModelMessage] | None = None
        """The live messages of the run that just failed, when it got that far."""
        self.text_parts: list[str] = []
        """Text of the responses that made it into the history: the answer."""
        self.response_text = ""
        """Text of the response being streamed; confirmed or dropped when it ends."""
        self.pending_text = ""
        self.tool_started: dict[str, float] = {}
        self.decisions: dict[str, str] = {}
        self.shown_calls: set[str] = set()
        self.call_args: dict[str, Any] = {}
        self.verbose = settings.verbose
        self.retries_used = 0
        self.reflected: set[str] = set()
        self.status_shown = False

    # -- streaming ---------------------------------------------------------

    async def _stream_once(self, user_input: Any, deferred: Any) -> Any:
        from pydantic_ai import AgentRunResultEvent

        from ..models import RequireFinish

        result = None
        async with self.agent.run_stream_events(
            user_input,
            message_history=self.messages,
            deferred_tool_results=deferred,
            deps=self.deps,
            usage=self.usage,
            usage_limits=self.limits,
            capabilities=[RequireFinish()],
        ) as events:
            try:
                async for event in events:
                    if self.status_shown:
                        # The model answers again: the retry note has done its job.
                        self.frontend.clear_status()
                        self.status_shown = False
                    if isinstance(event, AgentRunResultEvent):
                        result = event.result
                    else:
                        self._on_event(event)
            except asyncio.CancelledError:
                raise _Interrupted(self._partial_messages(events)) from None
            except Exception:
                self.partial = self._partial_messages(events)
                raise
        return result

    def _on_event(self, event: Any) -> None:
        m = _messages()
        # The common case first: this runs for every piece of every streamed answer.
        if isinstance(event, m.PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, m.TextPartDelta):
                self._text(delta.content_delta)
            elif isinstance(delta, m.ThinkingPartDelta) and self.verbose and delta.content_delta:
                self.frontend.on_thinking_delta(delta.content_delta)
        elif isinstance(event, m.PartStartEvent):
            if isinstance(event.part, m.TextPart) and event.part.content:
                self._text(event.part.content)
            elif isinstance(event.part, m.ThinkingPart) and self.verbose:
                self.frontend.on_thinking_delta(event.part.content)
        elif isinstance(event, m.PartEndEvent):
            if isinstance(event.part, m.TextPart):
                self._commit_text()
            elif isinstance(event.part, m.ThinkingPart) and self.verbose:
                self.frontend.on_thinking_commit()
        elif isinstance(event, m.FunctionToolCallEvent):
            self._confirm_response()
            self._tool_call(event.part)
        elif isinstance(event, m.FunctionToolResultEvent):
            self._tool_result(event.part)

    def _partial_messages(self, events: Any) -> list[ModelMessage]:
        try:
            return list(events.all_messages())
        except Exception:  # the run may not have started; fall back to what we had
            return list(self.messages)

    def _text(self, delta: str) -> None:
        if delta:
            self.pending_text += delta
            self.response_text += delta
            self.frontend.on_text_delta(delta)

    def _commit_text(self) -> None:
        self.pending_text = ""
        self.frontend.on_text_commit()

    def _confirm_response(self) -> None:
        """The streamed response is in the history now: its text is part of the answer."""
        if self.response_text:
            self.text_parts.append(self.response_text)
        self.response_text = ""

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
                agent=self.subagent,
            )
        )

    def _tool_result(self, part: Any) -> None:
        started = self.tool_started.pop(part.tool_call_id, None)
        # Only calls that needed approval carry a decision; read-only tools have none.
        decision = self.decisions.get(part.tool_call_id)
        kind = getattr(part, "part_kind", "")
        status: Literal["ok", "error", "denied", "interrupted"] = "ok"
        if is_refusal(decision) or getattr(part, "outcome", None) == "denied":
            status = "denied"
        elif kind == "retry-prompt" or getattr(part, "outcome", "success") in ("failed", "retried"):
            status = "error"
        content = getattr(part, "content", None)
        if kind == "retry-prompt":
            content = part.model_response() if hasattr(part, "model_response") else content
        elif isinstance(content, dict) and content.get("error") is True:
            status = "error"  # a terminal tool error (tools/_errors.py)
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
        self._check_todos()

    def _check_todos(self) -> None:
        current = [dict(t) for t in self.deps.todos]
        if current != self.todos_seen:
            self.todos_seen = current
            self.frontend.on_todos(
                [TodoView(str(t.get("content", "")), t.get("status", "pending")) for t in current]
            )

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
            label = auto_decision(
                call.tool_name, normalise_args(call.args), self.deps
            ) or replayed_decision(call_id, call.tool_name, call.args, self.deps)
            if label is not None:
                view.decision = label
                self.frontend.on_tool_call(view)
            else:
                label = await self._ask(view, timeout)
                headless = getattr(self.frontend, "kind", "") == "headless"
                record_decision(call_id, label, self.deps, by_policy=headless)
            self.decisions[call_id] = label
            if is_refusal(label):
                # A headless run's policy answered: the model must not think the user did.
                headless = getattr(self.frontend, "kind", "") == "headless"
                policy = self.deps.settings.approval_mode if headless else None
                results.approvals[call_id] = ToolDenied(
                    denial_message(label, timeout, policy=policy)
                )
            else:
                results.approvals[call_id] = True
        for call in requests.calls:
            # External calls are not used by Co's tools; never leave them dangling.
            results.calls[call.tool_call_id] = "This tool cannot run here."
        return results

    async def _ask(self, view: ToolCallView, timeout: float | None) -> str:
        from ..config import PermissionRule
        from ..permissions import narrowest_rule

        rule = narrowest_rule(view.name, normalise_args(view.args), self.deps.workspace)
        try:
            choice = await self.frontend.prompt_approval(
                ApprovalRequest(view, timeout=timeout, rule=rule)
            )
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
        elif choice == "always_allow":
            self.deps.session_rules.append(
                PermissionRule(kind="allow", rule=rule, source="session")
            )
        return decision_label(choice)

    # -- the state machine -------------------------------------------------

    async def run(self) -> TurnResult:
        token = _current_turn.set(
            TurnScope(self.frontend, self.provider, self.model_label, self.capabilities)
        )
        try:
            return await self._run()
        finally:
            _current_turn.reset(token)

    async def _run(self) -> TurnResult:
        from pydantic_ai import DeferredToolRequests

        user_input: Any = self.prompt
        deferred = None
        while True:
            self.partial = None
            try:
                result = await self._stream_once(user_input, deferred)
            except _Interrupted as stop:
                return self._interrupted(stop.messages)
            except asyncio.CancelledError:
                return self._interrupted(self.partial or self.messages)
            except Exception as exc:
                try:
                    outcome = await self._recover(exc, user_input, deferred)
                except asyncio.CancelledError:  # interrupted during the backoff sleep
                    return self._interrupted(self.messages)
                if isinstance(outcome, TurnResult):
                    return outcome
                user_input, deferred = outcome
                continue
            if result is None:  # pragma: no cover - the stream always ends with a result
                return self._stop("The model returned no result.", None)
            self.messages = list(result.all_messages())
            self.usage = result.usage
            self._confirm_response()
            if isinstance(result.output, DeferredToolRequests):
                try:
                    deferred = await self._decide(result.output)
                except asyncio.CancelledError:  # interrupted while waiting for a decision
                    tools = ", ".join(dict.fromkeys(c.tool_name for c in result.output.approvals))
                    waiting = (
                        f"{INTERRUPTED_TOOL_RETURN} It was interrupted while waiting for "
                        f"approval of {tools}."
                    )
                    return self._interrupted(self.messages, waiting)
                user_input = None
                continue
            return self._end()

    async def _recover(
        self, exc: Exception, user_input: Any, deferred: Any
    ) -> TurnResult | tuple[Any, Any]:
        """End the turn, or return the (input, deferred results) of the retry."""
        from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded

        resume = _tidy(self.partial) if self.partial is not None else None
        self._drop_response()
        if isinstance(exc, UsageLimitExceeded):
            # The request budget, or a rate limit of seed 003 (telemetry's RateLimits).
            from ..telemetry import usage_limit_message

            return self._stop(usage_limit_message(exc, self.deps.settings), resume)
        if isinstance(exc, UnexpectedModelBehavior):
            # Tool calls that stayed invalid after `tool_retries` corrections, an empty or
            # unusable reply: the model's mistake, reported as such.
            return self._stop(_unusable_reply(exc.message), resume)
        action = classify_provider_error(exc, provider=self.provider, model=self.model_label)
        if action is None:
            log.debug("turn failed", exc_info=exc)
            return self._stop(
                f"The turn stopped on an unexpected error: {type(exc).__name__}: {exc}", resume
            )
        if action.kind is ProviderErrorKind.ABORT:
            return self._stop(f"{action.message}.", resume)
        settings = self.deps.settings
        allowed = settings.model_http_retries
        attempts = self.retries_used + 1
        if action.kind is ProviderErrorKind.REFLECT and action.body in self.reflected:
            return self._stop(f"{action.message}. The model could not correct it.", resume)
        if self.retries_used >= allowed:
            plural = "s" if attempts != 1 else ""
            tried = f" (gave up after {attempts} attempt{plural}; setting `model_http_retries`)"
            return self._stop(f"{action.message}{tried}.", resume)
        self.retries_used += 1
        if resume is not None and resume and _ends_with_request(resume):
            # Continue from the failed request: what already ran does not run again.
            self.messages, user_input, deferred = resume, None, None
        if action.kind is ProviderErrorKind.REFLECT:
            self.reflected.add(action.body)
            self._status(
                f"{action.message}; asking the model to correct it (retry {attempts} of {allowed})…"
            )
            return self._reflection(user_input, action)
        delay = backoff_delay(
            action,
            self.retries_used,
            base=settings.model_backoff_base,
            cap=settings.model_backoff_cap,
        )
        self._status(f"{action.message}; retry {attempts} of {allowed} in {_seconds(delay)}…")
        await asyncio.sleep(delay)
        return user_input, deferred

    def _status(self, message: str) -> None:
        self.frontend.on_status(message)
        self.status_shown = True

    def _reflection(self, user_input: Any, action: ErrorAction) -> tuple[Any, Any]:
        """Show the model the provider's complaint so its next request can avoid it."""
        from dataclasses import replace

        from pydantic_ai.messages import ModelRequest, UserPromptPart

        note = (
            f"[Co] The provider rejected the previous request (HTTP {action.status or 400}) "
            f"with this error: {action.body}\n"
            "Correct what caused it (for example the tool arguments) and try again."
        )
        if user_input is None and self.messages and isinstance(self.messages[-1], ModelRequest):
            last = self.messages[-1]
            self.messages = [
                *self.messages[:-1],
                replace(last, parts=[*last.parts, UserPromptPart(note)]),
            ]
            return None, None
        if isinstance(user_input, str):
            return f"{user_input}\n\n{note}", None
        return note, None

    def _drop_response(self) -> None:
        """A failed request's partial text is not part of the answer; a retry streams anew."""
        if self.response_text.strip():
            self.frontend.on_text_commit()
            self.frontend.on_notice(
                "*The answer above was cut off; it is not kept in the conversation.*", "warning"
            )
        self.response_text = self.pending_text = ""

    # -- endings -----------------------------------------------------------

    def _stop(self, message: str, resume: list[ModelMessage] | None) -> TurnResult:
        """End the turn early with ``message``, keeping whatever completed."""
        from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart

        messages = resume if resume is not None else _tidy(self.messages)
        new = messages[len(self.history) :]
        if not any(isinstance(m, ModelResponse) for m in new):
            # Nothing came back: leave the conversation as it was, the cell can simply run again.
            messages = list(self.history)
        else:
            messages = self._answer_dangling(messages, f"Not run: {message}", "error")
            if isinstance(messages[-1], ModelRequest):
                messages.append(
                    ModelResponse(parts=[TextPart(f"[Co stopped this turn] {message}")])
                )
        self.messages = messages
        return self._end(error=message)

    def _interrupted(
        self, messages: list[ModelMessage], dangling: str = INTERRUPTED_TOOL_RETURN
    ) -> TurnResult:
        """History after an interrupt: keep the partial answer, answer dangling calls
        (with ``dangling``: what they were doing when it came)."""
        from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

        task = asyncio.current_task()
        if task is not None and not self.child:
            # The cancellation is handled here; later awaits of this cell must not see it.
            # (A subagent's caller re-raises it instead: the turn around it must stop too.)
            task.uncancel()
        messages = _tidy(messages)
        if not any(
            isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
            for m in messages[len(self.history) :]
        ) and isinstance(self.prompt, str):
            # Interrupted before the run recorded the prompt: keep it so the next turn has context.
            messages.append(ModelRequest(parts=[UserPromptPart(self.prompt)]))
        partial = self.response_text
        if messages and isinstance(messages[-1], ModelRequest):
            if partial.strip():
                messages.append(ModelResponse(parts=[TextPart(f"{partial} {INTERRUPTED_MARK}")]))
            elif any(isinstance(p, UserPromptPart) for p in messages[-1].parts):
                messages.append(
                    ModelResponse(parts=[TextPart(f"{INTERRUPTED_MARK} (before answering)")])
                )
        if partial:
            self.text_parts.append(partial)
        self.response_text = self.pending_text = ""
        self.messages = self._answer_dangling(messages, dangling, "interrupted")
        return self._end(interrupted=True)

    def _answer_dangling(
        self, messages: list[ModelMessage], content: str, status: Literal["error", "interrupted"]
    ) -> list[ModelMessage]:
        """Patch the unanswered calls and close their cards (and audit rows) with ``status``."""
        patched = patch_dangling_tool_calls(messages, content)
        before = _returned_ids(messages)
        for call_id, name in _returned_ids(patched).items():
            if call_id in before:
                continue
            self.tool_started.pop(call_id, None)
            view = ToolResultView(
                call_id, name, content, status=status, decision=self.decisions.get(call_id)
            )
            if call_id in self.shown_calls:
                self.frontend.on_tool_result(view)
            self._audit(view, self.call_args.pop(call_id, None))
        return patched

    def _end(self, *, interrupted: bool = False, error: str | None = None) -> TurnResult:
        if self.pending_text:
            self._commit_text()
        if self.status_shown:
            self.frontend.clear_status()
            self.status_shown = False
        if error is None and not interrupted:
            self._confirm_response()
        return TurnResult(
            messages=self.messages,
            output="".join(self.text_parts),
            usage=self.usage,
            interrupted=interrupted,
            error=error,
            requests=self.usage.requests,
            decisions=dict(self.decisions),
        )


@functools.cache
def _messages() -> ModuleType:
    """pydantic-ai's message types, imported on first use (the kernel starts without them)."""
    import pydantic_ai.messages

    return pydantic_ai.messages


def _unusable_reply(detail: str) -> str:
    """The person's version of pydantic-ai's UnexpectedModelBehavior message."""
    exceeded = re.match(r"Tool '([^']+)' exceeded max retries count of (\d+)", detail)
    if exceeded:
        name, count = exceeded.groups()
        detail = f"its calls to `{name}` were still invalid after {count} corrections (setting `tool_retries`)"
    return f"The model's reply could not be used: {detail.rstrip('.')}. The turn stopped; ask again or rephrase."


def _returned_ids(messages: list[ModelMessage]) -> dict[str, str]:
    """tool_call_id -> tool name of every tool return in ``messages``."""
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    return {
        p.tool_call_id: p.tool_name
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    }


def _ends_with_request(messages: list[ModelMessage]) -> bool:
    from pydantic_ai.messages import ModelRequest

    return bool(messages) and isinstance(messages[-1], ModelRequest)


def _seconds(delay: float) -> str:
    return f"{delay:.0f} s" if delay >= 10 or delay == int(delay) else f"{delay:.2g} s"


async def run_turn(
    agent: Agent[CoDeps, Any],
    prompt: str | Sequence[Any],
    *,
    deps: CoDeps,
    history: list[ModelMessage],
    frontend: FrontendProtocol,
    provider: str,
    model_label: str,
    capabilities: Callable[[], Sequence[AbstractCapability[Any]]] | None = None,
) -> TurnResult:
    """Run one user turn to its end; never raises for provider faults, tool errors or interrupts.

    ``capabilities`` makes the session's telemetry capabilities for subagents' agents.
    """
    from ..permissions import project_rules_notice

    started = time.monotonic()
    notice = project_rules_notice(deps, headless=getattr(frontend, "kind", "") == "headless")
    if notice:
        frontend.on_notice(notice, "warning")
    runner = _TurnRunner(
        agent,
        prompt,
        deps=deps,
        history=history,
        frontend=frontend,
        provider=provider,
        model_label=model_label,
        capabilities=capabilities,
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
