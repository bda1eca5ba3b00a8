"""What a turn shows: pydantic-ai's stream events become frontend calls.

Text deltas and commits, thinking (with `verbose`), tool-call and tool-result cards with
their durations and decisions, the todo checklist when a tool changed it, and an audit row
for every call that ended. The answer is the text of the responses that made it into the
history.
"""

from __future__ import annotations

import functools
import logging
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, cast

from ..permissions import is_refusal, normalise_args
from ..session_state import Todo
from ._frontend import FrontendProtocol, TodoView, ToolCallView, ToolResultView
from ._repair import patch_dangling_tool_calls, returned_ids

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from ..session_state import CoDeps

__all__ = ["TurnEvents"]

log = logging.getLogger(__name__)


@functools.cache
def _messages() -> ModuleType:
    """pydantic-ai's message types, imported on first use (the kernel starts without them)."""
    import pydantic_ai.messages

    return pydantic_ai.messages


class TurnEvents:
    """Translates one run's events into frontend calls and keeps what they showed."""

    def __init__(
        self, frontend: FrontendProtocol, deps: CoDeps, *, subagent: str | None = None
    ) -> None:
        self.frontend = frontend
        self.deps = deps
        self.subagent = subagent
        """The subagent's name when this run is one: its audit rows say whose calls they were."""
        self.verbose = deps.settings.verbose
        self.todos_seen: list[Todo] = [
            Todo(content=t["content"], status=t["status"]) for t in deps.todos
        ]
        """The checklist as last shown; a tool that changes it is followed by ``on_todos``."""
        self.text_parts: list[str] = []
        """Text of the responses that made it into the history: the answer."""
        self.response_text = ""
        """Text of the response being streamed; confirmed or dropped when it ends."""
        self.pending_text = ""
        self.tool_started: dict[str, float] = {}
        self.decisions: dict[str, str] = {}
        """How each call that needed approval was decided, by tool call id."""
        self.shown_calls: set[str] = set()
        self.call_args: dict[str, Any] = {}

    def on_event(self, event: Any) -> None:
        m = _messages()
        # The common case first: this runs for every piece of every streamed answer.
        if isinstance(event, m.PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, m.TextPartDelta):
                self._text(delta.content_delta)
            elif isinstance(delta, m.ThinkingPartDelta) and self.verbose and delta.content_delta:
                self.frontend.on_thinking_delta(delta.content_delta)
        elif isinstance(event, m.PartStartEvent):
            if isinstance(event.part, m.TextPart) and event.part.content:
                self._text(event.part.content)
            elif isinstance(event.part, m.ThinkingPart) and self.verbose:
                self.frontend.on_thinking_delta(event.part.content)
        elif isinstance(event, m.PartEndEvent):
            if isinstance(event.part, m.TextPart):
                self.commit_text()
            elif isinstance(event.part, m.ThinkingPart) and self.verbose:
                self.frontend.on_thinking_commit()
        elif isinstance(event, m.FunctionToolCallEvent):
            self.confirm_response()
            self._tool_call(event.part)
        elif isinstance(event, m.FunctionToolResultEvent):
            self._tool_result(event.part)

    def _text(self, delta: str) -> None:
        if delta:
            self.pending_text += delta
            self.response_text += delta
            self.frontend.on_text_delta(delta)

    def commit_text(self) -> None:
        self.pending_text = ""
        self.frontend.on_text_commit()

    def confirm_response(self) -> None:
        """The streamed response is in the history now: its text is part of the answer."""
        if self.response_text:
            self.text_parts.append(self.response_text)
        self.response_text = ""

    def drop_response(self) -> None:
        """A failed request's partial text is not part of the answer; a retry streams anew."""
        if self.response_text.strip():
            self.frontend.on_text_commit()
            self.frontend.on_notice(
                "*The answer above was cut off; it is not kept in the conversation.*", "warning"
            )
        self.response_text = self.pending_text = ""

    def keep_partial(self) -> None:
        """An interrupted response's text stays part of the answer."""
        if self.response_text:
            self.text_parts.append(self.response_text)
        self.response_text = self.pending_text = ""

    def _tool_call(self, part: Any) -> None:
        if self.pending_text:
            self.commit_text()
        self.tool_started[part.tool_call_id] = time.monotonic()
        self.call_args[part.tool_call_id] = part.args
        if part.tool_call_id in self.shown_calls:
            return
        self.shown_calls.add(part.tool_call_id)
        self.frontend.on_tool_call(ToolCallView(part.tool_call_id, part.tool_name, part.args))

    def _audit(self, result: ToolResultView, args: Any) -> None:
        audit = self.deps.audit
        if audit is None:
            return
        from ..telemetry import AuditEvent, audit_target

        content = result.content
        size = (
            len(content)
            if isinstance(content, str)
            else len(str(content))
            if content is not None
            else 0
        )
        audit.record(
            AuditEvent(
                session_id=self.deps.session_id,
                turn=self.deps.turn_index,
                tool=result.name,
                target=audit_target(normalise_args(args)),
                decision=result.decision or "auto",
                status=result.status,
                result_size=size,
                duration_ms=result.duration * 1000 if result.duration is not None else None,
                agent=self.subagent,
                call_id=result.call_id,
            )
        )

    def audit_progress(self, call_id: str, name: str, action: str, decision: str) -> None:
        """An audit row for a call that has no result yet: ``ask`` as it starts waiting for
        approval, ``decide`` once decided. The activity panel shows the call as waiting or
        decided until its result's row (same ``call_id``) takes their place, so a call held
        at approval never reads as done."""
        audit = self.deps.audit
        if audit is None:
            return
        import sqlite3

        from ..telemetry import AuditEvent, audit_target

        status = "waiting" if action == "ask" else "denied" if is_refusal(decision) else "running"
        try:
            audit.record(
                AuditEvent(
                    session_id=self.deps.session_id,
                    turn=self.deps.turn_index,
                    tool=name,
                    action=action,
                    target=audit_target(normalise_args(self.call_args.get(call_id))),
                    decision=decision,
                    status=status,
                    agent=self.subagent,
                    call_id=call_id,
                )
            )
        except sqlite3.Error:  # a locked log must not hold up the decision
            log.warning("audit row of %s not written", name, exc_info=True)

    def _tool_result(self, part: Any) -> None:
        started = self.tool_started.pop(part.tool_call_id, None)
        # Only calls that needed approval carry a decision; read-only tools have none.
        decision = self.decisions.get(part.tool_call_id)
        kind = getattr(part, "part_kind", "")
        status: Literal["ok", "error", "denied", "interrupted"] = "ok"
        if is_refusal(decision) or getattr(part, "outcome", None) == "denied":
            status = "denied"
        elif kind == "retry-prompt" or getattr(part, "outcome", "success") in ("failed", "retried"):
            status = "error"
        content = getattr(part, "content", None)
        if kind == "retry-prompt":
            content = part.model_response() if hasattr(part, "model_response") else content
        elif isinstance(content, dict) and cast(dict[str, Any], content).get("error") is True:
            status = "error"  # a terminal tool error (tools/_errors.py)
        view = ToolResultView(
            part.tool_call_id,
            getattr(part, "tool_name", None) or "tool",
            content,
            status=status,
            # A refused call never ran: it has no duration to show.
            duration=(time.monotonic() - started) if started and status != "denied" else None,
            decision=decision,
            outputs=self.deps.displays.pop(part.tool_call_id, []),
        )
        self.frontend.on_tool_result(view)
        self._audit(view, self.call_args.pop(part.tool_call_id, None))
        self._check_todos()

    def _check_todos(self) -> None:
        current = [Todo(content=t["content"], status=t["status"]) for t in self.deps.todos]
        if current != self.todos_seen:
            self.todos_seen = current
            self.frontend.on_todos([TodoView(t["content"], t["status"]) for t in current])

    def answer_dangling(
        self, messages: list[ModelMessage], content: str, status: Literal["error", "interrupted"]
    ) -> list[ModelMessage]:
        """Patch the unanswered calls and close their cards (and audit rows) with ``status``."""
        patched = patch_dangling_tool_calls(messages, content)
        before = returned_ids(messages)
        for call_id, name in returned_ids(patched).items():
            if call_id in before:
                continue
            self.tool_started.pop(call_id, None)
            view = ToolResultView(
                call_id,
                name,
                content,
                status=status,
                decision=self.decisions.get(call_id),
                outputs=self.deps.displays.pop(call_id, []),
            )
            if call_id in self.shown_calls:
                self.frontend.on_tool_result(view)
            self._audit(view, self.call_args.pop(call_id, None))
        return patched
