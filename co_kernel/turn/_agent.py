"""The agent factory: settings and a model name in, a ready pydantic-ai agent out.

``build_session_agent`` is the one way Co turns settings and a model name into a ready
agent: the kernel's session and the eval runner both use it, so an eval talks to a model
exactly as the kernel does (its request settings, prompt size and toolsets).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..config import paths
from ..inert import inert_code
from ._prompt import build_system_prompt

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.toolsets import AbstractToolset

    from ..config import Settings
    from ..models import ModelHandle
    from ..replay import Recorder
    from ..session_state import CoDeps
    from ..tools import ToolsetBuild

__all__ = [
    "AGENT_NAME",
    "SessionAgent",
    "build_agent",
    "build_session_agent",
    "co_instructions",
    "rehearse_agent_run",
    "session_toolsets",
]

AGENT_NAME = "co"
"""The name of Co's agent: pydantic-ai builds its run graph once per agent name."""


@dataclass
class SessionAgent:
    """An agent built from settings, with the model and toolsets it was built with."""

    agent: Agent[CoDeps, str | DeferredToolRequests]
    """The agent."""
    handle: ModelHandle
    """The model, its request settings, and what stops it."""
    toolsets: list[ToolsetBuild]
    """Every integration, registered or with the reason it is not."""
    tools_unavailable: str | None
    """Why the model gets no tools at all (a tiny local model), else None."""


def session_toolsets(settings: Settings) -> list[ToolsetBuild]:
    """Every toolset a session registers: the integrations, then delegation to subagents."""
    # pydantic-ai loads with these: imported when a session builds its agent, not before.
    from ..tools import collect_toolsets
    from ._subagent import delegate_toolset

    return [*collect_toolsets(settings), delegate_toolset(settings)]


def build_session_agent(
    settings: Settings,
    model_string: str | None,
    *,
    base_dir: Path,
    capabilities: Sequence[AbstractCapability[Any]] = (),
    wrap_toolset: Callable[[AbstractToolset[Any]], AbstractToolset[Any]] | None = None,
    extra_toolsets: Sequence[AbstractToolset[Any]] = (),
    recorder: Recorder | None = None,
) -> SessionAgent:
    """Build the model and its agent as a kernel session does; raises ConfigError with the fix.

    ``wrap_toolset`` wraps each registered toolset (the eval runner defers every call);
    ``extra_toolsets`` (the session's MCP servers) join them when the model takes tools;
    ``recorder`` is the session's (``%record`` and replays, see ``models/_record_replay.py``).
    """
    from ..models import build_model

    handle = build_model(settings, model_string, base_dir=base_dir, recorder=recorder)
    try:
        builds = session_toolsets(settings)
        unavailable = None
        if not handle.supports_tools:
            unavailable = (
                f"{inert_code(handle.label)} has no tool support, so Co offers it no tools. "
                "Choose a tool-capable model with `%model` to use them."
            )
            builds = [replace(b, toolset=None, reason=b.reason or unavailable) for b in builds]
        toolsets = [b.toolset for b in builds if b.toolset is not None]
        if wrap_toolset is not None:
            toolsets = [wrap_toolset(t) for t in toolsets]
        if handle.supports_tools:
            toolsets += extra_toolsets
        agent = build_agent(
            handle.model,
            settings,
            toolsets,
            compact_prompt=handle.compact_prompt,
            model_settings=handle.model_settings,
            capabilities=capabilities,
        )
    except BaseException:
        handle.close()
        raise
    return SessionAgent(agent, handle, builds, unavailable)


def co_instructions(deps: CoDeps, *, compact: bool, config_dir: Path | None = None) -> str:
    """The system prompt Co's agent sends with every request (token counts build it too).

    The same on every request unless a file or setting changed: the memories relevant to
    a prompt follow that prompt instead (GovernHistory's turn_context).
    """
    from ..tools.skills import prompt_entries as skill_entries
    from ..tools.subagents import prompt_entries as subagent_entries

    return build_system_prompt(
        personality=deps.settings.personality,
        project_dir=deps.project,
        config_dir=paths().config_dir if config_dir is None else config_dir,
        compact=compact,
        skills=[] if compact else skill_entries(deps),
        subagents=[] if compact else subagent_entries(deps),
    )


