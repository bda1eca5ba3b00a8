"""A frontend that records every call: for tests, and for a subagent run outside a turn."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ._frontend import (
    ApprovalDecision,
    ApprovalRequest,
    FrontendProtocol,
    NoticeLevel,
    SubagentView,
    TodoView,
    ToolCallView,
    ToolResultView,
    TurnSummary,
)

__all__ = ["RecordingFrontend"]


class RecordingFrontend:
    """Records events as (method, payload) tuples; answers approvals from a script."""

    def __init__(self, decisions: Iterable[ApprovalDecision] = ()) -> None:
        self.events: list[tuple[str, Any]] = []
        self._decisions = list(decisions)

    @property
    def text(self) -> str:
        return "".join(p for name, p in self.events if name == "text_delta")

    def on_text_delta(self, delta: str) -> None:
        self.events.append(("text_delta", delta))

    def on_text_commit(self) -> None:
        self.events.append(("text_commit", None))

    def on_thinking_delta(self, delta: str) -> None:
        self.events.append(("thinking_delta", delta))

    def on_thinking_commit(self) -> None:
        self.events.append(("thinking_commit", None))

    def on_tool_call(self, call: ToolCallView) -> None:
        self.events.append(("tool_call", call))

    def on_tool_result(self, result: ToolResultView) -> None:
        self.events.append(("tool_result", result))

    def on_status(self, message: str) -> None:
        self.events.append(("status", message))

    def clear_status(self) -> None:
        self.events.append(("clear_status", None))

    def on_notice(self, markdown: str, level: NoticeLevel = "info") -> None:
        self.events.append(("notice", (level, markdown)))

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.events.append(("approval", request))
        return self._decisions.pop(0) if self._decisions else "deny"

    def on_todos(self, todos: Sequence[TodoView]) -> None:
        self.events.append(("todos", list(todos)))

    def start_subagent(self, view: SubagentView) -> FrontendProtocol:
        child = RecordingFrontend()
        child._decisions = self._decisions  # one script of answers for the whole cell
        self.events.append(("subagent", (view, child)))
        return child

    def on_turn_end(self, summary: TurnSummary) -> None:
        self.events.append(("turn_end", summary))

    def cleanup(self) -> None:
        self.events.append(("cleanup", None))
