"""ChatSession: one kernel session's conversation, model and deps."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
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
        from ..telemetry import SessionTelemetry

        self.loaded = loaded
        self.deps = CoDeps(
            settings=loaded.settings,
            session_id=uuid.uuid4().hex,
            kernel_id=kernel_id,
            workspace=workspace,
        )
        self.telemetry = SessionTelemetry(
            loaded.settings,
            kernel_id=kernel_id,
            settings_files=loaded.files,
        )
        self.history: list[ModelMessage] = []
        self.turns: list[TurnRecord] = []
        self.model_override: str | None = None
        self._handle: ModelHandle | None = None
        self._agent: Agent[CoDeps, Any] | None = None
        self.toolsets: list[ToolsetBuild] = []

    @property
    def settings(self) -> Any:
        return self.deps.settings

    @property
    def model_string(self) -> str | None:
        return self.model_override or self.settings.model

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

            handle = build_model(self.settings, self.model_string, base_dir=self.deps.workspace)
            self.toolsets = collect_toolsets(self.settings)
            toolsets = [b.toolset for b in self.toolsets if b.toolset is not None]
            self._agent = build_agent(
                handle.model, self.settings, toolsets, capabilities=self.telemetry.capabilities()
            )
            self._handle = handle
        return self._agent, self._handle

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
        if cell_id and self.turns and self.turns[-1].cell_id == cell_id:
            # Regenerate: the last turn's cell ran again, so its turn is replaced.
            last = self.turns.pop()
            self.history = self.history[: last.start]
        start = len(self.history)
        self.deps.turn_index = len(self.turns) + 1
        if self.deps.audit is None:
            self.deps.audit = self.telemetry.audit_log()
        for problem in self.telemetry.take_problems():
            frontend.on_notice(problem, "warning")
        with self.telemetry.turn(
            session_id=self.deps.session_id,
            turn=self.deps.turn_index,
            model=handle.label,
            prompt=prompt,
        ) as span:
            result = await run_turn(
                agent,
                prompt,
                deps=self.deps,
                history=self.history,
                frontend=frontend,
                provider=handle.provider,
                model_label=handle.label,
            )
            self.telemetry.audit_unanswered(result, start, self.deps)
            span.finish(result)
        self.history = result.messages
        if len(self.history) > start:
            self.turns.append(TurnRecord(cell_id, prompt, start))
        return result

    def close(self) -> None:
        """Stop what the session started (replay server, spans still to export, audit)."""
        self._drop_agent()
        self.telemetry.close()
        self.deps.audit = None
