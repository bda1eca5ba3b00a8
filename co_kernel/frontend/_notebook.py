"""JupyterLab: Markdown streamed through display updates, cards for tool calls."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..permissions import INTERRUPTED, decision_label, is_refusal
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
from ._base import NOTICE_PREFIX, Approver, BaseFrontend
from ._footer import footer_bundle
from ._markdown import MarkdownStream
from ._publisher import Publisher
from ._safe_html import JOINS_KEY
from ._subagent import SubagentFrontend, SubagentLog
from ._todos import todos_bundle
from ._toolcard import tool_call_bundle

__all__ = ["NotebookFrontend"]


@dataclass
class _Card:
    """A tool call's output in the cell."""

    display_id: str
    """The output's display id; every change is an update of it."""
    call: ToolCallView
    """The call, with its decision once there is one."""
    state: str
    """running, waiting, ok, error, denied or interrupted."""
    result: ToolResultView | None = None
    """What came back, once it did."""


HTML_PER_CHAR = 1.3
"""Bytes of rendered HTML per character of Markdown (a 20 KB answer of prose, lists, tables
and code in benchmarks/bench_streaming.py: 1.30)."""


def _wire_cost(segment: str, final: bool) -> int:
    """What a streamed update sends: the HTML, and with a segment's last one its source."""
    return int(len(segment) * HTML_PER_CHAR) + (len(segment) if final else 0)


