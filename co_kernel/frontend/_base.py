"""Shared plumbing of the frontends: approval strategies and no-op defaults."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..turn._frontend import (
    ApprovalDecision,
    ApprovalRequest,
    NoticeLevel,
    ToolCallView,
    ToolResultView,
    TurnSummary,
)
from ._footer import footer_enabled, format_footer

__all__ = ["Approver", "BaseFrontend", "policy_approver"]

Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


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
        pass

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        return await self.approver(request)

    def on_turn_end(self, summary: TurnSummary) -> None:
        pass

    def cleanup(self) -> None:
        pass


NOTICE_PREFIX = {"info": "ℹ️", "warning": "⚠️", "error": "❌"}
