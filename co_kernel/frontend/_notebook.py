"""JupyterLab: Markdown streamed through display updates, cards for tool calls."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from ..turn._frontend import (
    ApprovalDecision,
    ApprovalRequest,
    NoticeLevel,
    ToolCallView,
    ToolResultView,
    TurnSummary,
)
from ._base import NOTICE_PREFIX, Approver, BaseFrontend
from ._footer import footer_bundle
from ._markdown import MarkdownStream
from ._publisher import Publisher
from ._toolcard import tool_call_bundle

__all__ = ["NotebookFrontend"]


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
        self._calls: dict[str, tuple[str, ToolCallView]] = {}
        self._status_id: str | None = None
        self.streams: list[MarkdownStream] = []

    # -- text ----------------------------------------------------------------

    def _publish_markdown(self, display_id: str, text: str, update: bool) -> None:
        self._pub.display({"text/markdown": text}, display_id=display_id, update=update)

    def on_text_delta(self, delta: str) -> None:
        if self._stream is None:
            self._stream = MarkdownStream(
                self._publish_markdown, max_rate=self._max_rate, call_later=self._call_later
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

    def on_tool_call(self, call: ToolCallView) -> None:
        self.on_text_commit()
        display_id = uuid.uuid4().hex
        self._calls[call.call_id] = (display_id, call)
        self._pub.display(tool_call_bundle(call), display_id=display_id)

    def on_tool_result(self, result: ToolResultView) -> None:
        entry = self._calls.get(result.call_id)
        if entry is None:
            call = ToolCallView(result.call_id, result.name, None)
            self.on_tool_call(call)
            entry = self._calls[result.call_id]
        display_id, call = entry
        self._pub.display(tool_call_bundle(call, result), display_id=display_id, update=True)

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.on_text_commit()
        return await self.approver(request)

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

    def on_notice(self, markdown: str, level: NoticeLevel = "info") -> None:
        self.on_text_commit()
        text = f"{NOTICE_PREFIX[level]} {markdown}"
        self._pub.display({"text/markdown": text, "text/plain": text})

    def on_turn_end(self, summary: TurnSummary) -> None:
        self.on_text_commit()
        self.clear_status()
        if summary.interrupted:
            self.on_notice(
                "*Interrupted.* The partial answer above is kept; carry on in the next cell.",
                "warning",
            )
        line = self.footer(summary)
        if line:
            # Its own display id, like every other output of a notebook turn.
            self._pub.display(footer_bundle(line), display_id=uuid.uuid4().hex)

    def cleanup(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
