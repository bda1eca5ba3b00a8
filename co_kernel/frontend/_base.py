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

    def __init__(self, approver: Approver) -> None:
        self.approver = approver

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
