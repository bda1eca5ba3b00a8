"""Budgets: what a turn, a conversation, a day and a month may cost, checked per request.

``RateLimits`` (``_limits.py``) asks ``Budgets.admit`` before each model request: what the
request can cost is its input tokens (what the provider counted for the last answer, plus
an estimate of what was added since; the whole prompt estimated when nothing was counted
yet) and its output cap (``max_tokens``: ``max_output_tokens``, 4,096 when unset, sent with
the request so the estimate is a bound). If that would pass a budget, the request is not
sent. Otherwise it is reserved in the spend store (``_spend.py``) in the same transaction
as the check, and settled with what the provider counted once it answers.

Money budgets count the requests of priced models (genai-prices, or the person's own
prices); token budgets count every request, so a local or unpriced model has a budget too.
Budgets are read from the settings at each request: ``%budget`` changes them at once.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..exceptions import BudgetRefused, DatabaseTooNew
from ..inert import inert_code, inert_text
from ._spend import SpendStore, Spent, current_person, period_keys

if TYPE_CHECKING:
    from ._metrics import SpendMetrics

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "PERIODS",
    "WARN_AT",
    "BudgetLimit",
    "Budgets",
    "RequestEstimate",
    "budget_limits",
    "estimate_input_tokens",
]

log = logging.getLogger(__name__)

DEFAULT_OUTPUT_CAP = 4096
"""The output cap a request is sent with under a budget when ``max_output_tokens`` is unset."""
PERIODS = ("turn", "conversation", "day", "month")
WARN_AT = 0.8
"""Share of a day's or month's budget at which Co warns, once per period."""
_CHARS_PER_TOKEN = 4
_IMAGE_CHARS = 4000
"""What a picture or file in a prompt is counted as when estimating (about 1,000 tokens)."""


@dataclass(frozen=True)
class BudgetLimit:
    """One budget in force."""

    setting: str
    """Its setting, ``budget_day`` or ``budget_day_tokens``."""
    period: str
    """turn, conversation, day or month."""
    tokens: bool
    """Counted in tokens (else US dollars)."""
    limit: float
    """The budget."""
    origin: str
    """The layer that set it (``managed (<path>)``, ``user (<path>)``, ``environment (…)``)."""

    @property
    def managed(self) -> bool:
        return self.origin.startswith("managed")


def budget_limits(settings: Any, origins: dict[str, str]) -> list[BudgetLimit]:
    """The budgets the settings set, turn first."""
    found: list[BudgetLimit] = []
    for period in PERIODS:
        for tokens in (False, True):
            setting = f"budget_{period}{'_tokens' if tokens else ''}"
            value = getattr(settings, setting, None)
            if value is not None:
                origin = origins.get(setting, "default")
                found.append(BudgetLimit(setting, period, tokens, float(value), origin))
    return found


@dataclass(frozen=True)
class RequestEstimate:
    """What one request can use at most."""

    input_tokens: int
    output_tokens: int
    cost: float | None
    """US dollars at most; None when the model has no price."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list | tuple):
        return sum(len(item) if isinstance(item, str) else _IMAGE_CHARS for item in content)  # pyright: ignore[reportUnknownVariableType]
    try:
        return len(json.dumps(content, default=str))
    except (TypeError, ValueError):
        return len(str(content))


def _message_chars(message: Any) -> int:
    chars = 0
    for part in getattr(message, "parts", ()):
        content = getattr(part, "content", None)
        if content is not None:
            chars += _content_chars(content)
        args = getattr(part, "args", None)
        if args is not None:
            chars += _content_chars(args) + len(getattr(part, "tool_name", ""))
    return chars


_tool_chars_memo: dict[tuple[str, ...], int] = {}


def _tools_chars(params: Any) -> int:
    tools = list(getattr(params, "function_tools", None) or ())
    tools += list(getattr(params, "output_tools", None) or ())
    key = tuple(t.name for t in tools)
    chars = _tool_chars_memo.get(key)
    if chars is None:
        chars = sum(
            len(t.name) + len(t.description or "") + len(json.dumps(t.parameters_json_schema))
            for t in tools
        )
        if len(_tool_chars_memo) < 256:
            _tool_chars_memo[key] = chars
    return chars


def estimate_input_tokens(messages: Sequence[Any], params: Any = None) -> int:
    """The prompt's tokens: the last answer's counted prompt and answer, plus an estimate
    (4 characters a token) of the messages after it; all estimated when none was counted."""
    from pydantic_ai.messages import ModelResponse

    chars = 0
    counted = 0
    for message in reversed(messages):
        usage = getattr(message, "usage", None) if isinstance(message, ModelResponse) else None
        if usage is not None and usage.input_tokens:
            counted = usage.input_tokens + usage.output_tokens
            break
        chars += _message_chars(message)
    if not counted:
        # The instructions and the tools' schemas go with every request; the counted
        # prompt above already holds them.
        chars += _tools_chars(params)
        for part in getattr(params, "instruction_parts", None) or ():
            chars += len(getattr(part, "content", "") or "")
        for message in messages:
            instructions = getattr(message, "instructions", None)
            if instructions:
                chars += len(instructions)
    return counted + math.ceil(chars / _CHARS_PER_TOKEN)