def build_agent(
    model: Model,
    settings: Settings,
    toolsets: list[AbstractToolset[Any]],
    *,
    compact_prompt: bool = False,
    model_settings: dict[str, Any] | None = None,
    capabilities: Sequence[AbstractCapability[Any]] = (),
) -> Agent[CoDeps, str | DeferredToolRequests]:
    """An agent whose output is text or a batch of calls waiting for approval.

    ``compact_prompt`` and ``model_settings`` come from the model handle (a tiny local
    model gets the short system prompt and a generation cap); ``capabilities`` from
    telemetry (OpenTelemetry instrumentation and rate limits).
    """
    from pydantic_ai import Agent, DeferredToolRequests, RunContext

    from ..permissions import OutboundGate, PermissionGate
    from ..session_state import CoDeps
    from ..tools import ToolErrorGuard, outbound_ledger
    from ..tools.memory import memory_prompt
    from ._govern import GovernHistory

    config_dir = paths().config_dir

    def memories(deps: CoDeps, prompt: str) -> str:
        # The memories sent with a prompt are private text, like a recalled memory.
        found = memory_prompt(deps, prompt)
        if found:
            outbound_ledger(deps).note_private("memory", found)
        return found

    async def instructions(ctx: RunContext[CoDeps]) -> str:
        # async: a sync function would cost a thread hop on every request
        return co_instructions(ctx.deps, compact=compact_prompt, config_dir=config_dir)

    return Agent(
        model,
        name=AGENT_NAME,
        deps_type=CoDeps,
        output_type=[str, DeferredToolRequests],
        instructions=instructions,
        toolsets=toolsets,
        # ToolErrorGuard: every toolset's failures become readable tool errors, never a
        # dead turn. GovernHistory: trimming and windowing before each model request.
        # OutboundGate: requests the person did not choose ask (permissions/_outbound),
        # before PermissionGate so its card says why. PermissionGate: ask and deny rules
        # reach tools that never ask (permissions/_rules).
        # Telemetry's (instrumentation, rate limits) come first; Instrumentation orders
        # itself outermost either way.
        capabilities=[
            *capabilities,
            ToolErrorGuard(),
            GovernHistory(turn_context=memories),
            OutboundGate(),
            PermissionGate(),
        ],
        retries=settings.tool_retries,
        # The handle's settings are the provider's own keys, unchecked here.
        model_settings=cast(
            "ModelSettings",
            {"max_retries": 0, "timeout": settings.request_timeout, **(model_settings or {})},
        ),
    )


def rehearse_agent_run() -> None:
    """Run a throwaway agent once, in this process and on a model of its own that sends
    nothing anywhere: a text answer after one call of a throwaway tool.

    pydantic-ai builds much of what every run uses on the first run of the process and
    keeps it: the run graph (per agent name, so this agent has Co's), its capabilities'
    event hooks, the regular expressions that name them, type hints of its generics. That
    was about a third of the CPU a kernel's first turn spent before its first text. The
    rehearsal pays it where nobody waits. It shares nothing with a session: no toolset,
    capability, store or model of Co's is touched, so no check or budget is involved. It
    runs its own event loop, so it must not be called on a thread that has one running.
    """
    import asyncio

    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    async def answer(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
        called = any(
            isinstance(m, ModelResponse) and any(isinstance(p, ToolCallPart) for p in m.parts)
            for m in messages
        )
        if called:
            yield "."
        else:
            yield {0: DeltaToolCall(name="rehearsal", json_args="{}", tool_call_id="r")}

    # Instrumented, as a session's runs are (their spans' first conversions are warmed
    # too), into a provider of its own with nowhere to send them.
    settings = InstrumentationSettings(
        tracer_provider=TracerProvider(shutdown_on_exit=False),
        meter_provider=NoOpMeterProvider(),
        include_binary_content=False,
        include_model_request_parameters=False,
    )
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(stream_function=answer),
        name=AGENT_NAME,
        output_type=[str, DeferredToolRequests],
        capabilities=[Instrumentation(settings=settings)],
    )

    @agent.tool_plain
    def rehearsal() -> str:  # pyright: ignore[reportUnusedFunction]  # the model calls it
        return "."

    async def run() -> None:
        async with agent.run_stream_events(".") as events:
            async for _ in events:
                pass

    asyncio.run(run())
