"""What the JupyterLab status bar shows about a Co session: model, tokens, cost, yolo.

The kernel puts it, under the key ``co``, into two messages JupyterLab already receives:
the ``kernel_info_reply`` (so the bar is filled as soon as a notebook connects) and the
metadata of every ``execute_reply`` (so it follows each turn, ``%model``, ``%yolo`` and
"Approve all"). No comm, no extra message, and other clients ignore it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__

if TYPE_CHECKING:
    from ..turn import SessionProtocol

__all__ = ["LAB_STATUS_KEY", "lab_status"]

LAB_STATUS_KEY = "co"


def lab_status(session: SessionProtocol | None) -> dict[str, Any]:
    """The session's status as JSON; never raises, since it rides on every reply.

    Before the session starts (``kernel_info``), the model comes from the settings the
    session will load: the kernel's working directory is the notebook's folder.
    """
    status: dict[str, Any] = {"version": __version__}
    try:
        if session is None:
            from ..config import load_settings

            settings = load_settings(Path.cwd()).settings
            status.update(
                session_id=None,
                model=settings.model,
                turns=0,
                input_tokens=0,
                output_tokens=0,
                yolo=False,
                approval_mode=settings.approval_mode,
            )
            return status
        from ..turn import session_cost, session_tokens

        input_tokens, output_tokens = session_tokens(session)
        status.update(
            session_id=session.session_id,
            model=session.model.name,
            turns=len(session.turns),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            # Formatted here, once, the way the footer and %usage write it.
            cost=str(session_cost(session)),
            yolo=bool(session.auto_confirm),
            approval_mode=session.settings.approval_mode,
        )
    except Exception as exc:  # a broken session must not break kernel_info or a reply
        status["error"] = f"{type(exc).__name__}: {exc}"
    return status
