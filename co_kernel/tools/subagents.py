"""Subagents: ``delegate_task`` hands one task to a specialised agent (seed 004).

A subagent is defined in settings (``subagents``: name, description, instructions,
model, tools) or in ``<notebook dir>/.co/agents/<name>.md`` (front-matter ``name``,
``description``, ``model``, ``tools``; body = instructions), the file winning on a name
clash. ``model`` defaults to the session's model; ``tools`` lists the tool names it may
call (absent: all of Co's; ``[]``: none). The run itself is ``turn/_subagent.py``.

``delegate_task`` is offered only while there is a subagent to delegate to and the
nesting is below ``subagent_max_depth``; it needs no approval of its own, because every
side-effectful call the subagent makes asks the person, exactly as Co's would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from ..turn._deps import CoDeps  # at run time: pydantic-ai reads the tools' annotations
from . import ToolsetBuild
from ._frontmatter import DefinitionError, read_definition

if TYPE_CHECKING:
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset

    from ..config import Settings

__all__ = [
    "SubagentCatalog",
    "SubagentSpec",
    "build",
    "can_delegate",
    "delegate_task",
    "discover_subagents",
    "prompt_entries",
    "session_subagents",
]

DELEGATE_TOOL = "delegate_task"


@dataclass(frozen=True)
class SubagentSpec:
    """One subagent definition."""

    name: str
    """What ``delegate_task`` is called with."""
    description: str
    """One line: what it is good at."""
    instructions: str
    """Its instructions (system prompt)."""
    model: str | None = None
    """provider:model; None = the session's model."""
    tools: tuple[str, ...] | None = None
    """Tool names it may call; None = all of Co's."""
    source: str = "settings"
    """``settings`` or the definition file's path."""


@dataclass
class SubagentCatalog:
    """The subagents of a session and the definitions that could not be read."""

    agents: dict[str, SubagentSpec] = field(default_factory=dict)
    """By name."""
    problems: list[DefinitionError] = field(default_factory=list)
    """One per unusable ``.co/agents/*.md``, with file and line."""


def _from_file(path: Path) -> SubagentSpec:
    definition = read_definition(path)
    name = definition.name()
    description = definition.text("description", required=True) or ""
    model = definition.text("model", required=False) or None
    if model is not None:
        from ..turn._providers import parse_model_string

        try:
            parse_model_string(model)
        except Exception as exc:  # ConfigError or ValueError: the message names the fix
            raise definition.error("model", f"`model` {model!r}: {exc}") from None
    tools = definition.names("tools")
    return SubagentSpec(name, description, definition.body, model, tools, str(path))


def discover_subagents(settings: Settings, project_dir: Path) -> SubagentCatalog:
    """Subagents from settings, then ``.co/agents/*.md`` (a file replaces a setting)."""
    catalog = SubagentCatalog()
    for entry in settings.subagents:
        catalog.agents[entry.name] = SubagentSpec(
            entry.name,
            " ".join(entry.description.split()),
            entry.instructions,
            entry.model,
            tuple(entry.tools) if entry.tools is not None else None,
        )
    folder = project_dir / ".co" / "agents"
    if folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            try:
                spec = _from_file(path)
            except DefinitionError as exc:
                catalog.problems.append(exc)
                continue
            catalog.agents[spec.name] = spec
    return catalog


def session_subagents(deps: CoDeps) -> SubagentCatalog:
    """The subagents the session's agent may delegate to."""
    return discover_subagents(deps.settings, deps.workspace)


def can_delegate(deps: CoDeps) -> bool:
    """Whether an agent at ``deps.depth`` may start another subagent."""
    return deps.depth < deps.settings.subagent_max_depth


def prompt_entries(deps: CoDeps) -> list[tuple[str, str]]:
    """(name, description) of each subagent this agent may delegate to, for the prompt."""
    if not can_delegate(deps):
        return []
    return [(a.name, a.description) for a in session_subagents(deps).agents.values()]


def _allowed_toolsets(ctx: RunContext[CoDeps], spec: SubagentSpec) -> list[AbstractToolset[CoDeps]]:
    """Co's toolsets, reduced to the tools the subagent may call."""
    from pydantic_ai.toolsets import CombinedToolset

    agent = ctx.agent
    toolsets = list(agent.toolsets) if agent is not None else []
    if spec.tools is None:
        return toolsets
    allowed = set(spec.tools)
    return [CombinedToolset(toolsets).filtered(lambda _ctx, tool: tool.name in allowed)]


async def delegate_task(ctx: RunContext[CoDeps], description: str, subagent: str) -> str:
    """Delegate a self-contained task to a subagent and get back its summary.

    The subagent does not see this conversation: say everything it needs in `description`.

    Args:
        description: The complete task: goal, inputs (file names, values) and what to report.
        subagent: The subagent's name, as listed under Subagents in the instructions.
    """
    from ..exceptions import ConfigError
    from ..turn._providers import build_model
    from ..turn._subagent import SubagentRun, run_subagent

    deps = ctx.deps
    if not can_delegate(deps):
        return (
            f"Not delegated: subagents may nest at most {deps.settings.subagent_max_depth} "
            "level(s) deep (setting `subagent_max_depth`). Do the task yourself."
        )
    agents = session_subagents(deps).agents
    spec = agents.get(subagent.strip())
    if spec is None:
        available = ", ".join(f"`{n}`" for n in sorted(agents)) or "none"
        raise ModelRetry(f"There is no subagent named {subagent!r}. Available: {available}.")
    if not description.strip():
        raise ModelRetry("`description` is empty; write the complete task for the subagent.")
    handle = None
    if spec.model:
        try:
            handle = build_model(deps.settings, spec.model, base_dir=deps.workspace)
        except ConfigError as exc:
            return f"The subagent `{spec.name}` could not start: {exc}"
        model: Any = handle.model
        label, provider = handle.label, handle.provider
    else:
        model = ctx.model
        scope = deps.turn
        label = scope.model_label if scope is not None else str(getattr(model, "model_name", ""))
        provider = scope.provider if scope is not None else str(getattr(model, "system", ""))
    try:
        outcome = await run_subagent(
            ctx,
            SubagentRun(
                name=spec.name,
                instructions=spec.instructions,
                task=description.strip(),
                model=model,
                model_label=label,
                provider=provider,
                toolsets=_allowed_toolsets(ctx, spec),
                tools=spec.tools,
            ),
        )
    finally:
        if handle is not None:
            handle.close()
    if outcome.error:
        partial = f"\n\nIts answer so far:\n{outcome.output}" if outcome.output else ""
        return f"The subagent `{spec.name}` stopped early: {outcome.error}{partial}"
    return outcome.output or f"The subagent `{spec.name}` finished without an answer."


async def _only_when_delegable(
    ctx: RunContext[CoDeps], tool_def: ToolDefinition
) -> ToolDefinition | None:
    """Offer delegate_task only with a subagent to delegate to, below the depth limit."""
    if not can_delegate(ctx.deps) or not session_subagents(ctx.deps).agents:
        return None
    return tool_def


def build(settings: Settings) -> ToolsetBuild:
    """The subagents toolset; always registered, offered when a subagent is defined."""
    toolset: FunctionToolset[CoDeps] = FunctionToolset()
    toolset.add_function(delegate_task, prepare=_only_when_delegable)
    return ToolsetBuild("subagents", toolset, approval={DELEGATE_TOOL: False})
