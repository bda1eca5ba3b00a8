"""List the permission rules in force, where each comes from; accept a project's rules.

Rules say, per tool and per argument, whether a call runs at once (`allow`), asks
(`ask`) or never runs (`deny`); deny wins over ask, ask over allow, and rules over the
defaults (read-only tools run, side effects ask, `shell_safe_commands` run). They come
from an administrator's managed settings, the user settings, the project's
`.co/settings.json`, `CO_PERMISSIONS`, and this session (`%allow`, `%ask`, `%deny`,
"Always allow" on an approval card). A managed `ask` rule asks even under `%yolo`.

A project file's `allow` rules apply only once you accept them: `%permissions accept`
(remembered for this project until the rules change). Its `ask` and `deny` rules apply
at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..inert import inert_code
from . import MagicContext, MagicError
from ._render import Md, code, table

if TYPE_CHECKING:
    from ..config import RuleKind

USAGE = "%permissions [accept]"


async def run(ctx: MagicContext, args: str) -> str:
    session = ctx.session
    word = args.strip().lower()
    if word == "accept":
        accepted = session.rules.accept_project()
        if not accepted:
            return "No project allow rules are waiting: nothing to accept."
        listed = "\n".join(f"- {inert_code(f'allow {r.rule}')}" for r in accepted)
        return f"Accepted this project's allow rules (until they change):\n{listed}"
    if word:
        raise MagicError(f"%permissions takes nothing or `accept`, not '{args.strip()}'.")
    pending = set(session.rules.waiting())
    rules = session.rules.listed
    if not rules:
        return (
            "No permission rules: the defaults apply (read-only tools run, side effects "
            "ask, `shell_safe_commands` run). Add one with `%allow`, `%ask` or `%deny`."
        )
    order = {"deny": 0, "ask": 1, "allow": 2}
    rows = [
        (
            r.kind,
            code(r.rule),
            r.source,
            Md("waiting: `%permissions accept`") if r in pending else "in force",
        )
        for r in sorted(rules, key=lambda r: order[r.kind])
    ]
    return "**Permission rules** (deny wins over ask, ask over allow)\n\n" + table(
        ["rule", "pattern", "source", "state"], rows
    )


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    return ["accept"] if "accept".startswith(arg_text.strip().lower()) else []


async def add_rule(ctx: MagicContext, kind: RuleKind, args: str, usage: str) -> str:
    """`%allow`, `%ask`, `%deny`: a session rule, and with ``--save`` a user setting."""
    from ..config import PermissionRule, save_user_rule

    words = args.split()
    save = "--save" in words
    text = " ".join(w for w in words if w != "--save") if save else args.strip()
    if not text:
        raise MagicError(f"Usage: {usage}")
    try:
        rule = PermissionRule(kind=kind, rule=text, source="session")
    except ValueError as exc:
        message = str(exc).splitlines()
        detail = next((line.strip() for line in message if "Value error" in line), message[0])
        raise MagicError(detail.replace("Value error, ", "").split(" [type=")[0]) from None
    ctx.session.rules.add(rule)
    said = f"{inert_code(f'{kind} {rule.rule}')} holds for this session"
    if save:
        try:
            where = save_user_rule(rule)
        except (OSError, ValueError) as exc:
            raise MagicError(f"{said}, but it was not saved: {exc}") from None
        said += f" and is saved in {where}"
    return f"{said}. `%permissions` lists the rules in force."
