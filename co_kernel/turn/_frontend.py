"""The protocol through which a turn talks to whatever displays it.

The core (``turn/``) only knows this protocol; ``frontend/`` holds the notebook,
console and headless implementations, so a turn runs the same whatever shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ..permissions import ApprovalDecision

if TYPE_CHECKING:
    from ..telemetry import CostSum

__all__ = [
    "ApprovalDecision",
    "ApprovalRequest",
    "FrontendProtocol",
    "NoticeLevel",
    "SubagentView",
    "TodoStatus",
    "TodoView",
    "ToolCallView",
    "ToolResultView",
    "TurnSummary",
]

NoticeLevel = Literal["info", "warning", "error"]


@dataclass
class ToolCallView:
    """A tool call as the person sees it."""

    call_id: str
    """The model's id for the call; ties the result to the card."""
    name: str
    """Tool name."""
    args: dict[str, Any] | str | None
    """Arguments as the model sent them (a JSON string, a dict or nothing)."""
    needs_approval: bool = False
    """Whether the call waits for a decision before it runs."""
    detail: str | None = None
    """Extra text for the approval card, e.g. a unified diff of a file edit."""
    parts: list[str] | None = None
    """One diff per cell when the call touches several cells: where the page can take the
    choice, the person accepts or rejects each (``ApprovalRequest.accepted``)."""
    decision: str | None = None
    """How an approval call was decided before it runs: approved, yolo, safe-prefix, ..."""
    agent: str | None = None
    """The subagent that made the call; None for Co itself."""


@dataclass
class ToolResultView:
    """What came back from a tool call."""

    call_id: str
    """The call this answers."""
    name: str
    """Tool name."""
    content: Any
    """The result sent back to the model."""
    status: Literal["ok", "error", "denied", "interrupted"] = "ok"
    """How the call ended."""
    duration: float | None = None
    """Seconds the tool ran, when known."""
    decision: str | None = None
    """How the call was allowed: auto, approved, denied, yolo, safe-prefix, ..."""
    outputs: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """What the call displayed, drawn under its card: ``{"data": bundle, "metadata": ...}``."""


@dataclass
class ApprovalRequest:
    """One side-effectful call that needs a yes or no."""

    call: ToolCallView
    """The call in question."""
    timeout: float | None = None
    """Seconds after which the request counts as denied; None waits."""
    rule: str | None = None
    """The narrowest permission rule covering the call, which "Always allow" adds."""
    accepted: list[int] | None = None
    """The parts of ``call.parts`` (from 0) the person accepted with an approval, set by the
    approver when they chose; None: the whole call. All rejected comes back as ``deny``
    with ``accepted == []``."""


@dataclass
class TurnSummary:
    """How a turn ended, for the footer and the interrupted marker."""

    model: str
    """provider:model that answered."""
    input_tokens: int = 0
    """Prompt tokens over all requests of the turn."""
    output_tokens: int = 0
    """Completion tokens over all requests of the turn."""
    requests: int = 0
    """Model requests made."""
    duration: float = 0.0
    """Wall time of the turn in seconds."""
    interrupted: bool = False
    """The person stopped the turn."""
    error: str | None = None
    """Why the turn ended early, when it did."""
    extra: dict[str, Any] = field(default_factory=dict[str, Any])
    """Anything a frontend may show beside the footer."""
    cost: CostSum | None = None
    """What the turn's tokens cost (None: not priced, e.g. a summary made by hand)."""


TodoStatus = Literal["pending", "in_progress", "completed"]


@dataclass(frozen=True)
class TodoView:
    """One item of the agent's checklist."""

    content: str
    """What is to be done."""
    status: TodoStatus
    """pending, in_progress or completed."""


@dataclass(frozen=True)
class SubagentView:
    """A subagent run started by a ``delegate_task`` call."""

    call_id: str
    """The ``delegate_task`` call the run answers."""
    name: str
    """The subagent's name."""
    task: str
    """The task it was given."""
    model: str
    """provider:model it runs on."""
    depth: int = 1
    """1 for a subagent of Co, 2 for a subagent of a subagent, ..."""


@runtime_checkable
class FrontendProtocol(Protocol):
    """Display and interaction for one cell's turn."""

    def on_text_delta(self, delta: str) -> None:
        """More answer text arrived."""

    def on_text_commit(self) -> None:
        """The current text part is complete (a tool call or the end follows)."""

    def on_thinking_delta(self, delta: str) -> None:
        """More reasoning text arrived (shown only when verbose)."""

    def on_thinking_commit(self) -> None:
        """The current reasoning part is complete."""

    def on_tool_call(self, call: ToolCallView) -> None:
        """The model called a tool."""

    def on_tool_result(self, result: ToolResultView) -> None:
        """A tool call finished, was denied or was interrupted."""

    def on_status(self, message: str) -> None:
        """A transient status line (retrying, compacting); the next status replaces it."""

    def clear_status(self) -> None:
        """Remove the transient status line."""

    def on_notice(self, markdown: str, level: NoticeLevel = "info") -> None:
        """A lasting message in the cell: an error, a warning, a hint."""

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the person about one call; cancellation means the turn was interrupted."""
        ...

    def on_todos(self, todos: Sequence[TodoView]) -> None:
        """The agent's checklist changed (shown once, then updated in place where possible)."""

    def start_subagent(self, view: SubagentView) -> FrontendProtocol:
        """A subagent starts working: the frontend its run reports to.

        Its text and tool calls go into one collapsible output; its approvals are asked
        through this frontend; its ``on_turn_end`` closes the output.
        """
        ...

    def on_turn_end(self, summary: TurnSummary) -> None:
        """The turn is over: flush everything, show the footer."""

    def cleanup(self) -> None:
        """Tear down timers and widgets; safe to call twice."""
