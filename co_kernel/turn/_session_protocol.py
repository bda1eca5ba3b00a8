"""SessionProtocol: what magics and the status report may use of a kernel session.

The conversation, the model (``SessionModel``), the store, MCP and a few named facts of
the tools' context (workspace, notebook, yolo, todos, rules, recorder, sandbox). Not the
deps object the tools receive: what a magic changes goes through a name that says so.
``ChatSession`` is the implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.messages import ModelMessage

    from ..config import LoadedSettings, Settings
    from ..mcp import McpManager
    from ..models import ModelHandle
    from ..replay import Recorder
    from ..sandbox import SandboxProtocol
    from ..session_state import CoDeps, Todo
    from ..store import SessionInfo, SessionStore, TurnRow
    from ..telemetry import SessionTelemetry
    from ._compact import CompactReport, SessionUsage
    from ._session_model import SessionModel
    from ._session_rules import SessionRules
    from ._tokens import TokenCount

__all__ = ["SessionProtocol"]


class SessionProtocol(Protocol):
    """A kernel session as magics and the status report see it."""

    loaded: LoadedSettings
    """The settings as loaded: values, files in force, problems."""
    history: list[ModelMessage]
    """The whole conversation."""
    turns: list[TurnRow]
    """Its turns, with where each starts in the history and its usage."""
    compaction_usage: SessionUsage
    """Usage of the compaction requests."""
    model: SessionModel
    """The model in use, and the agent built with it."""
    mcp: McpManager
    """The session's MCP servers."""
    telemetry: SessionTelemetry
    """Spans, the audit log and the redactor of the session's secrets."""

    @property
    def settings(self) -> Settings: ...
    def update_settings(self, values: Mapping[str, Any]) -> None: ...
    @property
    def session_id(self) -> str: ...
    @property
    def workspace(self) -> Path: ...
    @property
    def project(self) -> Path | None: ...
    @property
    def notebook_path(self) -> str | None: ...
    @property
    def auto_confirm(self) -> bool: ...
    @auto_confirm.setter
    def auto_confirm(self, value: bool) -> None: ...
    @property
    def todos(self) -> list[Todo]: ...
    @property
    def recorder(self) -> Recorder | None: ...
    @property
    def sandbox(self) -> SandboxProtocol | None: ...
    @property
    def rules(self) -> SessionRules: ...
    @property
    def can_delegate(self) -> bool: ...
    @property
    def store(self) -> SessionStore | None: ...
    @property
    def is_saved(self) -> bool: ...
    @property
    def live_turns(self) -> list[TurnRow]: ...
    def ensure_agent(self) -> tuple[Agent[CoDeps, str | DeferredToolRequests], ModelHandle]: ...
    def clear(self) -> str: ...
    def sent_view(self) -> list[ModelMessage]: ...
    async def prompt_tokens(self, prompt: str | None = None) -> TokenCount: ...
    def resume(self, session_id: str | None) -> SessionInfo: ...
    async def compact(self, focus: str | None = None) -> CompactReport: ...
