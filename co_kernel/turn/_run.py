"""run_turn: one user turn as a state machine.

Streaming, approval chaining (a ``while``: a resumed run may ask again), provider-error
retries with one usage budget shared by every resume and retry, and interrupt recovery
that leaves a valid history behind.

Whatever happens, the history a turn returns is one the next turn can send: every tool
call has a return, and a turn that produced nothing but a failed request leaves the
history as it found it. A retry continues from the failed request (the tools that already
ran are not run again); a 400 is answered by showing the model the error once.
What the turn shows is ``_events.py``, the approval batch ``_approval_batch.py`` and the
history repair ``_repair.py``.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..exceptions import PageReplayMismatch
from ..inert import inert_code, inert_text
from ..models import ErrorAction, ProviderErrorKind, backoff_delay, classify_provider_error
from ..telemetry import CostSum
from ._approval_batch import decide_batch
from ._costs import SubagentSpend, own_usage, priced
from ._events import TurnEvents
from ._frontend import FrontendProtocol, TurnSummary
from ._repair import (
    INTERRUPTED_TOOL_RETURN,
    answered_since,
    ends_with_request,
    interrupted_history,
    tidy,
    with_stop_note,
)

if TYPE_CHECKING:
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage, UserContent
    from pydantic_ai.usage import RunUsage, UsageLimits

    from ..session_state import CoDeps

__all__ = ["TurnResult", "TurnScope", "current_turn", "run_turn"]

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
    decisions: dict[str, str] = field(default_factory=dict[str, str])
    """How each side-effectful call was decided, by tool call id."""
    cost: CostSum = field(default_factory=CostSum)
    """What the turn's tokens cost, its subagents' included."""
    subagents: list[SubagentSpend] = field(default_factory=list[SubagentSpend])
    """Each subagent run's own tokens and cost, in the order they ended."""


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
    spend: list[SubagentSpend] = field(default_factory=list[SubagentSpend])
    """The subagent runs of the turn so far (nested ones too), priced by their models."""


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


