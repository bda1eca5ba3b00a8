"""jupyter console: it ignores display updates, so the answer streams as stdout.

In a terminal the Markdown is rendered (``_terminal.py``): headings, emphasis, lists, code
and tables fitted to its width, a finished block at a time.

Everything here that came from outside (the answer, a call's arguments and change, a
notice's file names) passes ``terminal_safe`` without colours before Co styles it, so the
only styling on the screen is Co's; an approval question then starts on a line of its own
after a reset, and its prompt carries the marker nothing else can print (``_stdin``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from ..permissions import INTERRUPTED, decision_label
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
from ._base import DECISION_TEXT, NOTICE_PREFIX, Approver, BaseFrontend, approval_text
from ._controls import mark_hidden, terminal_safe
from ._publisher import Publisher
from ._subagent import ConsoleSubagentFrontend
from ._terminal import TerminalMarkdown, render_markdown, terminal_colours
from ._todos import todos_text
from ._toolcard import short_args

__all__ = ["ConsoleFrontend"]


class ConsoleFrontend(BaseFrontend):
    """Text on stdout, flushed at most ``max_rate`` times a second.

    ``width``: the terminal's columns when the kernel runs in one; the answer and notices
    are then rendered Markdown, else they stay Markdown source.
    """

    kind = "console"

    def __init__(
        self,
        publisher: Publisher,
        approver: Approver,
        *,
        max_rate: float = 20.0,
        width: int | None = None,
    ) -> None:
        super().__init__(approver)
        self._pub = publisher
        self._width = width
        self._markdown = TerminalMarkdown(width) if width else None
        self._colours = bool(width) and terminal_colours()
        """Whether the approval question colours its diff (a terminal that shows colours)."""
        self._interval = 1.0 / max_rate
        self._last_flush = 0.0
        self._wrote_text = False
        self._announced: set[str] = set()

    def on_text_delta(self, delta: str) -> None:
        delta = terminal_safe(delta, keep_sgr=False)
        if self._markdown is not None:
            delta = self._markdown.feed(delta)
            if not delta:
                return
        self._pub.stream("stdout", delta)
        self._wrote_text = True
        now = time.monotonic()
        if now - self._last_flush >= self._interval:
            self._pub.flush()
            self._last_flush = now

    def on_text_commit(self) -> None:
        if self._markdown is not None:
            rest = self._markdown.finish()
            if rest:
                self._pub.stream("stdout", rest)
            # Rendered blocks end their own lines.
            self._wrote_text = False
        if self._wrote_text:
            self._pub.stream("stdout", "\n")
            self._wrote_text = False
        self._pub.flush()

    def on_thinking_delta(self, delta: str) -> None:
        self._pub.stream("stdout", terminal_safe(delta, keep_sgr=False))

    def on_tool_call(self, call: ToolCallView) -> None:
        self.on_text_commit()
        if call.call_id in self._announced:
            if call.decision:  # decided without asking (yolo, safe prefix)
                self._line(f"  ⎿ {DECISION_TEXT.get(call.decision, call.decision)}")
            return
        self._announced.add(call.call_id)
        who = f"{call.agent} › " if call.agent else ""
        line = terminal_safe(f"{who}{call.name}({short_args(call.args)})", keep_sgr=False)
        self._line(f"⏺ {mark_hidden(line)}")

    def on_tool_result(self, result: ToolResultView) -> None:
        took = f" {result.duration:.2f}s" if result.duration is not None else ""
        self._line(f"  ⎿ {result.status}{took}")
        for output in result.outputs:
            # jupyter console prints a display's text (``<Figure size 640x480 ...>``): a
            # tool's output, so without styles of its own, like the answer.
            data = output["data"]
            plain = data.get("text/plain")
            if isinstance(plain, str):
                data = {**data, "text/plain": terminal_safe(plain, keep_sgr=False)}
            self._pub.display(data, output.get("metadata"))

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.on_text_commit()
        self._announced.add(request.call.call_id)
        # Whatever the text before left open (a style, half a line) ends here, so the
        # question starts at the beginning of a plain line.
        self._pub.stream("stdout", "\x1b[0m" + approval_text(request.call, colour=self._colours))
        self._pub.flush()
        try:
            choice = await self.approver(request)
        except asyncio.CancelledError:
            self._line(f"  ⎿ {DECISION_TEXT[INTERRUPTED]}")
            raise
        label = decision_label(choice)
        self._line(f"  ⎿ {DECISION_TEXT.get(label, label)}")
        return choice

    def _line(self, text: str) -> None:
        self._pub.stream("stdout", text + "\n")
        self._pub.flush()

    def on_todos(self, todos: Sequence[TodoView]) -> None:
        # A console cannot update in place: the whole (short) list each time it changes.
        self.on_text_commit()
        self._line(todos_text(todos))

    def start_subagent(self, view: SubagentView) -> FrontendProtocol:
        self.on_text_commit()
        return ConsoleSubagentFrontend(self, view, self._pub)

    def on_status(self, message: str) -> None:
        # Status lines quote providers and tools (a retry's reason): unstyled too. They are
        # Markdown (the notebook renders them), with outside text escaped: rendered here too.
        text = f"{terminal_safe(message, keep_sgr=False)}\n"
        if self._width:
            text = render_markdown(text, self._width)
        self._pub.stream("stderr", text)
        self._pub.flush()

    def show_notice(self, markdown: str, level: NoticeLevel) -> None:
        self.on_text_commit()
        text = f"{NOTICE_PREFIX[level]} {terminal_safe(markdown, keep_sgr=False)}\n"
        if self._width:
            text = render_markdown(text, self._width)
        self._pub.stream("stdout", text)
        self._pub.flush()

    def on_turn_end(self, summary: TurnSummary) -> None:
        self.on_text_commit()
        line = self.footer(summary)
        if line:
            # stderr, like the status lines: stdout stays exactly the answer.
            self._pub.stream("stderr", f"── {line}\n")
        self._pub.flush()
