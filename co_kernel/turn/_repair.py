"""History repair: what a turn that stopped early leaves is a history the next turn can send.

Every tool call gets a return, a request that never completed leaves no trace, and a
turn cut by an interrupt keeps its prompt and partial answer, marked as cut.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "INTERRUPTED_MARK",
    "INTERRUPTED_TOOL_RETURN",
    "answered_since",
    "ends_with_request",
    "interrupted_history",
    "patch_dangling_tool_calls",
    "returned_ids",
    "tidy",
    "with_stop_note",
]

INTERRUPTED_TOOL_RETURN = "Interrupted by user."
INTERRUPTED_MARK = "[interrupted]"
"""Appended to a partial answer kept in the history, so the model knows it was cut."""


def patch_dangling_tool_calls(
    messages: list[ModelMessage], content: str = INTERRUPTED_TOOL_RETURN
) -> list[ModelMessage]:
    """Answer every unanswered tool call with a synthetic return.

    Providers refuse a history in which a tool call has no answer, so an interrupted turn
    would otherwise break every later one."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

    answered: set[str] = set()
    for msg in messages:
        if isinstance(msg, ModelRequest):
            for part in msg.parts:
                call_id = getattr(part, "tool_call_id", None)
                if call_id is not None and part.part_kind in ("tool-return", "retry-prompt"):
                    answered.add(call_id)
    patched = list(messages)
    for i, msg in enumerate(messages):
        if not isinstance(msg, ModelResponse):
            continue
        dangling = [
            p for p in msg.parts if isinstance(p, ToolCallPart) and p.tool_call_id not in answered
        ]
        if dangling:
            returns = [
                ToolReturnPart(p.tool_name, content, tool_call_id=p.tool_call_id) for p in dangling
            ]
            # Insert right after the response so the order stays call -> return.
            insert_at = patched.index(msg, i) + 1
            nxt = patched[insert_at] if insert_at < len(patched) else None
            if isinstance(nxt, ModelRequest):
                patched[insert_at] = ModelRequest(parts=[*returns, *nxt.parts])
            else:
                patched.insert(insert_at, ModelRequest(parts=returns))
            answered.update(p.tool_call_id for p in dangling)
    return patched


def tidy(messages: list[ModelMessage]) -> list[ModelMessage]:
    """A run's live messages without the traces of a request that never completed.

    pydantic-ai records a failed or cancelled request as a trailing ``interrupted``
    response (empty, or holding the partial text and half-streamed tool calls) and a tool
    that blew up as an empty request; neither is something to send again.
    """
    from pydantic_ai.messages import ModelRequest, ModelResponse

    tidy = [m for m in messages if not (isinstance(m, ModelRequest) and not m.parts)]
    while tidy and isinstance(tidy[-1], ModelResponse) and tidy[-1].state == "interrupted":
        tidy.pop()
    return tidy


def answered_since(messages: list[ModelMessage], start: int) -> bool:
    """Whether any response came back after the first ``start`` messages."""
    from pydantic_ai.messages import ModelResponse

    return any(isinstance(m, ModelResponse) for m in messages[start:])


def with_stop_note(messages: list[ModelMessage], message: str) -> list[ModelMessage]:
    """A stopped turn's messages, ending with Co's note of why it stopped."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart

    if isinstance(messages[-1], ModelRequest):
        messages.append(ModelResponse(parts=[TextPart(f"[Co stopped this turn] {message}")]))
    return messages


def interrupted_history(
    messages: list[ModelMessage], history: list[ModelMessage], prompt: object, partial: str
) -> list[ModelMessage]:
    """The messages of an interrupted turn, its dangling calls still open: the prompt
    kept, and the partial answer marked as cut."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    messages = tidy(messages)
    if not any(
        isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
        for m in messages[len(history) :]
    ) and isinstance(prompt, str):
        # Interrupted before the run recorded the prompt: keep it so the next turn has context.
        messages.append(ModelRequest(parts=[UserPromptPart(prompt)]))
    if messages and isinstance(messages[-1], ModelRequest):
        if partial.strip():
            messages.append(ModelResponse(parts=[TextPart(f"{partial} {INTERRUPTED_MARK}")]))
        elif any(isinstance(p, UserPromptPart) for p in messages[-1].parts):
            messages.append(
                ModelResponse(parts=[TextPart(f"{INTERRUPTED_MARK} (before answering)")])
            )
    return messages


def returned_ids(messages: list[ModelMessage]) -> dict[str, str]:
    """tool_call_id -> tool name of every tool return in ``messages``."""
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    return {
        p.tool_call_id: p.tool_name
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    }


def ends_with_request(messages: list[ModelMessage]) -> bool:
    from pydantic_ai.messages import ModelRequest

    return bool(messages) and isinstance(messages[-1], ModelRequest)
