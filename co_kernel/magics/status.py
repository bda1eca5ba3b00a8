"""Show what Co runs on: model and whether its provider answers, sandbox, integrations, stores.

Also the settings files in force and any settings that were ignored, with why. Nothing is
started to find out: the sandbox is described if it is running, else its configured mode.
In `jupyter console` it shows what matters on one screen (model, trust, sandbox, tools,
MCP servers, secrets set, problems); `%status all` shows every row there too.
"""

from __future__ import annotations

import asyncio

from . import MagicContext, MagicError

USAGE = "%status [all]"


async def run(ctx: MagicContext, args: str) -> str:
    from ..status import brief_status, collect_status, format_status

    if args not in ("", "all"):
        raise MagicError(f"%status takes `all` or nothing (got '{args}').")
    session = ctx.session
    await session.mcp.ready()  # a row per MCP server, in its settled state
    # The provider check is network I/O: keep it off the kernel's event loop.
    report = await asyncio.to_thread(collect_status, session.workspace, session)
    if args == "all" or ctx.frontend != "console":
        # A notebook scrolls and keeps its outputs: the whole report, always.
        return "**Co status**\n\n" + format_status(report, markdown=True)
    # A terminal shows about 24 lines at once: what matters, the rest one command away.
    brief, left = brief_status(report)
    more = f"`%status all` shows all {len(report.rows)} rows ({left} more than summed up here)."
    return "**Co status**\n\n" + brief + "\n\n" + more


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    return ["all"] if "all".startswith(arg_text.strip().lower()) else []
