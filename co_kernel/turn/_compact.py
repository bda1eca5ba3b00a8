"""Compaction: older turns become an LLM-written summary; the last turns stay verbatim.

``compact_session`` does it for `%compact`; ``auto_compact`` before a prompt that would
pass `auto_compact_ratio` of the context window.

The summary is asked of ``summarization_model`` (default: the session's model) through the
same provider stack as a turn, with the older turns rendered as a plain transcript so any
provider can read them (no tool schemas needed). The summary then heads the history as a
prompt/answer pair, which the history window always keeps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..exceptions import CompactError, ConfigError
from ..inert import inert_text
from ..telemetry import CostSum
from ._costs import priced
from ._history_processors import SUMMARY_PREFIX, is_summary, turn_starts

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

    from ..config import Settings
    from ..models import ModelHandle
    from ..replay import Recorder
    from ..store import TurnRow
    from ._frontend import FrontendProtocol
    from ._session_model import SessionModel
    from ._tokens import TokenCount

__all__ = [
    "SUMMARY_ACK",
    "CompactReport",
    "Compactable",
    "SessionUsage",
    "Summary",
    "auto_compact",
    "compact_session",
    "compacted_history",
    "render_transcript",
    "split_for_compaction",
    "summarise",
]

SUMMARY_ACK = "Understood. I will continue from this summary."

_INSTRUCTIONS = (
    "You write faithful, compact summaries of a conversation between a person and Co, an AI "
    "assistant working in a Jupyter notebook. The summary replaces the conversation in Co's "
    "memory, so keep everything needed to carry on: the person's goals and preferences, "
    "decisions, facts and numbers, file names, code identifiers, commands that ran and what "
    "they showed, what failed, and open questions. Drop greetings and repetition. Never "
    "invent anything. Answer with short Markdown bullet points only."
)
_TOOL_CHARS = 600
_TEXT_CHARS = 4000


@dataclass
class Summary:
    """What the summarisation request returned."""

    text: str
    """The summary."""
    input_tokens: int = 0
    """Prompt tokens of the request."""
    output_tokens: int = 0
    """Completion tokens of the request."""
    requests: int = 0
    """Model requests made."""
    cost: CostSum = field(default_factory=CostSum)
    """What the request cost."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" […{len(text) - limit:,} more]"


def _prompt_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(c for c in content if isinstance(c, str)) + " [attachments]"


def _render_request(msg: Any) -> list[str]:
    from pydantic_ai.messages import ToolReturnPart, UserPromptPart

    lines: list[str] = []
    for part in msg.parts:
        if isinstance(part, UserPromptPart):
            text = _prompt_text(part.content)
            if text.startswith(SUMMARY_PREFIX):
                lines.append(f"[summary of what came before]\n{text[len(SUMMARY_PREFIX) :]}")
            else:
                lines.append(f"[person] {_clip(text, _TEXT_CHARS)}")
        elif isinstance(part, ToolReturnPart):
            result = _clip(part.model_response_str(), _TOOL_CHARS)
            lines.append(f"[tool result: {part.tool_name}] {result}")
    return lines


def _render_response(msg: Any) -> list[str]:
    from pydantic_ai.messages import TextPart, ToolCallPart

    lines: list[str] = []
    for part in msg.parts:
        if isinstance(part, TextPart) and part.content.strip():
            if part.content.strip() != SUMMARY_ACK:
                lines.append(f"[Co] {_clip(part.content, _TEXT_CHARS)}")
        elif isinstance(part, ToolCallPart):
            args = part.args if isinstance(part.args, str) else json.dumps(part.args or {})
            lines.append(f"[Co calls {part.tool_name}] {_clip(args, _TOOL_CHARS)}")
    return lines


