"""Compaction: older turns become an LLM-written summary; the last turns stay verbatim.

The summary is asked of ``summarization_model`` (default: the session's model) through the
same provider stack as a turn, with the older turns rendered as a plain transcript so any
provider can read them (no tool schemas needed). The summary then heads the history as a
prompt/answer pair, which the history window always keeps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..exceptions import CompactError
from ._history import SUMMARY_PREFIX, is_summary, turn_starts

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

__all__ = [
    "SUMMARY_ACK",
    "Summary",
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
    from pydantic_ai.messages import ModelRequest, ModelResponse

    lines: list[str] = []
    for msg in messages:
        if isinstance(msg, ModelRequest):
            lines.extend(_render_request(msg))
        elif isinstance(msg, ModelResponse):
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
    return Summary(text, usage.input_tokens, usage.output_tokens, usage.requests)
