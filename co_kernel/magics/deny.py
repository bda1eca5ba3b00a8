"""Never run such calls; the model is told which rule denied it.

RULE as for `%allow`. A deny rule wins over every other rule, the defaults and `%yolo`.
`--save` writes it to the user settings.
"""

from __future__ import annotations

from . import MagicContext
from .permissions import add_rule

USAGE = "%deny RULE [--save]"


async def run(ctx: MagicContext, args: str) -> str:
    return await add_rule(ctx, "deny", args, USAGE)
