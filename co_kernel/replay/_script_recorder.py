"""Recording a session's model exchanges as a replay script, one step per answered request.

A step holds what the model answered (text, tool calls with their ids and arguments,
reasoning, usage) and an `expect` that ties it to what asked: the prompt's whole text for
the first request of a turn, the start of the tool result for a follow-up. Decisions on
tool calls (a person's, or a headless run's approval) are added to the calls they answer,
and so is what a notebook tool asked the notebook's page and what the page answered.
Each step is redacted, appended and flushed as soon as its request completes, so a crash
loses at most the request in flight.

The same object hands a replay's recorded decisions to the approval path: a replay loads
the decisions of its script's calls, and the turn asks for them by call id, tool and arguments.
It also keeps the page answers recorded with each call, which the notebook tools compare
their edits with and, with no page connected, take as the page's answers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._script import Step

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse

__all__ = ["RECORDABLE_DECISIONS", "Recorder", "replayed_script", "step_from_exchange"]

RECORDABLE_DECISIONS = ("approved", "denied", "approved all")
"""The person's answers a recording keeps (an interrupt or a timeout is not a decision)."""

_NEEDLE_CHARS = 300
"""At most this much of a tool result becomes the step's check, so a long result's
varying tail (timings, listings) does not make a replay fail."""


def replayed_script(model: str | None, workspace: Path) -> Path | None:
    """The script a ``replay:PATH`` model string names (relative to the workspace), if it is one."""
    provider, _, name = (model or "").partition(":")
    if provider.strip().lower() != "replay" or not name.strip():
        return None
    return (workspace / Path(name.strip()).expanduser()).resolve()


def _needle(text: str, redact: Callable[[str], str]) -> str:
    """A substring check's text: the start of ``text``, and where redaction took something
    out, its longest clean piece (the replayed request carries the real text)."""
    # Imported here: the scripted server's command line needs none of telemetry.
    from ..telemetry import REDACTED

    start = text[:_NEEDLE_CHARS]
    cleaned = redact(start)
    if cleaned == start:
        return start
    return max(cleaned.split(REDACTED), key=len)


def _prompt_check(prompt: str, redact: Callable[[str], str]) -> dict[str, str]:
    """The whole prompt must be the same; a prompt holding a secret, a clean piece of it."""
    if redact(prompt) == prompt:
        return {"last_user_is": prompt}
    needle = _needle(prompt, redact)
    return {"last_user_contains": needle} if needle.strip() else {}


def _expect(messages: Sequence[ModelMessage], redact: Callable[[str], str]) -> dict[str, Any]:
    """What ties a step to its request: the last prompt, else the last tool result."""
    from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart

    last = messages[-1] if messages else None
    if not isinstance(last, ModelRequest):
        return {}
    for part in reversed(last.parts):
        if isinstance(part, UserPromptPart) and isinstance(part.content, str):
            return _prompt_check(part.content, redact)
        if isinstance(part, ToolReturnPart):
            # The text the OpenAI format sends as the `tool` message, which a replay checks.
            text, _ = part.model_response_str_and_user_content()
            needle = _needle(text, redact)
            return {"tool_result_contains": needle} if needle.strip() else {}
    # A retry prompt's wording is the provider adapter's to choose: no check.
    return {}


def step_from_exchange(
    messages: Sequence[ModelMessage],
    response: ModelResponse,
    redact: Callable[[str], str] = str,
) -> dict[str, Any]:
    """One answered request as a script step (a JSON object), secrets redacted."""
    from pydantic_ai.messages import TextPart, ThinkingPart, ToolCallPart

    from ..telemetry import redact_value

    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    reasoning = "".join(p.content for p in response.parts if isinstance(p, ThinkingPart))
    calls = [
        {"name": p.tool_name, "arguments": p.args_as_dict(), "id": p.tool_call_id}
        for p in response.parts
        if isinstance(p, ToolCallPart)
    ]
    step: dict[str, Any] = {}
    if expect := _expect(messages, redact):
        step["expect"] = expect
    if text:
        step["text"] = text
    if calls:
        step["tool_calls"] = calls
    if reasoning:
        step["reasoning"] = reasoning
    usage = response.usage
    step["usage"] = {
        "prompt_tokens": usage.input_tokens or 0,
        "completion_tokens": usage.output_tokens or 0,
    }
    return redact_value(step, redact)


