"""``delegate_task``: running a subagent inside a tool call.

The definitions come from ``tools/subagents.py``; the tool lives here because what it does
is run an agent, which is the turn's job. It is offered only while there is a subagent
to delegate to and the nesting is below ``subagent_max_depth``; it needs no approval of
its own, because every side-effectful call the subagent makes asks the person, exactly
as Co's would.

The subagent is a pydantic-ai agent of its own (its instructions, model and allowed
tools) run by the same ``TurnRunner`` as a turn: the same streaming, approval loop,
provider-error retries and interrupt salvage. What differs:

- it starts from an empty history and a copy of the caller's deps (one level deeper,
  its own checklist), so it sees only the task it was given;
- it spends the calling turn's budget (the caller's live usage and usage limits);
- it reports to a child frontend (``FrontendProtocol.start_subagent``): its progress goes
  into one collapsible output, its side-effectful calls ask the person in the same cell;
- an interrupt stops it and is re-raised, so the turn around it stops as well.
"""

from __future__ import annotations

import asyncio
import time
from copy import copy
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

# pydantic-ai reads the tool's and the instructions function's annotations: real imports.
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from ..exceptions import ConfigError
from ..models import build_model
from ..session_state import CoDeps, Extras
from ..tools import ToolsetBuild
from ..tools.subagents import DELEGATE_TOOL, SubagentSpec, can_delegate, session_subagents
from ._costs import SubagentSpend, own_usage, priced
from ._frontend import SubagentView, TurnSummary
from ._recording_frontend import RecordingFrontend
from ._run import TurnResult, TurnRunner, current_turn

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.models import Model
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset

    from ..config import Settings

__all__ = [
    "SubagentOutcome",
    "SubagentRun",
    "child_deps",
    "delegate_task",
    "delegate_toolset",
    "run_subagent",
]

_PREAMBLE = """\
You are `{name}`, a subagent of Co (an assistant in a Jupyter notebook). Co delegated one \
task to you. Work on it with your tools, then answer with a concise, self-contained summary \
of what you found or did: Co sees only that final answer, not your tool calls. Side-effectful \
tools wait for the user's approval; if a call is denied, do not retry it as is."""


@dataclass
class SubagentRun:
    """Everything needed to run one subagent on one task."""

    name: str
    """The subagent's name."""
    instructions: str
    """Its own instructions (the body of its definition)."""
    task: str
    """What the caller asked it to do."""
    model: Model
    """The model it runs on."""
    model_label: str
    """provider:model of that model."""
    provider: str
    """The provider, for classifying provider errors."""
    toolsets: Sequence[AbstractToolset[Any]]
    """The tools it may call (already filtered to its allowed ones)."""
    tools: tuple[str, ...] | None = None
    """The names of its allowed tools; None = all of Co's."""


@dataclass
class SubagentOutcome:
    """How a subagent run ended."""

    output: str
    """Its answer: the summary returned to the caller."""
    error: str | None = None
    """Why it stopped early, when it did."""
    requests: int = 0
    """Model requests it made."""


def child_deps(deps: CoDeps) -> CoDeps:
    """A copy of the caller's deps for a subagent: one level deeper, its own checklist.

    Session resources (sandbox, audit log, integration clients in ``extras``) are shared,
    so the subagent's shell runs in the same sandbox as Co's.
    """
    deps.ensure_sandbox()  # cheap (no container yet); created here so both share one
    return replace(deps, depth=deps.depth + 1, todos=[], page_tokens=Extras())


