"""nbclient, nbval, papermill: no live updates, so one final output per part."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..inert import inert_code
from ..permissions import decision_label
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
from ._base import NOTICE_PREFIX, BaseFrontend, policy_approver
from ._footer import footer_bundle
from ._publisher import Publisher
from ._subagent import SubagentFrontend, SubagentLog
from ._todos import todos_bundle
from ._toolcard import short_args, tool_call_bundle

__all__ = ["HeadlessFrontend"]


class HeadlessFrontend(BaseFrontend):
    """Final ``display_data`` outputs only, so strict nbval comparisons are stable."""

    kind = "headless"

    def __init__(self, publisher: Publisher, approval_mode: str) -> None:
        super().__init__(policy_approver(approval_mode))
        self._pub = publisher
        self._mode = approval_mode
        self._text = ""
        self._calls: dict[str, ToolCallView] = {}
        self._todos: list[TodoView] | None = None
        """Calls not shown yet, in the order the model made them."""
        self._results: dict[str, ToolResultView] = {}
        """Results waiting for an earlier call's card to be shown first."""

    def on_text_delta(self, delta: str) -> None:
        self._text += delta

    def on_text_commit(self) -> None:
        if self._text.strip():
            self._pub.display({"text/markdown": self._text, "text/plain": self._text})
        self._text = ""

    def on_tool_call(self, call: ToolCallView) -> None:
        self.on_text_commit()
        self._calls[call.call_id] = call  # shown once, with its result (no live updates)

    def on_tool_result(self, result: ToolResultView) -> None:
        if result.call_id not in self._calls:
            self._calls[result.call_id] = ToolCallView(result.call_id, result.name, None)
        # No duration on the card: it differs on every run, and a headless notebook's
        # outputs are compared as they are (nbval; its sanitizers cannot reach JSON).
        self._results[result.call_id] = replace(result, duration=None)
        self._show_finished()

    def _show_finished(self) -> None:
        """Cards in call order: parallel calls finish in any order, saved outputs must not."""
        while self._calls:
            call_id = next(iter(self._calls))
            result = self._results.pop(call_id, None)
            if result is None:
                return
            self._show_result(self._calls.pop(call_id), result)

    def _show_result(self, call: ToolCallView, result: ToolResultView) -> None:
        """The card, then what the call displayed (a figure, a table) under it."""
        self._pub.display(tool_call_bundle(call, result))
        for output in result.outputs:
            self._pub.display(output["data"], output.get("metadata"))

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.on_text_commit()
        decision = await self.approver(request)
        label = decision_label(decision)
        call = request.call
        call.decision = label
        self._calls[call.call_id] = call
        why = (
            "a headless run cannot ask; set `approval_mode` to `approve` to allow such calls"
            if self._mode == "ask"
            else f"headless run, `approval_mode = {self._mode}`"
        )
        who = f"{call.agent} › " if call.agent else ""
        text = (
            f"Approval needed for {inert_code(f'{who}{call.name}({short_args(call.args)})')}: "
            f"**{label}** ({why})"
        )
        self._pub.display({"text/markdown": text, "text/plain": text})
        return decision

    def on_todos(self, todos: Sequence[TodoView]) -> None:
        self._todos = list(todos)  # no live updates: the final list, once, at the end

    def start_subagent(self, view: SubagentView) -> FrontendProtocol:
        self.on_text_commit()

        def render(log: SubagentLog) -> None:
            self._pub.display(log.bundle())

        return SubagentFrontend(self, view, render, live=False)

    def show_notice(self, markdown: str, level: NoticeLevel) -> None:
        self.on_text_commit()
        text = f"{NOTICE_PREFIX[level]} {markdown}"
        self._pub.display({"text/markdown": text, "text/plain": text})

    def on_turn_end(self, summary: TurnSummary) -> None:
        self.on_text_commit()
        if summary.interrupted:
            for call_id, call in self._calls.items():
                result = self._results.pop(call_id, None)
                if result is not None:
                    self._show_result(call, result)
                else:
                    self._pub.display(tool_call_bundle(call, state="interrupted"))
            self._calls.clear()
        if self._todos is not None:
            self._pub.display(todos_bundle(self._todos))
        line = self.footer(summary)
        if line:
            self._pub.display(footer_bundle(line))
