"""Ask before such calls, even of tools that run without asking.

RULE as for `%allow`. An ask rule wins over allow rules and over the defaults
(`shell_safe_commands`); `%yolo` still approves. `--save` writes it to the user settings.
"""

from __future__ import annotations

from . import MagicContext
from .permissions import add_rule

USAGE = "%ask RULE [--save]"


async def run(ctx: MagicContext, args: str) -> str:
    return await add_rule(ctx, "ask", args, USAGE)