class TurnRunner:
    """State of one turn; run() is the state machine."""

    def __init__(
        self,
        agent: Agent[CoDeps, str | DeferredToolRequests],
        prompt: str | Sequence[UserContent],
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
        spend: list[SubagentSpend] | None = None,
    ) -> None:
        from pydantic_ai.usage import RunUsage, UsageLimits

        settings = deps.settings
        self.agent = agent
        self.prompt = prompt
        self.deps = deps
        # What prices this run's requests (a subagent's deps are its own copy).
        deps.model_label = model_label
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
        """A subagent's run inside a tool call: an interrupt is re-raised by its caller."""
        self.capabilities = capabilities
        self.spend: list[SubagentSpend] = spend if spend is not None else []
        """Subagent runs priced so far: a subagent's run adds to its caller's list."""
        self.events = TurnEvents(frontend, deps, subagent=subagent)
        """What the turn shows, and the answer it streamed."""
        self.messages: list[ModelMessage] = list(history)
        self.partial: list[ModelMessage] | None = None
        """The live messages of the run that just failed, when it got that far."""
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
                        self.events.on_event(event)
            except asyncio.CancelledError:
                raise _Interrupted(self._partial_messages(events)) from None
            except Exception:
                self.partial = self._partial_messages(events)
                raise
        return result

    def _partial_messages(self, events: Any) -> list[ModelMessage]:
        try:
            return list(events.all_messages())
        except Exception:  # the run may not have started; fall back to what we had
            return list(self.messages)

    # -- the state machine -------------------------------------------------

    async def run(self) -> TurnResult:
        token = _current_turn.set(
            TurnScope(self.frontend, self.provider, self.model_label, self.capabilities, self.spend)
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
            self.events.confirm_response()
            if isinstance(result.output, DeferredToolRequests):
                try:
                    deferred = await decide_batch(result.output, self.events)
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

        resume = tidy(self.partial) if self.partial is not None else None
        self.events.drop_response()
        if isinstance(exc, PageReplayMismatch):  # a replayed notebook edit differs: say where
            return self._stop(str(exc), resume)
        if isinstance(exc, UsageLimitExceeded):
            # The request budget, or one of telemetry's RateLimits.
            from ..telemetry import usage_limit_message

            if self.child and getattr(exc, "budget", False):
                # A budget: the turn stops, not just this subagent (its caller's tool call
                # raises it on, cancelling the calls beside it: a card waiting is closed).
                raise exc

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
        if resume is not None and resume and ends_with_request(resume):
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

    # -- endings -----------------------------------------------------------

    def _stop(self, message: str, resume: list[ModelMessage] | None) -> TurnResult:
        """End the turn early with ``message``, keeping whatever completed."""
        messages = resume if resume is not None else tidy(self.messages)
        if not answered_since(messages, len(self.history)):
            # Nothing came back: leave the conversation as it was, the cell can simply run again.
            messages = list(self.history)
        else:
            messages = self.events.answer_dangling(messages, f"Not run: {message}", "error")
            messages = with_stop_note(messages, message)
        self.messages = messages
        return self._end(error=message)

    def _interrupted(
        self, messages: list[ModelMessage], dangling: str = INTERRUPTED_TOOL_RETURN
    ) -> TurnResult:
        """History after an interrupt: keep the partial answer, answer dangling calls
        (with ``dangling``: what they were doing when it came)."""
        task = asyncio.current_task()
        if task is not None and not self.child:
            # The cancellation is handled here; later awaits of this cell must not see it.
            # (A subagent's caller re-raises it instead: the turn around it must stop too.)
            task.uncancel()
        messages = interrupted_history(
            messages, self.history, self.prompt, self.events.response_text
        )
        self.events.keep_partial()
        self.messages = self.events.answer_dangling(messages, dangling, "interrupted")
        return self._end(interrupted=True)

    def _end(self, *, interrupted: bool = False, error: str | None = None) -> TurnResult:
        events = self.events
        if events.pending_text:
            events.commit_text()
        if self.status_shown:
            self.frontend.clear_status()
            self.status_shown = False
        if error is None and not interrupted:
            events.confirm_response()
        return TurnResult(
            messages=self.messages,
            output="".join(events.text_parts),
            usage=self.usage,
            interrupted=interrupted,
            error=error,
            requests=self.usage.requests,
            decisions=dict(events.decisions),
        )


def _unusable_reply(detail: str) -> str:
    """The person's version of pydantic-ai's UnexpectedModelBehavior message."""
    exceeded = re.match(r"Tool '([^']+)' exceeded max retries count of (\d+)", detail)
    if exceeded:
        name, count = exceeded.groups()
        detail = f"its calls to {inert_code(name)} were still invalid after {count} corrections (setting `tool_retries`)"
    else:
        detail = inert_text(detail)
    return f"The model's reply could not be used: {detail.rstrip('.')}. The turn stopped; ask again or rephrase."


def _seconds(delay: float) -> str:
    return f"{delay:.0f} s" if delay >= 10 or delay == int(delay) else f"{delay:.2g} s"


async def run_turn(
    agent: Agent[CoDeps, str | DeferredToolRequests],
    prompt: str | Sequence[UserContent],
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
    runner = TurnRunner(
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
    if usage is not None:
        result.subagents = list(runner.spend)
        result.cost = priced(own_usage(usage, result.subagents), model_label, deps.settings)
        for spent in result.subagents:
            result.cost += spent.cost
    if result.error:
        frontend.on_notice(result.error, "error")
    frontend.on_turn_end(
        TurnSummary(
            model=model_label,
            cost=result.cost,
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0,
            requests=getattr(usage, "requests", 0) or 0,
            duration=time.monotonic() - started,
            interrupted=result.interrupted,
            error=result.error,
        )
    )
    return result
