"""Allow calls without asking, per tool and per argument.

RULE is a tool name (globs allowed: `mcp_*`) or `tool(pattern)`: for `run_shell_command` a
glob over the whole command (`run_shell_command(git status*)`; a command that chains,
redirects or substitutes is allowed only by a rule naming it exactly), for the file tools
a workspace-relative path glob (`write_file(notes/**)`), for `web_fetch` a host glob
(`web_fetch(*.python.org)`), for other tools a glob over the JSON of the arguments.
Allowed calls still meet every guard (workspace scope, SSRF, sandbox, protected files).
The rule holds for this session; `--save` also writes it to the user settings.
"""

from __future__ import annotations

from . import MagicContext
from .permissions import add_rule

USAGE = "%allow RULE [--save]"


async def run(ctx: MagicContext, args: str) -> str:
    return await add_rule(ctx, "allow", args, USAGE)