def render_transcript(messages: Sequence[ModelMessage], max_chars: int) -> str:
    """The conversation as plain text for the summariser, at most about ``max_chars``."""
    from pydantic_ai.messages import ModelRequest

    lines: list[str] = []
    for msg in messages:
        if isinstance(msg, ModelRequest):
            lines.extend(_render_request(msg))
        else:
            lines.extend(_render_response(msg))
    text = "\n\n".join(lines)
    if len(text) > max_chars:
        # Keep the start (goals, an earlier summary) and the most recent part.
        head = max_chars // 3
        tail = max_chars - head
        omitted = len(text) - head - tail
        text = f"{text[:head]}\n\n[… {omitted:,} characters omitted …]\n\n{text[-tail:]}"
    return text


def split_for_compaction(
    messages: Sequence[ModelMessage], keep_turns: int
) -> tuple[int, int] | None:
    """(cut, turns folded): messages before ``cut`` get summarised; None if nothing to fold.

    Only turn starts are cut points, so no tool call is separated from its return.
    """
    starts = turn_starts(messages)
    summary_head = bool(messages) and is_summary(messages[0])
    turns = [s for s in starts if not (summary_head and s == 0)]
    if len(turns) <= keep_turns:
        return None
    cut = turns[-keep_turns] if keep_turns else len(messages)
    folded = len([s for s in turns if s < cut])
    return cut, folded