class Recorder:
    """One session's recording, and the decisions its replay recorded."""

    def __init__(self, redact: Callable[[str], str] = str) -> None:
        self.redact = redact
        """Applied to every string of a step before it is written."""
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._steps: list[dict[str, Any]] = []
        """The steps written to the file, for adding a decision to one."""
        self._offsets: list[int] = []
        """Where each step's line starts in the file."""
        self._replayed: dict[str, tuple[str, str, str]] = {}
        """Call id -> (tool name, arguments as JSON, decision) from a replayed script."""
        self._replayed_cells: dict[str, list[bool]] = {}
        """Call id -> which of its cells the person accepted, from a replayed script."""
        self._pages: dict[str, list[dict[str, Any]]] = {}
        """Call id -> what the call asked the page and what it answered, from a replayed script."""
        self._page_next: dict[str, int] = {}
        """Call id -> how many of its page exchanges the replay went past."""
        self.replaying: Any = None
        """The model of the session's replay, while it replays: it answers every model
        request of the session, a subagent's or a summary's with a model of its own too."""

    @property
    def path(self) -> Path | None:
        """The script being written, or None when not recording."""
        return self._path

    @property
    def steps(self) -> int:
        """Steps written since recording started."""
        return len(self._steps)

    def start(self, path: Path) -> None:
        """Record into ``path`` from now on (a new script: an existing file is replaced)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            path.write_bytes(b"")
            self._path = path
            self._steps = []
            self._offsets = []

    def stop(self) -> Path | None:
        """Stop recording; returns the script's path, if there was one."""
        with self._lock:
            path, self._path = self._path, None
            return path

    def record(self, messages: Sequence[ModelMessage], response: ModelResponse) -> None:
        """Append the step for one completed request (nothing when not recording)."""
        if self._path is None:
            return
        step = step_from_exchange(messages, response, self.redact)
        with self._lock:
            if self._path is None:
                return
            with self._path.open("ab") as file:
                self._offsets.append(file.tell())
                self._steps.append(step)
                file.write(_line(step))
                file.flush()

    def record_decision(self, call_id: str, decision: str, cells: list[bool] | None = None) -> None:
        """Add the person's decision to the recorded call it answers (``cells``: which of
        its cells they accepted, when they rejected some)."""
        if decision in RECORDABLE_DECISIONS:

            def decide(call: dict[str, Any]) -> None:
                call["decision"] = decision
                if cells is not None:
                    call["cells"] = cells

            self._add_to_call(call_id, decide)

    def record_page(self, call_id: str, exchange: dict[str, Any]) -> None:
        """Add what a notebook tool asked the page, with its answer, to the recorded call."""
        from ..telemetry import redact_value

        if self._path is not None:
            cleaned = redact_value(exchange, self.redact)
            self._add_to_call(call_id, lambda call: call.setdefault("page", []).append(cleaned))

    def _add_to_call(self, call_id: str, change: Callable[[dict[str, Any]], None]) -> None:
        """Change the recorded call ``call_id`` (the latest with that id) and write it again."""
        if self._path is None:
            return
        with self._lock:
            for index in range(len(self._steps) - 1, -1, -1):
                calls = self._steps[index].get("tool_calls", [])
                call = next((c for c in calls if c.get("id") == call_id), None)
                if call is not None:
                    change(call)
                    self._rewrite_from(index)
                    return

    def _rewrite_from(self, index: int) -> None:
        """Write the steps from ``index`` on again (a subagent's may follow the call's)."""
        assert self._path is not None
        with self._path.open("r+b") as file:
            file.seek(self._offsets[index])
            file.truncate()
            for position in range(index, len(self._steps)):
                self._offsets[position] = file.tell()
                file.write(_line(self._steps[position]))
            file.flush()

    # -- replay ------------------------------------------------------------------------

    def replay_decisions(self, steps: Sequence[Step]) -> None:
        """Keep the decisions recorded with the calls of a script a replay serves."""
        with self._lock:
            for call in (call for step in steps for call in step.tool_calls):
                if call.id and call.decision:
                    self._replayed[call.id] = (call.name, _canonical(call.arguments), call.decision)
                    if call.cells is not None:
                        self._replayed_cells[call.id] = call.cells

    def replay_pages(self, steps: Sequence[Step]) -> None:
        """Keep the page answers recorded with the calls of a script a replay serves."""
        with self._lock:
            self._pages = {
                call.id: list(call.page)
                for step in steps
                for call in step.tool_calls
                if call.id and call.page
            }
            self._page_next = {}

    @property
    def replays_page(self) -> bool:
        """Whether the script being replayed was recorded with a notebook page."""
        return self.replaying is not None and bool(self._pages)

    def page_recorded(self, call_id: str) -> bool:
        """Whether the replayed script recorded page exchanges with this call."""
        with self._lock:
            return self.replaying is not None and bool(self._pages.get(call_id))

    def replayed_page(self, call_id: str, op: str, *, peek: bool = False) -> dict[str, Any] | None:
        """The recorded exchange answering this call's next ``op`` request, or None;
        ``peek`` leaves it to answer that request.

        Reads change nothing, so a replay may make one more or one fewer than the recording
        (a call approved in one step there, in two here): a read takes the next recorded
        read, or again the last one; an edit goes past reads to the next recorded edit.
        """
        with self._lock:
            exchanges = self._pages.get(call_id, []) if self.replaying is not None else []
            start = self._page_next.get(call_id, 0)
            for position in range(start, len(exchanges)):
                if exchanges[position].get("op") == op:
                    if not peek:
                        self._page_next[call_id] = position + 1
                    return exchanges[position]
                if op == "read":
                    break
            if op == "read":
                reads = [e for e in exchanges[:start] if e.get("op") == "read"]
                return reads[-1] if reads else None
            return None

    def replayed_decision(self, call_id: str, tool_name: str, args: Any) -> str | None:
        """The recorded decision for this very call (same id, tool and arguments), or None."""
        with self._lock:
            found = self._replayed.get(call_id)
        if found is None or found[0] != tool_name or found[1] != _canonical(args):
            return None
        return found[2]

    def replayed_cells(self, call_id: str) -> list[bool] | None:
        """Which cells the recorded approval of this call accepted, when it took some only."""
        with self._lock:
            return self._replayed_cells.get(call_id)


def _canonical(args: Any) -> str:
    """Arguments as JSON with sorted keys, whether they came as a dict or as a string."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return args
    return json.dumps(args, sort_keys=True, ensure_ascii=False)


def _line(step: dict[str, Any]) -> bytes:
    return (json.dumps(step, ensure_ascii=False) + "\n").encode("utf-8")
