"""The agent factory (seed 001 ``get_agent``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import paths
from ._prompt import build_system_prompt

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.models import Model
    from pydantic_ai.toolsets import AbstractToolset

    from ..config import Settings
    from ._deps import CoDeps

__all__ = ["build_agent"]


def build_agent(
    model: Model,
    settings: Settings,
    toolsets: list[AbstractToolset[Any]],
    *,
    compact_prompt: bool = False,
    model_settings: dict[str, Any] | None = None,
    capabilities: Sequence[AbstractCapability[Any]] = (),
) -> Agent[CoDeps, Any]:
    """An agent whose output is text or a batch of calls waiting for approval.

    ``compact_prompt`` and ``model_settings`` come from the model handle (a tiny local
    model gets the short system prompt and a generation cap); ``capabilities`` from
    telemetry (OpenTelemetry instrumentation and rate limits).
    """
    from pydantic_ai import Agent, DeferredToolRequests, RunContext

    from ..tools._errors import ToolErrorGuard
    from ._deps import CoDeps
    from ._govern import GovernHistory

    config_dir = paths().config_dir

    async def instructions(ctx: RunContext[CoDeps]) -> str:
        # async: a sync function would cost a thread hop on every request
        from ..tools.memory import memory_prompt
        from ..tools.skills import prompt_entries as skill_entries
        from ..tools.subagents import prompt_entries as subagent_entries

        prompt = ctx.prompt if isinstance(ctx.prompt, str) else None
        return build_system_prompt(
            personality=ctx.deps.settings.personality,
            project_dir=ctx.deps.workspace,
            config_dir=config_dir,
            extra_sections=[memory_prompt(ctx.deps, prompt)],
            compact=compact_prompt,
            skills=[] if compact_prompt else skill_entries(ctx.deps),
            subagents=[] if compact_prompt else subagent_entries(ctx.deps),
        )

    return Agent(
        model,
        name="co",
        deps_type=CoDeps,
        output_type=[str, DeferredToolRequests],
        instructions=instructions,
        toolsets=toolsets,
        # ToolErrorGuard: every toolset's failures become readable tool errors, never a
        # dead turn. GovernHistory: trimming and windowing before each model request.
        # Telemetry's (instrumentation, rate limits) come first; Instrumentation orders
        # itself outermost either way.
        capabilities=[*capabilities, ToolErrorGuard(), GovernHistory()],
        retries=settings.tool_retries,
        model_settings={
            "max_retries": 0,
            "timeout": settings.request_timeout,
            **(model_settings or {}),
        },
    )