def _build_agent(
    run: SubagentRun,
    settings: Any,
    capabilities: Callable[[], Sequence[AbstractCapability[Any]]] | None,
) -> Any:
    from pydantic_ai import Agent, DeferredToolRequests

    from ..permissions import OutboundGate, PermissionGate
    from ..tools import ToolErrorGuard
    from ..tools.skills import prompt_entries as skill_entries
    from ..tools.subagents import prompt_entries as subagent_entries
    from ._govern import GovernHistory
    from ._prompt import skills_section, subagents_section

    base = _PREAMBLE.format(name=run.name)
    if run.instructions.strip():
        base += f"\n\n## Your instructions\n{run.instructions.strip()}"

    async def instructions(ctx: RunContext[CoDeps]) -> str:
        # Only the tools it may call are offered; listing skills or subagents it could
        # not reach would only mislead it, so the lists follow its allowed tools.
        names = set(run.tools) if run.tools is not None else None
        sections = [base]
        if names is None or "load_skill" in names:
            sections.append(skills_section(skill_entries(ctx.deps)))
        if names is None or "delegate_task" in names:
            sections.append(subagents_section(subagent_entries(ctx.deps)))
        return "\n\n".join(s for s in sections if s)

    return Agent(
        run.model,
        name=run.name,
        deps_type=CoDeps,
        output_type=[str, DeferredToolRequests],
        instructions=instructions,
        toolsets=list(run.toolsets),
        capabilities=[
            *(capabilities() if capabilities else ()),
            ToolErrorGuard(),
            GovernHistory(),
            # The turn's outbound rule holds for a subagent too (it shares the ledger).
            OutboundGate(),
            PermissionGate(),
        ],
        retries=settings.tool_retries,
        model_settings={"max_retries": 0, "timeout": settings.request_timeout},
    )


async def run_subagent(ctx: RunContext[CoDeps], run: SubagentRun) -> SubagentOutcome:
    """Run ``run`` for the tool call in ``ctx``; raises CancelledError when interrupted."""
    deps = ctx.deps
    scope = current_turn()
    if scope is None:  # a tool called outside run_turn (the eval runner): no live display
        parent: Any = RecordingFrontend()
    else:
        parent = scope.frontend
    sub = child_deps(deps)
    view = SubagentView(
        call_id=ctx.tool_call_id or "",
        name=run.name,
        task=run.task,
        model=run.model_label,
        depth=sub.depth,
    )
    frontend = parent.start_subagent(view)
    usage = ctx.usage
    before = copy(usage)
    started = time.monotonic()
    capabilities = scope.capabilities if scope is not None else None
    spend = scope.spend if scope is not None else []
    nested_from = len(spend)
    runner = TurnRunner(
        _build_agent(run, deps.settings, capabilities),
        run.task,
        deps=sub,
        history=[],
        frontend=frontend,
        provider=run.provider,
        model_label=run.model_label,
        usage=usage,
        limits=ctx.usage_limits,
        child=True,
        capabilities=capabilities,
        subagent=run.name,
        spend=spend,
    )
    result: TurnResult | None = None
    try:
        result = await runner.run()
    finally:
        # Approve-all in the subagent's card holds for the session, as it says.
        if sub.auto_confirm:
            deps.auto_confirm = True
        # The runner returns the usage it ended with; the caller's object was updated
        # in place as the requests were made.
        spent = usage - before
        requests = spent.requests
        nested = spend[nested_from:]
        own = own_usage(spent, nested)
        cost = priced(own, run.model_label, deps.settings)
        spend.append(SubagentSpend(run.name, run.model_label, own, cost))
        for inner in nested:
            cost += inner.cost
        frontend.on_turn_end(
            TurnSummary(
                model=run.model_label,
                input_tokens=spent.input_tokens,
                output_tokens=spent.output_tokens,
                requests=requests,
                cost=cost,
                duration=time.monotonic() - started,
                interrupted=result is None or result.interrupted,
                error=result.error if result is not None else None,
            )
        )
        frontend.cleanup()
    assert result is not None  # set unless runner.run() raised, which ends here
    if result.interrupted:
        raise asyncio.CancelledError
    # The summary is the last response's text ("Let me look." before a tool call is
    # progress, shown in the cell); when it stopped early, whatever it said.
    parts = runner.events.text_parts
    final = parts[-1] if parts and not result.error else result.output
    return SubagentOutcome(final.strip(), result.error, requests)


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
            handle = build_model(
                deps.settings, spec.model, base_dir=deps.workspace, recorder=deps.recorder
            )
        except ConfigError as exc:
            return f"The subagent `{spec.name}` could not start: {exc}"
        model: Any = handle.model
        label, provider = handle.label, handle.provider
    else:
        model = ctx.model
        scope = current_turn()
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


def delegate_toolset(settings: Settings) -> ToolsetBuild:
    """The subagents toolset; always registered, offered when a subagent is defined."""
    toolset: FunctionToolset[CoDeps] = FunctionToolset()
    toolset.add_function(delegate_task, prepare=_only_when_delegable)
    return ToolsetBuild("subagents", toolset, approval={DELEGATE_TOOL: False})
