"""The model a session talks to: chosen, built on first use, switched with `%model`.

Building it builds the agent with it (``build_session_agent``): the toolsets this model
gets, or why it gets none. A local model's server starts before its first turn; the
bundled default says once that it is one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import parse_model_string, suggested
from ..exceptions import ConfigError
from ..inert import inert_code, inert_text

if TYPE_CHECKING:
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.toolsets import AbstractToolset

    from ..mcp import McpManager, McpServersToolset
    from ..models import ModelHandle
    from ..session_state import CoDeps
    from ..telemetry import SessionTelemetry
    from ..tools import ToolsetBuild
    from ._frontend import FrontendProtocol

__all__ = ["SessionModel"]


class SessionModel:
    """The session's model and the agent built with it."""

    def __init__(self, deps: CoDeps, telemetry: SessionTelemetry, mcp: McpManager) -> None:
        self._deps = deps
        self._telemetry = telemetry
        self._mcp = mcp
        self.override: str | None = None
        """The model chosen with `%model` (or brought back by `%resume`)."""
        self._handle: ModelHandle | None = None
        self._agent: Agent[CoDeps, str | DeferredToolRequests] | None = None
        self.toolsets: list[ToolsetBuild] = []
        """Every integration of the agent built, registered or with why not, for `%tools`."""
        self.tools_unavailable: str | None = None
        """Why the model gets no tools at all (a tiny local model), for `%tools`."""
        self.provider_models: dict[str, list[str]] = {}
        """Model ids providers listed when asked (`%model`), for Tab completion."""
        self._mcp_toolset: McpServersToolset | None = None
        """The one toolset the agent gets for all servers; it offers the connected ones."""
        self._default_notice_shown = False

    @property
    def name(self) -> str | None:
        """The model in use: chosen with `%model`, configured, or the bundled default."""
        from ..models import default_model_string

        settings = self._deps.settings
        return self.override or settings.model or default_model_string(settings)

    @property
    def handle(self) -> ModelHandle | None:
        """The model built for the last turn, if any (for `%status`)."""
        return self._handle

    @property
    def base_url(self) -> str | None:
        """Where the current model's requests go, once it is built."""
        return self._handle.base_url if self._handle is not None else None

    @property
    def context_window(self) -> int:
        """Tokens the model takes: `context_window_tokens`, or less for a local model."""
        window = self._deps.settings.context_window_tokens
        handle = self._handle
        if handle is not None and handle.context_tokens:
            return min(window, handle.context_tokens)
        return window

    def switch(self, value: str) -> str:
        """Switch the model for the rest of the session; returns provider:model."""
        provider, name = parse_model_string(value)
        self.override = f"{provider}:{name}"
        self.drop()
        # What the dropped agent was built with: %tools and %status must not show the old
        # model's toolsets after a switch (the session is built before the first cell).
        self.toolsets = []
        self.tools_unavailable = None
        return self.override

    def drop(self) -> None:
        """Close the model built; the next turn builds it again."""
        if self._handle is not None:
            self._handle.close()
        self._handle = None
        self._agent = None

    def ensure_agent(self) -> tuple[Agent[CoDeps, str | DeferredToolRequests], ModelHandle]:
        """Build the model and agent on first use; raises ConfigError with the fix."""
        if self._agent is None or self._handle is None:
            from ..mcp import McpServersToolset
            from ._agent import build_session_agent

            if self._mcp_toolset is None:
                self._mcp_toolset = McpServersToolset(self._mcp)
            deps = self._deps
            built = build_session_agent(
                deps.settings,
                self.override or deps.settings.model,
                base_dir=deps.workspace,
                capabilities=self._telemetry.capabilities(),
                # Always there, so `%mcp reload` can add servers to a built agent.
                extra_toolsets=[self._mcp_toolset],
                recorder=deps.recorder,
            )
            self._mcp.reserve(built.toolsets)
            self.toolsets = built.toolsets
            self.tools_unavailable = built.tools_unavailable
            self._agent = built.agent
            self._handle = built.handle
        return self._agent, self._handle

    def prewrite_tools(self) -> None:
        """Rewrite the tools' schemas for the model before the first turn (the kernel's
        warm-up): the model keeps each rewrite and its first request reuses the equal ones.

        Each tool's definition as registered, read without running anything of the
        toolset's or the tool's: one that a turn sees otherwise is rewritten then. Only
        Co's own toolsets; MCP servers' tools are known once they connect.
        """
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.toolsets import FunctionToolset

        _, handle = self.ensure_agent()
        tools = [
            tool.tool_def
            for build in self.toolsets
            if isinstance(build.toolset, FunctionToolset)
            for tool in build.toolset.tools.values()
        ]
        handle.model.customize_request_parameters(ModelRequestParameters(function_tools=tools))

    async def offered_tools(self, toolset: AbstractToolset[CoDeps]) -> set[str]:
        """The tools ``toolset`` offers the model now, asked as a turn asks it (a toolset
        may hold tools back); raises ConfigError without a model."""
        from pydantic_ai import RunContext
        from pydantic_ai.usage import RunUsage

        _, handle = self.ensure_agent()
        ctx = RunContext(deps=self._deps, model=handle.model, usage=RunUsage())
        return set(await toolset.get_tools(ctx))

    async def prepare(self, handle: ModelHandle, frontend: FrontendProtocol) -> bool:
        """Start what the model needs (a local server) and say once that it is the default."""
        if handle.local is not None:
            try:
                await handle.local.prepare(frontend)
            except ConfigError as exc:
                frontend.on_notice(str(exc), "error")
                # Rebuilt on the next turn, so a fixed file or setting is picked up.
                self.drop()
                return False
        if handle.default and not self._default_notice_shown:
            self._default_notice_shown = True
            frontend.on_notice(_default_notice(handle), "info")
        return True


def _default_notice(handle: ModelHandle) -> str:
    if handle.provider == "ollama":
        return (
            f"No model is configured, and an Ollama server answers at "
            f"{inert_code((handle.base_url or '').removesuffix('/v1'))} "
            f"(`OLLAMA_HOST`): Co is using its model **{inert_text(handle.label)}**. Choose another "
            "with `%model`, or set `model` in settings to keep one."
        )
    name = handle.local.spec.label if handle.local is not None else handle.label
    return (
        f"No model is configured, so Co is using **{inert_text(name)}**, a very small local model "
        "that runs offline on this machine: expect short, simple answers and no tools. "
        "For a better assistant choose another model with `%model`, e.g. "
        "`%model ollama:qwen2.5-coder:1.5b`, `%model local:/path/to/model.gguf`, or "
        f"`%model {suggested('gemini')}` with `GEMINI_API_KEY` set."
    )
