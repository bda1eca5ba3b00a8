"""A subagent's progress in the cell: one collapsible output, its approvals in the open.

``SubagentLog`` keeps what the subagent did (text, tool calls, checklist, notices) and
renders it as a MIME bundle: ``text/html`` ``<details>`` (open while it works, closed
when it is done), ``text/plain`` and ``application/vnd.co.subagent+json``.

``SubagentFrontend`` is the frontend a subagent's run reports to. A notebook re-renders
the block in place (one display id, throttled while text streams); a headless run shows
it once, finished; a console (``ConsoleSubagentFrontend``) prints indented lines. In all
three, a call that needs approval is also handed to the cell's own frontend, labelled
with the subagent, so the person is asked the same way as for Co's own calls.
"""

from __future__ import annotations

import asyncio
import html
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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
from ._base import NOTICE_PREFIX, BaseFrontend
from ._controls import mark_hidden, terminal_safe
from ._publisher import Publisher
from ._todos import todos_text
from ._toolcard import short_args

__all__ = ["MIME_SUBAGENT", "ConsoleSubagentFrontend", "SubagentFrontend", "SubagentLog"]

MIME_SUBAGENT = "application/vnd.co.subagent+json"
_ICONS = {
    "running": "⏳",
    "waiting": "✋",
    "ok": "✅",
    "error": "⚠️",
    "denied": "🚫",
    "interrupted": "⏹",
}
_TASK_CHARS = 80


@dataclass
class _Entry:
    """One line or paragraph of the log."""

    kind: str
    """text, tool, notice or todos."""
    text: str = ""
    """The text (text, notice, todos)."""
    call: ToolCallView | None = None
    """The call (tool)."""
    state: str = "running"
    """The call's state (tool)."""
    duration: float | None = None
    """Seconds the call ran (tool)."""


def _short(text: str, limit: int) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


class SubagentLog:
    """What a subagent has done so far."""

    def __init__(self, view: SubagentView) -> None:
        self.view = view
        self.entries: list[_Entry] = []
        self.state = "running"
        """running, done, error or interrupted."""
        self.status: str | None = None
        self.summary: TurnSummary | None = None
        self._calls: dict[str, _Entry] = {}
        self._todos: _Entry | None = None

    def add_text(self, delta: str) -> None:
        last = self.entries[-1] if self.entries else None
        if last is None or last.kind != "text":
            last = _Entry("text")
            self.entries.append(last)
        last.text += delta

    def tool(self, call: ToolCallView, state: str, result: ToolResultView | None = None) -> None:
        entry = self._calls.get(call.call_id)
        if entry is None:
            entry = self._calls[call.call_id] = _Entry("tool", call=call)
            self.entries.append(entry)
        if call.args is not None:
            entry.call = call
        entry.state = state
        if result is not None:
            entry.duration = result.duration
            if result.decision and entry.call is not None:
                entry.call.decision = result.decision

    def call_of(self, call_id: str) -> ToolCallView | None:
        entry = self._calls.get(call_id)
        return entry.call if entry is not None else None

    def notice(self, markdown: str, level: NoticeLevel) -> None:
        self.entries.append(_Entry("notice", f"{NOTICE_PREFIX[level]} {markdown}"))

    def todos(self, todos: Sequence[TodoView]) -> None:
        if self._todos is None:
            self._todos = _Entry("todos")
            self.entries.append(self._todos)
        self._todos.text = todos_text(todos)

    def finish(self, summary: TurnSummary) -> None:
        self.summary = summary
        self.status = None
        self.state = "interrupted" if summary.interrupted else "error" if summary.error else "done"
        for entry in self._calls.values():
            if entry.state in ("running", "waiting") and summary.interrupted:
                entry.state = "interrupted"

    # -- rendering -------------------------------------------------------------------

    def headline(self) -> str:
        bits = [f"🤖 {self.view.name}", self.state]
        summary = self.summary
        if summary is not None:
            bits.append(f"{summary.requests} request{'s' if summary.requests != 1 else ''}")
            bits.append(f"{summary.duration:.1f}s")
        elif self.status:
            bits.append(self.status)
        bits.append(_short(self.view.task, _TASK_CHARS))
        return " · ".join(bits)

    def _tool_line(self, entry: _Entry) -> str:
        call = entry.call
        assert call is not None
        bits = [f"{_ICONS.get(entry.state, '•')} {call.name}({short_args(call.args)})", entry.state]
        if call.decision and call.decision != entry.state:
            bits.append(call.decision)
        if entry.duration is not None:
            bits.append(f"{entry.duration:.2f}s")
        return " · ".join(bits)

    def plain(self) -> str:
        lines = [self.headline()]
        for entry in self.entries:
            text = self._tool_line(entry) if entry.kind == "tool" else entry.text.strip()
            lines += [f"  {line}" for line in text.splitlines() if line.strip()]
        if self.summary is not None and self.summary.error:
            lines.append(f"  ❌ {self.summary.error}")
        return "\n".join(lines)

    def bundle(self) -> dict[str, Any]:
        body: list[str] = []
        for entry in self.entries:
            if entry.kind == "tool":
                body.append(
                    f"<div class='co-subagent-tool'>{html.escape(self._tool_line(entry))}</div>"
                )
            elif entry.text.strip():
                style = "white-space:pre-wrap;margin:4px 0"
                body.append(
                    f"<div class='co-subagent-{entry.kind}' style='{style}'>{html.escape(entry.text.strip())}</div>"
                )
        if self.summary is not None and self.summary.error:
            body.append(
                f"<div class='co-subagent-error'>❌ {html.escape(self.summary.error)}</div>"
            )
        is_open = " open" if self.state == "running" else ""
        markup = (
            f'<details class="co-subagent" data-status="{self.state}"{is_open}>'
            f"<summary>{html.escape(self.headline())}</summary>"
            f"<div style='margin-left:1.5em'><b>Task</b><div style='white-space:pre-wrap'>"
            f"{html.escape(self.view.task)}</div>{''.join(body)}</div></details>"
        )
        payload = {
            "call_id": self.view.call_id,
            "name": self.view.name,
            "task": self.view.task,
            "model": self.view.model,
            "depth": self.view.depth,
            "status": self.state,
            "entries": [
                {"kind": e.kind, "text": self._tool_line(e) if e.kind == "tool" else e.text}
                for e in self.entries
            ],
        }
        return {MIME_SUBAGENT: payload, "text/html": markup, "text/plain": self.plain()}


