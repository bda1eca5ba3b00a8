"""What the JupyterLab status bar shows about a Co session: model, tokens, yolo.

The kernel puts it, under the key ``co``, into two messages JupyterLab already receives:
the ``kernel_info_reply`` (so the bar is filled as soon as a notebook connects) and the
metadata of every ``execute_reply`` (so it follows each turn, ``%model`` switch or
approval with "Approve all"). No comm, no extra message, and other clients ignore it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import __version__

if TYPE_CHECKING:
    from .turn import ChatSession

__all__ = ["LAB_STATUS_KEY", "lab_status", "session_tokens"]

LAB_STATUS_KEY = "co"


def session_tokens(history: list[Any]) -> tuple[int, int]:
    """Input and output tokens of the model responses in a conversation.

    The conversation is the session (its id survives ``%resume``); a turn replaced by
    re-running its cell is no longer part of it and no longer counts.
    """
    from pydantic_ai.messages import ModelResponse

    input_tokens = output_tokens = 0
    for message in history:
        if isinstance(message, ModelResponse):
            input_tokens += message.usage.input_tokens or 0
            output_tokens += message.usage.output_tokens or 0
    return input_tokens, output_tokens


def lab_status(get_session: Callable[[], ChatSession]) -> dict[str, Any]:
    """The session's status as JSON; never raises, since it rides on every reply."""
    status: dict[str, Any] = {"version": __version__}
    try:
        session = get_session()
        settings = session.settings
        input_tokens, output_tokens = session_tokens(session.history) if session.history else (0, 0)
        status.update(
            session_id=session.deps.session_id,
            model=session.model_string,
            turns=len(session.turns),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            yolo=bool(session.deps.auto_confirm),
            approval_mode=settings.approval_mode,
        )
    except Exception as exc:  # a broken session must not break kernel_info or a reply
        status["error"] = f"{type(exc).__name__}: {exc}"
    return status