def compacted_history(summary: str, kept: Sequence[ModelMessage]) -> list[ModelMessage]:
    """The new history: the summary as a prompt/answer pair, then the kept turns."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    return [
        ModelRequest(parts=[UserPromptPart(SUMMARY_PREFIX + summary.strip())]),
        ModelResponse(parts=[TextPart(SUMMARY_ACK)]),
        *kept,
    ]


async def summarise(
    model: Model,
    transcript: str,
    *,
    focus: str | None,
    timeout: float,
    provider: str,
    label: str,
    model_settings: dict[str, Any] | None = None,
    settings: Settings | None = None,
) -> Summary:
    """Ask the model for a summary; CompactError with a readable reason on failure.

    ``model_settings`` are the model's own request settings (a local model's sampling,
    repeat penalty and generation cap): without them the bundled model wrote a summary
    of 1,500 tokens in a 2,048-token context, and the next request overflowed it.
    """
    from pydantic_ai import Agent

    from ..models import classify_provider_error

    focus_line = f"\nGive most room to: {focus.strip()}\n" if focus and focus.strip() else ""
    prompt = (
        "Summarise this conversation so that it can replace it in your memory."
        f"{focus_line}\n<conversation>\n{transcript}\n</conversation>"
    )
    agent: Agent[None, str] = Agent(
        model,
        output_type=str,
        instructions=_INSTRUCTIONS,
        # The model's own timeout wins: a local model's allows for a slow CPU.
        model_settings=cast(
            "ModelSettings", {"timeout": timeout, **(model_settings or {}), "max_retries": 0}
        ),
    )
    try:
        result = await agent.run(prompt)
    except Exception as exc:
        action = classify_provider_error(exc, provider=provider, model=label)
        if action is None:
            raise
        raise CompactError(f"the summary request failed: {action.message}") from exc
    text = (result.output or "").strip()
    if not text:
        raise CompactError("the model returned an empty summary")
    usage = result.usage
    cost = priced(usage, label, settings) if settings is not None else CostSum()
    return Summary(text, usage.input_tokens, usage.output_tokens, usage.requests, cost)


@dataclass
class SessionUsage:
    """Usage outside turns (compaction requests), kept with the session."""

    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""
    requests: int = 0
    """Model requests."""
    cost: CostSum = field(default_factory=CostSum)
    """What they cost (each priced by the model that wrote the summary)."""


@dataclass
class CompactReport:
    """What a compaction did."""

    folded_turns: int
    """Turns replaced by the summary (an earlier summary counts as none)."""
    kept_turns: int
    """Turns kept verbatim after the summary."""
    tokens_before: int
    """Estimated tokens the model was sent before."""
    tokens_after: int
    """Estimated tokens it is sent now."""
    summary: str
    """The summary text."""


class Compactable(Protocol):
    """What compaction reads and replaces of a session (``ChatSession``)."""

    history: list[ModelMessage]
    turns: list[TurnRow]
    compaction_usage: SessionUsage

    @property
    def settings(self) -> Settings: ...
    @property
    def model(self) -> SessionModel: ...
    @property
    def workspace(self) -> Path: ...
    @property
    def recorder(self) -> Recorder | None: ...
    @property
    def live_turns(self) -> list[TurnRow]: ...
    async def prompt_tokens(self, prompt: str | None = None) -> TokenCount: ...
    def save(self) -> bool: ...


async def compact_session(session: Compactable, focus: str | None = None) -> CompactReport:
    """Replace older turns with a summary; the last `compact_keep_turns` stay verbatim."""
    keep = session.settings.compact_keep_turns
    split = split_for_compaction(session.history, keep)
    if split is None:
        raise CompactError(
            f"there is nothing to compact yet: the conversation has "
            f"{len(session.live_turns)} turn(s) and the last {keep} always stay as they are"
        )
    cut, folded = split
    before = (await session.prompt_tokens()).tokens
    handle, close = _summary_model(session)
    try:
        window = session.model.context_window
        transcript = render_transcript(session.history[:cut], max_chars=window * 2)
        summary = await summarise(
            handle.model,
            transcript,
            focus=focus,
            timeout=session.settings.request_timeout,
            provider=handle.provider,
            label=handle.label,
            model_settings=handle.model_settings,
            settings=session.settings,
        )
    finally:
        close()
    usage = session.compaction_usage
    usage.input_tokens += summary.input_tokens
    usage.output_tokens += summary.output_tokens
    usage.requests += summary.requests
    usage.cost += summary.cost
    kept = session.history[cut:]
    session.history = compacted_history(summary.text, kept)
    shift = len(session.history) - len(kept) - cut
    for turn in session.turns:
        if turn.start is not None:
            turn.start = None if turn.start < cut else turn.start + shift
    session.save()
    return CompactReport(
        folded_turns=folded,
        kept_turns=len(session.live_turns),
        tokens_before=before,
        tokens_after=(await session.prompt_tokens()).tokens,
        summary=summary.text,
    )


def _summary_model(session: Compactable) -> tuple[ModelHandle, Callable[[], None]]:
    """(handle, close) of the model that writes the summary."""
    from ..config import parse_model_string
    from ..models import build_model

    settings = session.settings
    wanted = settings.summarization_model
    current = session.model.name
    if not wanted or (current and parse_model_string(wanted) == parse_model_string(current)):
        _, handle = session.model.ensure_agent()
        return handle, lambda: None
    handle = build_model(settings, wanted, base_dir=session.workspace, recorder=session.recorder)
    return handle, handle.close


async def auto_compact(session: Compactable, prompt: str, frontend: FrontendProtocol) -> None:
    """Compact first when the prompt would pass `auto_compact_ratio` of the window."""
    settings = session.settings
    window = session.model.context_window
    limit = int(settings.auto_compact_ratio * window)
    if not session.history:
        return
    estimate = (await session.prompt_tokens(prompt)).tokens
    if (
        estimate <= limit
        or split_for_compaction(session.history, settings.compact_keep_turns) is None
    ):
        return
    frontend.on_status("Compacting the conversation to fit the context window…")
    try:
        report = await compact_session(session)
    except (CompactError, ConfigError) as exc:
        frontend.clear_status()
        frontend.on_notice(
            f"The conversation is near the context window (~{estimate:,} of "
            f"{window:,} tokens) but Co could not compact it: {inert_text(exc)}. "
            "Try `%compact` or `%clear`.",
            "warning",
        )
        return
    frontend.clear_status()
    frontend.on_notice(
        f"Co compacted the conversation: it was ~{estimate:,} tokens, past "
        f"{settings.auto_compact_ratio:.0%} of the {window:,}-token "
        f"context window. {report.folded_turns} earlier turn(s) are now a summary; the last "
        f"{report.kept_turns} stay as they were (~{report.tokens_after:,} tokens now).",
        "info",
    )