class NotebookFrontend(BaseFrontend):
    """A frontend that renders live updates (JupyterLab, Notebook 7)."""

    kind = "notebook"

    def __init__(
        self,
        publisher: Publisher,
        approver: Approver,
        *,
        max_rate: float = 20.0,
        call_later: Callable[[float, Callable[[], None]], Any] | None = None,
    ) -> None:
        super().__init__(approver)
        self._pub = publisher
        self._max_rate = max_rate
        self._call_later = call_later
        self._stream: MarkdownStream | None = None
        self._thinking = ""
        self._thinking_id: str | None = None
        self._calls: dict[str, _Card] = {}
        self._status_id: str | None = None
        self._todos_id: str | None = None
        self.streams: list[MarkdownStream] = []

    # -- text ----------------------------------------------------------------

    def _publish_markdown(
        self,
        display_id: str,
        text: str,
        update: bool,
        final: bool,
        definitions: str = "",
        joins: tuple[bool, bool] = (False, False),
    ) -> int | None:
        # The page shows the HTML the publisher renders; the source goes with a segment's
        # last version only (saved with the notebook, for clients that read text), which
        # keeps each streamed update near the size of its Markdown (benchmarks/bench_streaming).
        rendered = f"{text}\n\n{definitions}" if definitions else text
        data: dict[str, Any] = {"text/markdown": rendered}
        if any(joins):
            data[JOINS_KEY] = joins
        if final:
            data["text/plain"] = text
        return self._pub.display(data, display_id=display_id, update=update)

    def on_text_delta(self, delta: str) -> None:
        if self._stream is None:
            self._stream = MarkdownStream(
                self._publish_markdown,
                max_rate=self._max_rate,
                call_later=self._call_later,
                cost=_wire_cost,
            )
            self.streams.append(self._stream)
        self._stream.feed(delta)

    def on_text_commit(self) -> None:
        if self._stream is not None:
            self._stream.commit()
            self._stream = None

    # -- thinking (verbose only; the turn does not call these otherwise) -------

    def on_thinking_delta(self, delta: str) -> None:
        self._thinking += delta
        self._show_thinking()

    def on_thinking_commit(self) -> None:
        self._show_thinking()
        self._thinking, self._thinking_id = "", None

    def _show_thinking(self) -> None:
        import html

        body = f"<details><summary>💭 Thinking</summary><pre>{html.escape(self._thinking)}</pre></details>"
        update = self._thinking_id is not None
        self._thinking_id = self._thinking_id or uuid.uuid4().hex
        self._pub.display(
            {"text/html": body, "text/plain": "[thinking]"},
            display_id=self._thinking_id,
            update=update,
        )

    # -- tools ------------------------------------------------------------------
    # One card per call id, created on first sight and updated in place: the call event,
    # the approval question, the decision and the result all land on the same output.

    def _show_card(self, call: ToolCallView, state: str) -> None:
        card = self._calls.get(call.call_id)
        if card is None:
            self.on_text_commit()
            card = self._calls[call.call_id] = _Card(uuid.uuid4().hex, call, state)
            self._pub.display(tool_call_bundle(call, state=state), display_id=card.display_id)
            return
        card.call, card.state = call, state
        self._refresh(card)

    def _refresh(self, card: _Card) -> None:
        bundle = tool_call_bundle(card.call, card.result, state=card.state)
        self._pub.display(bundle, display_id=card.display_id, update=True)

    def on_tool_call(self, call: ToolCallView) -> None:
        self._show_card(call, "denied" if is_refusal(call.decision) else "running")

    def on_tool_result(self, result: ToolResultView) -> None:
        if result.call_id not in self._calls:
            self._show_card(ToolCallView(result.call_id, result.name, None), "running")
        card = self._calls[result.call_id]
        card.result, card.state = result, result.status
        if result.decision:
            card.call.decision = result.decision
        self._refresh(card)
        for output in result.outputs:
            # What the call displayed (a figure, a table), under its card, as IPython draws it.
            self._pub.display(output["data"], output.get("metadata"), display_id=uuid.uuid4().hex)

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        call = request.call
        self.on_text_commit()
        self._show_card(call, "waiting")
        try:
            choice = await self.approver(request)
        except asyncio.CancelledError:
            call.decision = INTERRUPTED
            self._show_card(call, "interrupted")
            raise
        call.decision = decision_label(choice)
        self._show_card(call, "denied" if is_refusal(call.decision) else "running")
        return choice

    # -- checklist and subagents ---------------------------------------------------

    def on_todos(self, todos: Sequence[TodoView]) -> None:
        # One output per cell, created where the first list was written, then updated.
        self.on_text_commit()
        update = self._todos_id is not None
        self._todos_id = self._todos_id or uuid.uuid4().hex
        self._pub.display(todos_bundle(todos), display_id=self._todos_id, update=update)

    def start_subagent(self, view: SubagentView) -> FrontendProtocol:
        self.on_text_commit()
        display_id = uuid.uuid4().hex
        shown = False

        def render(log: SubagentLog) -> None:
            nonlocal shown
            self._pub.display(log.bundle(), display_id=display_id, update=shown)
            shown = True

        return SubagentFrontend(
            self, view, render, live=True, max_rate=self._max_rate, call_later=self._call_later
        )

    # -- status and notices -----------------------------------------------------

    def on_status(self, message: str) -> None:
        update = self._status_id is not None
        self._status_id = self._status_id or uuid.uuid4().hex
        data = {"text/markdown": f"*{message}*", "text/plain": message}
        self._pub.display(data, display_id=self._status_id, update=update)

    def clear_status(self) -> None:
        if self._status_id is not None:
            self._pub.display({"text/plain": ""}, display_id=self._status_id, update=True)
            self._status_id = None

    def show_notice(self, markdown: str, level: NoticeLevel) -> None:
        self.on_text_commit()
        text = f"{NOTICE_PREFIX[level]} {markdown}"
        self._pub.display({"text/markdown": text, "text/plain": text})

    def on_turn_end(self, summary: TurnSummary) -> None:
        self.on_text_commit()
        self.clear_status()
        if summary.interrupted:
            for card in self._calls.values():
                if card.result is None and card.state in ("running", "waiting"):
                    card.state = "interrupted"
                    self._refresh(card)
        line = self.footer(summary)
        if line:
            # Its own display id, like every other output of a notebook turn.
            self._pub.display(footer_bundle(line), display_id=uuid.uuid4().hex)

    def cleanup(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