class SubagentFrontend(BaseFrontend):
    """Where a subagent's run reports; the log is shown by ``render``.

    ``live``: render on every change (text at most ``max_rate`` times a second, using
    ``call_later`` for the trailing update); otherwise only once, at the end.
    """

    def __init__(
        self,
        parent: FrontendProtocol,
        view: SubagentView,
        render: Callable[[SubagentLog], None],
        *,
        live: bool,
        max_rate: float = 20.0,
        call_later: Callable[[float, Callable[[], None]], Any] | None = None,
    ) -> None:
        super().__init__(parent.prompt_approval)
        self.kind = getattr(parent, "kind", "base")
        self.parent = parent
        self.view = view
        self.log = SubagentLog(view)
        self._render = render
        self._live = live
        self._interval = 1.0 / max_rate
        self._call_later = call_later
        self._last = 0.0
        self._pending: Any = None
        self._forwarded: set[str] = set()
        if live:
            self._show()  # the block appears where the subagent starts

    # -- display -------------------------------------------------------------------

    def _show(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        self._last = time.monotonic()
        self._render(self.log)

    def _changed(self, *, throttle: bool = False) -> None:
        if not self._live:
            return
        if not throttle or time.monotonic() - self._last >= self._interval:
            self._show()
        elif self._pending is None and self._call_later is not None:
            self._pending = self._call_later(self._interval, self._show)

    # -- approvals go to the cell's frontend, labelled with the subagent ------------

    def _forward(self, call: ToolCallView) -> ToolCallView:
        self._forwarded.add(call.call_id)
        return replace(call, call_id=f"{self.view.call_id}:{call.call_id}", agent=self.view.name)

    def on_tool_call(self, call: ToolCallView) -> None:
        self.log.tool(call, "denied" if is_refusal(call.decision) else "running")
        if call.needs_approval:
            self.parent.on_tool_call(self._forward(call))
        self._changed()

    def on_tool_result(self, result: ToolResultView) -> None:
        call = self.log.call_of(result.call_id) or ToolCallView(result.call_id, result.name, None)
        self.log.tool(call, result.status, result)
        if result.call_id in self._forwarded:
            self.parent.on_tool_result(
                replace(result, call_id=f"{self.view.call_id}:{result.call_id}")
            )
        self._changed()

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        call = request.call
        self.log.tool(call, "waiting")
        self._changed()
        forwarded = replace(request, call=self._forward(call))
        try:
            choice = await self.parent.prompt_approval(forwarded)
            request.accepted = forwarded.accepted  # the cells chosen on the parent's card
        except asyncio.CancelledError:
            call.decision = INTERRUPTED
            self.log.tool(call, "interrupted")
            self._changed()
            raise
        call.decision = decision_label(choice)
        self.log.tool(call, "denied" if is_refusal(call.decision) else "running")
        self._changed()
        return choice

    def start_subagent(self, view: SubagentView) -> FrontendProtocol:
        return self.parent.start_subagent(view)

    # -- the rest goes into the log --------------------------------------------------

    def on_text_delta(self, delta: str) -> None:
        self.log.add_text(delta)
        self._changed(throttle=True)

    def on_text_commit(self) -> None:
        self._changed()

    def on_todos(self, todos: Sequence[TodoView]) -> None:
        self.log.todos(todos)
        self._changed()

    def on_status(self, message: str) -> None:
        self.log.status = message
        self._changed()

    def clear_status(self) -> None:
        self.log.status = None
        self._changed()

    def on_notice(self, markdown: str, level: NoticeLevel = "info") -> None:
        self.log.notice(markdown, level)
        self._changed()

    def on_turn_end(self, summary: TurnSummary) -> None:
        self.log.finish(summary)
        self._show()

    def cleanup(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None


class ConsoleSubagentFrontend(SubagentFrontend):
    """jupyter console: the subagent's text and calls as lines indented under its call."""

    PREFIX = "  │ "

    def __init__(self, parent: FrontendProtocol, view: SubagentView, publisher: Publisher) -> None:
        self._pub = publisher
        self._at_line_start = True
        super().__init__(parent, view, lambda log: None, live=False)
        self._line(f"🤖 {view.name} ({view.model}): {_short(view.task, _TASK_CHARS)}")

    def _write(self, text: str) -> None:
        # The subagent's text, calls and notices are outside text: shown, not obeyed, and
        # unstyled, like the parent console's (``ConsoleFrontend``).
        text = mark_hidden(terminal_safe(text, keep_sgr=False))
        out: list[str] = []
        for char in text:
            if self._at_line_start and char != "\n":
                out.append(self.PREFIX)
                self._at_line_start = False
            out.append(char)
            if char == "\n":
                self._at_line_start = True
        self._pub.stream("stdout", "".join(out))

    def _line(self, text: str) -> None:
        if not self._at_line_start:
            self._write("\n")
        self._write(text + "\n")
        self._pub.flush()

    def on_text_delta(self, delta: str) -> None:
        super().on_text_delta(delta)
        self._write(delta)

    def on_text_commit(self) -> None:
        if not self._at_line_start:
            self._write("\n")
        self._pub.flush()

    def on_tool_call(self, call: ToolCallView) -> None:
        super().on_tool_call(call)
        if not call.needs_approval:
            self._line(f"⏺ {call.name}({short_args(call.args)})")

    def on_tool_result(self, result: ToolResultView) -> None:
        super().on_tool_result(result)
        if result.call_id in self._forwarded:
            return  # the cell's frontend showed the call and its result, where it asked
        took = f" {result.duration:.2f}s" if result.duration is not None else ""
        self._line(f"  ⎿ {result.name} {result.status}{took}")

    def on_todos(self, todos: Sequence[TodoView]) -> None:
        super().on_todos(todos)
        self._line(todos_text(todos))

    def on_notice(self, markdown: str, level: NoticeLevel = "info") -> None:
        super().on_notice(markdown, level)
        self._line(f"{NOTICE_PREFIX[level]} {markdown}")

    def on_turn_end(self, summary: TurnSummary) -> None:
        super().on_turn_end(summary)
        why = f": {summary.error}" if summary.error else ""
        self._line(f"{self.log.state} · {summary.requests} request(s){why}")
