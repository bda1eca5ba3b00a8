"""List the tools Co may call and whether each asks before it runs.

Integrations that are not registered are listed too, with the setting that would enable
them. `%yolo on` makes every tool run without asking for the rest of the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import MagicContext, MagicError
from ._render import table

if TYPE_CHECKING:
    from ..tools import ToolsetBuild

USAGE = "%tools"


def _tools_of(build: ToolsetBuild) -> dict[str, bool]:
    """Tool name -> needs approval, from the build or from the toolset itself."""
    if build.approval:
        return dict(build.approval)
    tools: dict[str, Any] = getattr(build.toolset, "tools", {}) or {}
    return {name: bool(getattr(tool, "requires_approval", False)) for name, tool in tools.items()}


def format_tools(builds: list[ToolsetBuild], *, auto_confirm: bool) -> str:
    """The `%tools` report for a list of integration builds."""
    rows = []
    for build in builds:
        if build.toolset is None:
            continue
        for name, needs in sorted(_tools_of(build).items()):
            if not needs:
                approval = "runs without asking"
            elif auto_confirm:
                approval = "auto-approved (%yolo on)"
            else:
                approval = "asks first"
            rows.append((f"`{name}`", build.name, approval))
    missing = [(b.name, b.reason or "not configured") for b in builds if b.toolset is None]
    parts = []
    if rows:
        parts.append(
            f"**Tools Co may call** ({len(rows)})\n\n"
            + table(["tool", "integration", "approval"], rows)
        )
    else:
        parts.append("No tools are registered: Co answers from the conversation alone.")
    if missing:
        parts.append("**Not registered**\n\n" + table(["integration", "why"], missing))
    return "\n\n".join(parts)


async def run(ctx: MagicContext, args: str) -> str:
    from ..tools import collect_toolsets

    if args:
        raise MagicError(f"%tools takes no arguments (got '{args}').")
    session = ctx.session
    builds = session.toolsets or collect_toolsets(session.settings)
    return format_tools(builds, auto_confirm=session.deps.auto_confirm)
