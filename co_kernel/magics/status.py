"""Show what Co runs on: model and whether its provider answers, sandbox, integrations, stores.

Also the settings files in force and any settings that were ignored, with why. Nothing is
started to find out: the sandbox is described if it is running, else its configured mode.
"""

from __future__ import annotations

import asyncio

from . import MagicContext, MagicError

USAGE = "%status"


async def run(ctx: MagicContext, args: str) -> str:
    from ..status import collect_status, format_status

    if args:
        raise MagicError(f"%status takes no arguments (got '{args}').")
    session = ctx.session
    await session.mcp.ready()  # a row per MCP server, in its settled state
    # The provider check is network I/O: keep it off the kernel's event loop.
    report = await asyncio.to_thread(collect_status, session.workspace, session)
    return "**Co status**\n\n" + format_status(report, markdown=True)
