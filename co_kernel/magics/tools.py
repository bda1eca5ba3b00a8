"""List the tools Co may call and whether each asks before it runs.

Integrations that are not registered are listed too, with the setting that would enable
them. `%yolo on` makes every tool run without asking for the rest of the session.
Permission rules (`%permissions`) that name a whole tool show in its approval.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..config import KINDS
from . import MagicContext, MagicError
from ._render import Md, code, table

if TYPE_CHECKING:
    from ..config import PermissionRule
    from ..tools import ToolsetBuild
    from ..turn import SessionProtocol

USAGE = "%tools"


def _tools_of(build: ToolsetBuild) -> dict[str, bool]:
    """Tool name -> needs approval, from the build or from the toolset itself."""
    if build.approval:
        return dict(build.approval)
    tools: dict[str, Any] = getattr(build.toolset, "tools", {}) or {}
    return {name: bool(getattr(tool, "requires_approval", False)) for name, tool in tools.items()}


_UNASKED = {
    "web_fetch": "runs for a URL you gave or a link of this turn; asks for any other",
    "web_search": "runs; asks when its query repeats what Co read from your data",
}
"""The outbound tools' own rule (``permissions.OutboundGate``) where no approval setting asks."""


def _approval(name: str, needs: bool, auto_confirm: bool, rules: Sequence[PermissionRule]) -> Md:
    """How a call of ``name`` is decided: by a rule naming the whole tool, else the
    default; rules with a pattern decide some of its calls."""
    named = [r for r in rules if fnmatch.fnmatchcase(name, r.tool)]
    whole = next((r for kind in KINDS for r in named if r.kind == kind and r.pattern is None), None)
    if whole is not None and whole.kind == "deny":
        return Md(f"never runs (rule {code(whole)})")
    if whole is not None and whole.kind == "ask" and not auto_confirm:
        text = f"asks first (rule {code(whole)})"
    elif whole is not None and whole.kind == "allow":
        text = f"runs without asking (rule {code(whole)})"
    elif not needs:
        text = _UNASKED.get(name, "runs without asking")
    elif auto_confirm:
        text = "auto-approved (%yolo on)"
    else:
        text = "asks first"
    if any(r.pattern is not None for r in named):
        text += "; rules decide some calls"
    return Md(text)


def format_tools(
    builds: list[ToolsetBuild],
    *,
    auto_confirm: bool,
    unavailable: str | None = None,
    rules: Sequence[PermissionRule] = (),
    offered: set[str] | None = None,
) -> str:
    """The `%tools` report for a list of integration builds.

    ``unavailable`` says why the model gets no tools at all (a model without tool support);
    ``rules`` are the permission rules in force; ``offered`` the names the model is offered
    now (None: all registered), the others are named apart.
    """
    rows = []
    held_back = []
    for build in builds:
        if build.toolset is None:
            continue
        for name, needs in sorted(_tools_of(build).items()):
            if offered is not None and name not in offered:
                held_back.append(code(name))
                continue
            rows.append((code(name), build.name, _approval(name, needs, auto_confirm, rules)))
    # A build's reason is Co's Markdown, its outside parts already inert.
    missing = [(b.name, Md(b.reason or "not configured")) for b in builds if b.toolset is None]
    parts = []
    if rows:
        parts.append(
            f"**Tools Co may call** ({len(rows)})\n\n"
            + table(["tool", "integration", "approval"], rows)
        )
    elif unavailable:
        parts.append(f"**No tools for this model.** {unavailable}")
    else:
        parts.append("No tools are registered: Co answers from the conversation alone.")
    if held_back:
        parts.append(
            f"Registered but not offered right now: {', '.join(held_back)} (offered once they "
            "can be used: a skill, a subagent exists, a page shows the notebook)."
        )
    if missing:
        parts.append("**Not registered**\n\n" + table(["integration", "why"], missing))
    return "\n\n".join(parts)


async def run(ctx: MagicContext, args: str) -> str:
    from ..exceptions import ConfigError
    from ..turn import session_toolsets

    if args:
        raise MagicError(f"%tools takes no arguments (got '{args}').")
    session = ctx.session
    model = session.model
    if not model.toolsets:
        # Building the agent starts nothing (a local model loads on its first turn) and
        # says which tools this model gets: none for a model without tool support.
        with contextlib.suppress(ConfigError):
            session.ensure_agent()
    builds = model.toolsets or session_toolsets(session.settings)
    await session.mcp.ready()
    builds = [*builds, *session.mcp.tool_builds()]
    return format_tools(
        builds,
        auto_confirm=session.auto_confirm,
        unavailable=model.tools_unavailable,
        rules=session.rules.in_force(),
        offered=await _offered(session, builds),
    )


async def _offered(session: SessionProtocol, builds: list[ToolsetBuild]) -> set[str] | None:
    """The tools the model is offered now: each toolset asked as a turn asks it (a toolset
    may hold tools back, the skill tools while no skill exists); None without a model."""
    from ..exceptions import ConfigError

    try:
        session.ensure_agent()
    except ConfigError:
        return None
    names: set[str] = set()
    for build in builds:
        if build.toolset is None:
            continue
        try:
            names |= await session.model.offered_tools(build.toolset)
        except Exception:  # cannot tell: list them as registered
            names |= set(_tools_of(build))
    return names
