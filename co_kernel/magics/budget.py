"""Show your budgets and what is spent and left; set your own per turn, conversation, day or month.

`%budget` lists each budget in force, who set it (your settings, the environment, or your
administrator's managed settings), what is spent and what is left. `%budget day 2.50` sets
your daily budget in US dollars, `%budget turn tokens 50000` a token budget (for models
without a price), `%budget month off` removes one, `%budget off` all of yours. They are
saved in your user settings and apply from the next model request. An administrator's
budget is a ceiling: you may set a lower one, not a higher one, nor turn it off.
Day and month budgets count every kernel and notebook of yours; Co warns once at 80 %.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..config import CEILINGS, load_settings, save_user_settings
from ..exceptions import DatabaseTooNew
from . import MagicContext, MagicError
from ._render import Md, code, table

USAGE = "%budget [turn|conversation|day|month [tokens] AMOUNT|off] | %budget off"

_PERIODS = ("turn", "conversation", "day", "month")


def _setting(period: str, tokens: bool) -> str:
    return f"budget_{period}{'_tokens' if tokens else ''}"


def _money(value: float) -> str:
    from decimal import Decimal

    from ..telemetry import format_cost

    return format_cost(Decimal(repr(value)))


def _amount(value: float | None, tokens: bool) -> str:
    if value is None:
        return "—"
    return f"{int(value):,} tokens" if tokens else _money(value)


def _parse(period: str, tokens: bool, text: str) -> float | int:
    raw = text.strip().removeprefix("$").replace(",", "").replace("_", "")
    try:
        value = float(raw)
    except ValueError:
        unit = "a number of tokens" if tokens else "an amount in US dollars, like 0.50"
        raise MagicError(f"%budget {period}: expected {unit} or `off` (got '{text}').") from None
    if value <= 0 or value != value or value == float("inf"):
        raise MagicError(f"%budget {period}: a budget is more than 0 (or `off` for none).")
    if tokens:
        if value != int(value):
            raise MagicError(f"%budget {period} tokens: a whole number of tokens (got '{text}').")
        return int(value)
    return value


def _spent(ctx: MagicContext, period: str) -> Any:
    """What is spent in ``period``; None when the spend store cannot be read."""
    session = ctx.session
    budgets = session.telemetry.budgets
    try:
        return budgets.store.spent(
            period, person=budgets.person, session_id=session.session_id, turn=len(session.turns)
        )
    except (OSError, sqlite3.Error, DatabaseTooNew):
        return None


def _show(ctx: MagicContext) -> str:
    session = ctx.session
    settings = session.settings
    origins = session.loaded.origins
    ceilings = session.loaded.ceilings
    rows: list[tuple[object, ...]] = []
    for period in _PERIODS:
        spent = _spent(ctx, period)
        for tokens in (False, True):
            name = _setting(period, tokens)
            limit = getattr(settings, name)
            used = None if spent is None else (spent.tokens if tokens else spent.cost)
            if limit is None and not (period in ("day", "month") and used):
                continue
            left = None if limit is None or used is None else max(0.0, limit - used)
            origin = origins.get(name, "")
            by = Md(origin.split(" ", 1)[0]) if origin else Md("—")
            if name in ceilings and not origin.startswith("managed"):
                by = Md(f"{by} (managed at most {_amount(ceilings[name], tokens)})")
            rows.append(
                (
                    Md(f"{'last turn' if period == 'turn' else period}"),
                    Md(_amount(limit, tokens)) if limit is not None else Md("none"),
                    by,
                    Md(_amount(used, tokens)),
                    Md(_amount(left, tokens)),
                )
            )
    if not rows:
        head = "**No budgets set.** "
    else:
        head = "**Budgets** (money in US dollars; token budgets count every model). "
    person = session.telemetry.budgets.person
    head += (
        f"Day and month count every kernel of {code(person)}. Set one with "
        "`%budget day 2.50`, `%budget turn tokens 50000`; `%budget day off` removes it."
    )
    if not rows:
        return head
    return head + "\n\n" + table(["budget", "limit", "set by", "spent", "left"], rows)


def _set(ctx: MagicContext, changes: dict[str, float | int | None]) -> str:
    session = ctx.session
    ceilings = session.loaded.ceilings
    for name, value in changes.items():
        if name not in ceilings:
            continue
        ceiling = ceilings[name]
        tokens = name.endswith("_tokens")
        if value is None:
            raise MagicError(
                f"`{name}` is set by your administrator ({_amount(ceiling, tokens)}); you may "
                "lower it, not turn it off."
            )
        if value > float(ceiling):
            raise MagicError(
                f"`{name}`: your administrator sets at most {_amount(ceiling, tokens)}; "
                f"{_amount(value, tokens)} is more. Ask them to raise it."
            )
    try:
        where = save_user_settings(dict(changes))
    except (OSError, ValueError) as exc:
        raise MagicError(f"Could not save your budget: {exc}") from None
    loaded = load_settings(session.workspace)
    lines: list[str] = []
    for name in changes:
        value = getattr(loaded.settings, name)
        origin = loaded.origins.get(name)
        if origin is None:
            session.loaded.origins.pop(name, None)
        else:
            session.loaded.origins[name] = origin
        session.update_settings({name: value})
        tokens = name.endswith("_tokens")
        shown = "none" if value is None else _amount(value, tokens)
        line = f"`{name}` is now {shown}"
        if origin is not None and not origin.startswith("user"):
            line += f" (set by {origin}, which comes before your settings)"
        lines.append(line + ".")
    return " ".join(lines) + f" Saved in {code(where)}."


async def run(ctx: MagicContext, args: str) -> str:
    words = args.lower().split()
    if not words:
        return _show(ctx)
    if words == ["off"]:
        own = {
            _setting(p, t): None
            for p in _PERIODS
            for t in (False, True)
            if _setting(p, t) not in ctx.session.loaded.ceilings
        }
        return _set(ctx, dict(own))
    period = words[0]
    if period not in _PERIODS:
        raise MagicError(f"%budget: no budget '{words[0]}'; one of {', '.join(_PERIODS)}.")
    tokens = len(words) > 1 and words[1] == "tokens"
    rest = words[2:] if tokens else words[1:]
    if len(rest) != 1:
        raise MagicError(f"%budget {period}: give an amount or `off`.")
    name = _setting(period, tokens)
    assert name in CEILINGS
    value = None if rest[0] == "off" else _parse(period, tokens, rest[0])
    return _set(ctx, {name: value})


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    words = arg_text.split()
    if not words or (len(words) == 1 and not arg_text.endswith(" ")):
        prefix = words[0] if words else ""
        return [p for p in (*_PERIODS, "off") if p.startswith(prefix)]
    return []
