"""Rate limits, so a looping agent cannot run up a bill: requests per hour per session and
tokens per turn.

Both are checked by a pydantic-ai capability in ``before_model_request``, so a request
that would break a limit is never sent. The tokens-per-turn check is pydantic-ai's own
``UsageLimits(total_tokens_limit=...)`` applied to the turn's usage, which every approval
resume and retry of the turn shares; requests per hour use a sliding window that lives
as long as the session, across model switches.

Budgets (``_budget.py``) are checked by the same capability, last: a request that could
pass a turn's, conversation's, day's or month's budget is not sent, and every request
sent is reserved in the spend store first and settled with what it used (``wrap_model_request``
around the request, so a failed or interrupted request releases its reservation).
"""

from __future__ import annotations

import contextvars
import dataclasses
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import AgentRunError, UsageLimitExceeded
from pydantic_ai.usage import UsageLimits

from ..exceptions import BudgetRefused, RunError

if TYPE_CHECKING:
    from ._budget import Budgets

__all__ = [
    "CoLimitExceeded",
    "RateLimits",
    "RequestWindow",
    "usage_limit_message",
]


class CoLimitExceeded(UsageLimitExceeded, RunError):
    """A limit Co sets (``max_requests_per_hour``, ``max_tokens_per_turn``) was reached.

    A ``UsageLimitExceeded`` so the turn ends the way any budget ends: what was done so far
    is kept and the message is shown as is.
    """

    def __init__(self, message: str, *, budget: bool = False) -> None:
        # Co's message says how to go on; pydantic-ai's would append a link to its docs.
        AgentRunError.__init__(self, message)
        self.budget = budget
        """A budget (``budget_*``) was reached: the whole turn stops, a subagent's too."""


class RequestWindow:
    """Times of the model requests of the last ``period`` seconds, for one session."""

    def __init__(
        self, limit: int, period: float = 3600.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.period = period
        self._clock = clock
        self._times: deque[float] = deque()

    def _expire(self, now: float) -> None:
        while self._times and now - self._times[0] >= self.period:
            self._times.popleft()

    def admit(self) -> float | None:
        """Record a request and return None, or return the seconds until one is allowed."""
        now = self._clock()
        self._expire(now)
        if len(self._times) >= self.limit:
            return self.period - (now - self._times[0])
        self._times.append(now)
        return None

    def used(self) -> int:
        """Requests made in the current window."""
        self._expire(self._clock())
        return len(self._times)


def _wait_text(seconds: float) -> str:
    minutes = int(seconds // 60) + (1 if seconds % 60 else 0)
    if minutes <= 1:
        return "about a minute"
    return f"about {minutes} minutes"


@dataclass
class _Reservation:
    """The spend-store row of the request in flight (0: none)."""

    row: int = 0


# Set by wrap_model_request around one request; before_model_request, which runs inside
# it, puts the reservation there for the wrap to settle or release.
_reservation: contextvars.ContextVar[_Reservation | None] = contextvars.ContextVar(
    "co_budget_reservation", default=None
)


@dataclass
class RateLimits(AbstractCapability[Any]):
    """Refuses a model request that would break the session's rate limits or budgets."""

    window: RequestWindow | None = None
    """The session's requests-per-hour window; None when unlimited."""
    max_tokens_per_turn: int | None = None
    """Tokens (input + output) one turn may use; None when unlimited."""
    on_refused: Callable[[str, str, Any], None] | None = field(default=None, repr=False)
    """Called with (limit name, message, deps) before the request is refused (audit log)."""
    budgets: Budgets | None = None
    """The session's budgets and spend store; None records and limits no spending."""

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        if self.budgets is None:
            return await handler(request_context)
        slot = _Reservation()
        token = _reservation.set(slot)
        try:
            response = await handler(request_context)
        except BaseException:
            if slot.row:
                self.budgets.release(slot.row)
            raise
        finally:
            _reservation.reset(token)
        if slot.row:
            self.budgets.settle(slot.row, ctx, response)
        return response

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        if self.max_tokens_per_turn is not None:
            try:
                UsageLimits(
                    request_limit=None, total_tokens_limit=self.max_tokens_per_turn
                ).check_before_request(ctx.usage)
            except UsageLimitExceeded:
                self._refuse(
                    ctx,
                    "max_tokens_per_turn",
                    f"Stopped: this turn has used {ctx.usage.total_tokens:,} tokens, more than "
                    f"its limit of {self.max_tokens_per_turn:,} (setting `max_tokens_per_turn`). "
                    "What was done so far is kept; ask Co to continue in the next cell.",
                )
        if self.window is not None:
            wait = self.window.admit()
            if wait is not None:
                self._refuse(
                    ctx,
                    "max_requests_per_hour",
                    f"Stopped: this session has made {self.window.limit} model requests in the "
                    f"last hour, its limit (setting `max_requests_per_hour`). The next request "
                    f"is allowed in {_wait_text(wait)}; nothing was sent.",
                )
        if self.budgets is not None:
            request_context = self._admit(ctx, request_context)
        return request_context

    def _admit(self, ctx: Any, request_context: Any) -> Any:
        """Reserve the request against the budgets, or refuse it."""
        assert self.budgets is not None
        model_settings = request_context.model_settings
        cap = self.budgets.output_cap(ctx.deps.settings, model_settings)
        if cap is not None and not (model_settings or {}).get("max_tokens"):
            # Sent as the request's max_tokens, so the estimate is a bound, not a guess.
            request_context = dataclasses.replace(
                request_context, model_settings={**(model_settings or {}), "max_tokens": cap}
            )
        try:
            row = self.budgets.admit(
                ctx, request_context.messages, request_context.model_request_parameters, cap
            )
        except BudgetRefused as refused:
            self._refuse(ctx, refused.setting, str(refused), budget=True)
        slot = _reservation.get()
        if slot is not None:
            slot.row = row
        elif row:  # no wrap around this request: release it rather than hold it an hour
            self.budgets.release(row)
        return request_context

    def _refuse(self, ctx: Any, limit: str, message: str, *, budget: bool = False) -> NoReturn:
        if self.on_refused is not None:
            self.on_refused(limit, message, ctx.deps)
        raise CoLimitExceeded(message, budget=budget)


def usage_limit_message(exc: BaseException, settings: Any) -> str:
    """What the cell says when a turn hits a limit: Co's own, or pydantic-ai's request limit."""
    if isinstance(exc, CoLimitExceeded):
        return str(exc)
    limit = getattr(settings, "max_request_limit", None)
    return (
        f"Stopped: this turn used its budget of {limit} model requests "
        "(setting `max_request_limit`). What was done so far is kept; "
        "ask Co to continue in the next cell."
    )
