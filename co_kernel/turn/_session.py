"""ChatSession: one kernel session's conversation, model and deps."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..exceptions import ConfigError
from ._deps import CoDeps
from ._providers import build_model, parse_model_string
from ._run import TurnResult, run_turn

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage

    from ..config import LoadedSettings
    from ..tools import ToolsetBuild
    from ._frontend import FrontendProtocol
    from ._providers import ModelHandle

__all__ = ["ChatSession", "TurnRecord"]


@dataclass
class TurnRecord:
    """Where a turn sits in the history, so re-running its cell can replace it."""

    cell_id: str | None
    """JupyterLab's cellId of the cell that ran the turn."""
    prompt: str
    """What the person asked."""
    start: int
    """len(history) before the turn."""


class ChatSession:
    """The conversation of one kernel session and what it needs to run turns."""

    def __init__(self, loaded: LoadedSettings, *, workspace: Path, kernel_id: str) -> None:
        self.loaded = loaded
        self.deps = CoDeps(
            settings=loaded.settings,
            session_id=uuid.uuid4().hex,
            kernel_id=kernel_id,
            workspace=workspace,
        )
        self.history: list[ModelMessage] = []
        self.turns: list[TurnRecord] = []
        self.model_override: str | None = None
        self._handle: ModelHandle | None = None
        self._agent: Agent[CoDeps, Any] | None = None
        self.toolsets: list[ToolsetBuild] = []
        self.tools_unavailable: str | None = None
        """Why the model gets no tools at all (a tiny local model), for `%tools`."""
        self._default_notice_shown = False

    @property
    def settings(self) -> Any:
        return self.deps.settings

    @property
    def model_string(self) -> str | None:
        """The model in use: chosen with `%model`, configured, or the bundled default."""
        from ._providers import default_model_string

        return self.model_override or self.settings.model or default_model_string(self.settings)

    @property
    def model_handle(self) -> ModelHandle | None:
        """The model built for the last turn, if any (for `%status`)."""
        return self._handle

    def set_model(self, value: str) -> str:
        """Switch the model for the rest of the session; returns provider:model."""
        provider, name = parse_model_string(value)
        self.model_override = f"{provider}:{name}"
        self._drop_agent()
        return self.model_override

    def _drop_agent(self) -> None:
        if self._handle is not None:
            self._handle.close()
        self._handle = None
        self._agent = None

    def ensure_agent(self) -> tuple[Agent[CoDeps, Any], ModelHandle]:
        """Build the model and agent on first use; raises ConfigError with the fix."""
        if self._agent is None or self._handle is None:
            from ..tools import collect_toolsets
            from ._agent import build_agent

            configured = self.model_override or self.settings.model
            handle = build_model(self.settings, configured, base_dir=self.deps.workspace)
            self.toolsets = collect_toolsets(self.settings)
            self.tools_unavailable = None
            if not handle.supports_tools:
                self.tools_unavailable = (
                    f"`{handle.label}` has no tool support, so Co offers it no tools. "
                    "Choose a tool-capable model with `%model` to use them."
                )
                self.toolsets = [
                    replace(b, toolset=None, reason=b.reason or self.tools_unavailable)
                    for b in self.toolsets
                ]
            toolsets = [b.toolset for b in self.toolsets if b.toolset is not None]
            self._agent = build_agent(
                handle.model,
                self.settings,
                toolsets,
                compact_prompt=handle.compact_prompt,
                model_settings=handle.model_settings,
            )
            self._handle = handle
        return self._agent, self._handle

    async def _prepare(self, handle: ModelHandle, frontend: FrontendProtocol) -> bool:
        """Start what the model needs (a local server) and say once that it is the default."""
        if handle.local is not None:
            try:
                await handle.local.prepare(frontend)
            except ConfigError as exc:
                frontend.on_notice(str(exc), "error")
                # Rebuilt on the next turn, so a fixed file or setting is picked up.
                self._drop_agent()
                return False
        if handle.default and not self._default_notice_shown:
            self._default_notice_shown = True
            frontend.on_notice(_default_notice(handle), "info")
        return True

    def clear(self) -> None:
        """Forget the conversation (the model and deps stay)."""
        self.history = []
        self.turns = []

    def check_prompt(self, prompt: str) -> str | None:
        """A readable refusal for a prompt Co will not send, or None."""
        limit = self.settings.max_prompt_chars
        if len(prompt) > limit:
            return (
                f"This cell has {len(prompt):,} characters; Co sends at most {limit:,} per prompt "
                "(setting `max_prompt_chars`). Save large text to a file in the notebook's "
                "folder and ask Co to read it instead. The conversation is unchanged."
            )
        return None

    async def run_prompt(
        self, prompt: str, *, cell_id: str | None, frontend: FrontendProtocol
    ) -> TurnResult | None:
        """Run one turn; re-running the last turn's cell replaces that turn."""
        refusal = self.check_prompt(prompt)
        if refusal:
            frontend.on_notice(refusal, "error")
            return None
        try:
            agent, handle = self.ensure_agent()
        except ConfigError as exc:
            frontend.on_notice(str(exc), "error")
            return None
        if not await self._prepare(handle, frontend):
            return None
        if cell_id and self.turns and self.turns[-1].cell_id == cell_id:
            # Regenerate: the last turn's cell ran again, so its turn is replaced.
            last = self.turns.pop()
            self.history = self.history[: last.start]
        start = len(self.history)
        self.deps.turn_index = len(self.turns) + 1
        if self.deps.audit is None:
            from ..telemetry import AuditLog, telemetry_db_path

            self.deps.audit = AuditLog(telemetry_db_path())
        result = await run_turn(
            agent,
            prompt,
            deps=self.deps,
            history=self.history,
            frontend=frontend,
            provider=handle.provider,
            model_label=handle.label,
        )
        self.history = result.messages
        if len(self.history) > start:
            self.turns.append(TurnRecord(cell_id, prompt, start))
        return result

    def close(self) -> None:
        """Stop what the session started (replay or local model server, audit connection)."""
        self._drop_agent()
        if self.deps.audit is not None:
            self.deps.audit.close()


def _default_notice(handle: ModelHandle) -> str:
    name = handle.local.spec.label if handle.local is not None else handle.label
    return (
        f"No model is configured, so Co is using **{name}**, a very small local model "
        "that runs offline on this machine: expect short, simple answers and no tools. "
        "For a better assistant choose another model with `%model`, e.g. "
        "`%model ollama:qwen2.5-coder:1.5b`, `%model local:/path/to/model.gguf`, or "
        "`%model gemini:gemini-2.5-flash` with `GEMINI_API_KEY` set."
    )
