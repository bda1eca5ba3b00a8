"""Shared plumbing of the frontends: approval strategies, their wording and no-op defaults.

An ``Approver`` asks one question and returns the person's answer. The notebook asks with
a widget card (``_widgets``), the console with a stdin ``input_request`` (``_stdin``), and
a headless run answers from the ``approval_mode`` policy. What they share lives here: the
wording of a request and of each decision, the timeout, and reading a typed answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from ..permissions import (
    ALWAYS_ALLOWED,
    APPROVED,
    APPROVED_ALL,
    DENIED,
    INTERRUPTED,
    RECORDED,
    SAFE_PREFIX,
    TIMED_OUT,
    YOLO,
)
from ..turn import (
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
from ._controls import hidden_characters, hidden_warning, mark_hidden, terminal_safe
from ._footer import footer_enabled, format_footer
from ._terminal import colour_diff
from ._toolcard import format_args

__all__ = [
    "DECISION_TEXT",
    "Approver",
    "BaseFrontend",
    "approval_text",
    "parse_answer",
    "policy_approver",
    "wait_for_answer",
]

Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]

DECISION_TEXT: dict[str, str] = {
    APPROVED: "✅ Approved",
    APPROVED_ALL: "✅ Approved all: later calls in this session run without asking",
    DENIED: "🚫 Denied",
    TIMED_OUT: "🚫 Timed out (denied)",
    INTERRUPTED: "⏹ Interrupted",
    YOLO: "✅ Approved automatically (session yolo)",
    SAFE_PREFIX: "✅ Approved automatically (safe command)",
    ALWAYS_ALLOWED: "✅ Always allowed: a session rule now approves such calls",
    APPROVED + RECORDED: "✅ Approved by a recorded decision (replay_approvals)",
    APPROVED_ALL + RECORDED: "✅ Approved all by a recorded decision (replay_approvals)",
    ALWAYS_ALLOWED + RECORDED: "✅ Always allowed by a recorded decision (replay_approvals)",
    DENIED + RECORDED: "🚫 Denied by a recorded decision (replay_approvals)",
}
"""How each decision label reads on a card or a console line."""

_ANSWERS: dict[str, ApprovalDecision] = {
    "y": "approve",
    "yes": "approve",
    "n": "deny",
    "no": "deny",
    "a": "approve_all",
    "all": "approve_all",
}


def parse_answer(text: str) -> ApprovalDecision | None:
    """A typed answer (y/n/a, yes/no/all, any case) as a decision; None if unreadable."""
    return _ANSWERS.get(text.strip().lower())


def approval_text(call: ToolCallView, *, colour: bool = False) -> str:
    """The question as plain text: tool, pretty arguments and the detail (e.g. a diff).

    The arguments and the detail come from the model, a tool or a file: their control
    characters are shown, not obeyed (no colours either, so nothing in them looks like
    Co's own styling), and hidden characters are marked, with a warning line at the end.
    ``colour``: a diff in the detail is then coloured by Co (a terminal that shows colours).
    """
    who = f"Co's subagent {call.agent}" if call.agent else "Co"
    lines = [f"{who} wants to run {call.name}:"]
    lines += ["    " + line for line in format_args(call.args).split("\n")]
    head = len(lines)
    if call.detail:
        lines.append("")
        # split, not splitlines: a lone CR or a form feed stays in its line to be shown.
        lines += call.detail.rstrip("\n").split("\n")
    text = "\n".join(lines)
    warning = hidden_warning(hidden_characters(text))
    text = mark_hidden(terminal_safe(text, keep_sgr=False))
    if colour and call.detail:
        # Sanitised first, coloured after: the only sequences in the question are Co's.
        # Sanitising keeps every newline, so the detail starts where it did.
        shown = text.split("\n")
        text = "\n".join(shown[: head + 1] + colour_diff(shown[head + 1 :]))
    return text + "\n" + (warning + "\n" if warning else "")


async def wait_for_answer(
    answer: Awaitable[ApprovalDecision], timeout: float | None
) -> ApprovalDecision:
    """Await an answer; ``timed_out`` after ``timeout`` seconds. Cancellation propagates."""
    if timeout is None:
        return await answer
    try:
        return await asyncio.wait_for(answer, timeout)
    except TimeoutError:
        return "timed_out"


def policy_approver(mode: str) -> Approver:
    """Decide without asking, for runs nobody watches (nbclient, nbval, papermill)."""

    async def decide(request: ApprovalRequest) -> ApprovalDecision:
        return "approve" if mode == "approve" else "deny"

    return decide


class BaseFrontend:
    """No-op defaults; subclasses override what they show."""

    approver: Approver
    kind: str = "base"
    """notebook, console or headless: decides whether the footer shows by default."""
    footer_mode: str = "auto"
    """The ``show_footer`` setting (always, never, auto); the dispatcher sets it."""

    def __init__(self, approver: Approver) -> None:
        self.approver = approver
        self.failures: list[str] = []
        """The turn's error notices: the cell shows them once, as its ``error`` output."""

    def footer(self, summary: TurnSummary) -> str | None:
        """The turn's footer line, or None when this frontend does not show one."""
        if not footer_enabled(self.footer_mode, self.kind):
            return None
        return format_footer(summary)

    def on_text_delta(self, delta: str) -> None:
        pass

    def on_text_commit(self) -> None:
        pass

    def on_thinking_delta(self, delta: str) -> None:
        pass

    def on_thinking_commit(self) -> None:
        pass

    def on_tool_call(self, call: ToolCallView) -> None:
        pass

    def on_tool_result(self, result: ToolResultView) -> None:
        pass

    def on_status(self, message: str) -> None:
        pass

    def clear_status(self) -> None:
        pass

    def on_notice(self, markdown: str, level: NoticeLevel = "info") -> None:
        # An error notice ends the cell: the dispatcher turns it into the error output.
        if level == "error":
            self.failures.append(markdown)
        else:
            self.show_notice(markdown, level)

    def show_notice(self, markdown: str, level: NoticeLevel) -> None:
        pass

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return await self.approver(request)

    def on_todos(self, todos: Sequence[TodoView]) -> None:
        pass

    def start_subagent(self, view: SubagentView) -> FrontendProtocol:
        # Each frontend shows a subagent its own way: no default to inherit.
        raise NotImplementedError

    def on_turn_end(self, summary: TurnSummary) -> None:
        pass

    def cleanup(self) -> None:
        pass


NOTICE_PREFIX = {"info": "ℹ️", "warning": "⚠️", "error": "❌"}