def _dollars(value: float) -> str:
    from decimal import Decimal

    from ._cost import format_cost

    return format_cost(Decimal(repr(value)))


def _amount(limit: BudgetLimit, value: float) -> str:
    return f"{int(value):,} tokens" if limit.tokens else _dollars(value)


def _how_to_go_on(limit: BudgetLimit) -> str:
    if limit.managed:
        where = limit.origin.removeprefix("managed (").removesuffix(")")
        return f"This budget is set by your administrator ({where}); ask them to raise it" + (
            "." if limit.period in ("day", "month") else ", or continue in a new turn."
        )
    command = f"%budget {limit.period}{' tokens' if limit.tokens else ''}"
    more = "200000" if limit.tokens else f"{max(limit.limit * 2, 0.01):.2f}"
    return f"To go on, raise it (`{command} {more}`) or turn it off (`{command} off`)."


_SCOPE_WORDS = {
    "turn": "this turn",
    "conversation": "this conversation",
    "day": "today",
    "month": "this month",
}


@dataclass
class Budgets:
    """The budget check and spend recording of one session's model requests."""

    store_path: Path
    """The spend store."""
    origins: dict[str, str] = field(default_factory=dict)
    """Setting -> the layer that set it (``LoadedSettings.origins``, kept up to date)."""
    person: str = field(default_factory=current_person)
    """Whose day and month the requests count against."""
    on_warning: Callable[[str], None] | None = None
    """Told the 80 % warning of a day's or month's budget, once per period."""
    metrics: SpendMetrics | None = None
    """The OpenTelemetry counters each settled request adds to (``otlp_endpoint``)."""
    _store: SpendStore | None = field(default=None, init=False, repr=False)
    _turn_usage: Any = field(default=None, init=False, repr=False)
    """The usage object of the current turn (shared by its resumes and subagents)."""
    _turn_started: float = field(default=0.0, init=False, repr=False)
    _warned: set[tuple[str, str]] = field(default_factory=set[tuple[str, str]], init=False)
    """(budget, period) whose 80 % warning was given, here or by another kernel."""
    _prices: dict[tuple[str, int], tuple[float, float] | None] = field(
        default_factory=dict[tuple[str, int], "tuple[float, float] | None"],
        init=False,
        repr=False,
    )
    """(model label, settings object) -> US dollars per input and output token."""

    shared: bool = False
    """The store is a deployer's shared file (``spend_store``), created group-writable."""

    @property
    def store(self) -> SpendStore:
        if self._store is None:
            self._store = SpendStore(self.store_path, shared=self.shared)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- before the request ---------------------------------------------------

    def output_cap(self, settings: Any, model_settings: Any) -> int | None:
        """The request's output cap, or None when it has none and no budget needs one."""
        asked = (model_settings or {}).get("max_tokens")
        if asked:
            return int(asked)
        if settings.max_output_tokens is not None:
            return int(settings.max_output_tokens)
        if budget_limits(settings, self.origins):
            return DEFAULT_OUTPUT_CAP
        return None

    def admit(self, ctx: Any, messages: Sequence[Any], params: Any, output_cap: int | None) -> int:
        """Reserve the request in the spend store and return its row; raises BudgetRefused
        (nothing written) when it could pass a budget."""
        deps = ctx.deps
        if ctx.usage is not self._turn_usage:
            self._turn_usage, self._turn_started = ctx.usage, time.time()
        settings = deps.settings
        limits = budget_limits(settings, self.origins)
        estimate = RequestEstimate(0, 0, None)
        if limits:
            input_tokens = estimate_input_tokens(messages, params)
            output_tokens = output_cap or DEFAULT_OUTPUT_CAP
            prices = self.unit_prices(ctx)
            cost = None
            if prices is not None:
                cost = input_tokens * prices[0] + output_tokens * prices[1]
            estimate = RequestEstimate(input_tokens, output_tokens, cost)

        def check(store: SpendStore) -> None:
            # One sum per period: its money and token budgets read the same rows.
            sums: dict[str, Spent] = {}
            for limit in limits:
                if limit.tokens:
                    wanted: float = estimate.tokens
                elif estimate.cost is None:
                    continue  # no price: only a token budget counts this request
                else:
                    wanted = estimate.cost
                spent = sums.get(limit.period)
                if spent is None:
                    spent = sums[limit.period] = self._spent(store, limit.period, deps)
                used = spent.tokens if limit.tokens else spent.cost
                if used + wanted > limit.limit:
                    raise BudgetRefused(limit.setting, self._refusal(limit, used, wanted, estimate))

        try:
            return self.store.reserve(
                person=self.person,
                session_id=deps.session_id,
                turn=deps.turn_index,
                kernel_id=deps.kernel_id,
                model=_model_name(ctx),
                tokens=estimate.tokens,
                cost=estimate.cost,
                check=check if limits else None,
            )
        except (OSError, sqlite3.Error, DatabaseTooNew) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            if not limits:
                # Nothing to enforce: the turn goes on, this request is not recorded.
                log.warning("spending not recorded in %s: %s", self.store_path, reason)
                return 0
            # A budget that cannot be checked holds: nothing is sent unchecked.
            raise BudgetRefused(
                limits[0].setting,
                f"Stopped before sending: your budgets cannot be checked, the spend store "
                f"{inert_code(self.store_path)} cannot be written ({inert_text(reason)}). "
                "Nothing was sent and the conversation is kept. Check the `spend_store` "
                "setting and the data directory (`CO_HOME`), then run the cell again.",
            ) from None

    def _spent(self, store: SpendStore, period: str, deps: Any) -> Spent:
        return store.spent(
            period,
            person=self.person,
            session_id=deps.session_id,
            turn=deps.turn_index,
            turn_started=self._turn_started,
        )

    def _refusal(
        self, limit: BudgetLimit, used: float, wanted: float, estimate: RequestEstimate
    ) -> str:
        what = "token budget" if limit.tokens else "budget"
        scope = _SCOPE_WORDS[limit.period]
        request = (
            f"{estimate.input_tokens:,} input tokens and up to {estimate.output_tokens:,} "
            "output tokens"
        )
        if not limit.tokens:
            request += f", up to {_dollars(wanted)}"
        return (
            f"Stopped before sending: the next model request ({request}) could pass the "
            f"{limit.period}'s {what} of {_amount(limit, limit.limit)} (setting "
            f"`{limit.setting}`, {limit.origin}); {scope} has spent {_amount(limit, used)}"
            f"{', requests in flight included' if limit.period in ('day', 'month') else ''}. "
            f"Nothing was sent and the conversation is kept. {_how_to_go_on(limit)}"
        )

    # -- after the request ------------------------------------------------------

    def unit_prices(self, ctx: Any) -> tuple[float, float] | None:
        """US dollars per input and output token of the request's model; None: no price."""
        deps = ctx.deps
        label = _model_label(ctx)
        key = (label, id(deps.settings))
        if key not in self._prices:
            from ._cost import unit_price

            price = unit_price(label, deps.settings)
            if len(self._prices) > 64:
                self._prices.clear()
            self._prices[key] = (
                None
                if price is None
                else (float(price.input_per_mtok) / 1e6, float(price.output_per_mtok) / 1e6)
            )
        return self._prices[key]

    def cost_of(self, ctx: Any, response: Any) -> float | None:
        """What a response cost in US dollars (genai-prices' arithmetic); None: no price."""
        from ._cost import cost_of

        cost = cost_of(response.usage, _model_label(ctx), ctx.deps.settings)
        return None if cost is None else float(cost)

    def settle(self, row_id: int, ctx: Any, response: Any) -> None:
        """Record what the request used, and warn once at 80 % of a day or month."""
        usage = response.usage
        cost = self.cost_of(ctx, response)
        model = getattr(response, "model_name", None) or _model_name(ctx)
        try:
            self.store.settle(
                row_id,
                model=model,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cost=cost,
            )
        except (OSError, sqlite3.Error) as exc:
            # The answer is here; its estimate stays reserved until it goes stale.
            log.warning("spending not settled in %s: %s", self.store_path, exc)
            return
        if self.metrics is not None:
            self.metrics.record(
                person=self.person,
                model=model,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cost=cost,
            )
        if self.on_warning is not None:
            try:
                self._warn(ctx.deps)
            except (OSError, sqlite3.Error) as exc:
                log.warning("budget warning not checked in %s: %s", self.store_path, exc)

    def release(self, row_id: int) -> None:
        try:
            self.store.release(row_id)
        except (OSError, sqlite3.Error) as exc:
            log.warning("reservation not released in %s: %s", self.store_path, exc)

    def _warn(self, deps: Any) -> None:
        day, month = period_keys(time.time())
        sums: dict[str, Spent] = {}
        for limit in budget_limits(deps.settings, self.origins):
            period = day if limit.period == "day" else month
            if limit.period not in ("day", "month") or (limit.setting, period) in self._warned:
                continue
            spent = sums.get(limit.period)
            if spent is None:
                spent = sums[limit.period] = self._spent(self.store, limit.period, deps)
            used = spent.tokens if limit.tokens else spent.cost
            if used < WARN_AT * limit.limit:
                continue
            self._warned.add((limit.setting, period))
            if not self.store.first_warning(self.person, limit.setting, period):
                continue  # another kernel of the person gave it
            share = min(100, math.floor(100 * used / limit.limit))
            assert self.on_warning is not None
            self.on_warning(
                f"You have used {share} % of your {limit.period}'s "
                f"{'token budget' if limit.tokens else 'budget'}: "
                f"{_amount(limit, used)} of {_amount(limit, limit.limit)} (setting "
                f"`{limit.setting}`, {limit.origin}). `%budget` shows what is left."
            )


def _model_label(ctx: Any) -> str:
    """provider:model of the run making the request, as the person named it."""
    return str(getattr(ctx.deps, "model_label", "") or f"unknown:{_model_name(ctx)}")


def _model_name(ctx: Any) -> str:
    model = getattr(ctx, "model", None)
    return str(getattr(model, "model_name", None) or "unknown")
