"""Tool errors the model can read, classified so it knows whether to retry, fix or give up.

| kind       | what the model gets                              | example                      |
|------------|--------------------------------------------------|------------------------------|
| `TERMINAL` | a result `{"display": ..., "error": True}`       | auth failure, API disabled   |
| `TRANSIENT`| `ModelRetry`: call again, the same way           | rate limit (429), 5xx        |
| `MISUSE`   | `ModelRetry` with a hint: correct the arguments  | unknown id (404), bad query  |

Tools raise ``ToolError(kind, message, hint=...)``; integrations map their APIs' HTTP
statuses with ``classify_http_status``. ``ToolErrorGuard`` is an agent capability that turns
every tool failure into one of the above, including exceptions nobody planned for, so a
broken tool costs the model one readable error instead of the turn. Retries are capped
by the tool's budget (setting ``tool_retries``): the call that would exceed it gets a
terminal result instead, so the model can still answer with what it has.

Every result and error message passes the session's redactor on its way to the model:
a file, page or command output that holds one of Co's own secret values (an API key from
the settings, a token) reaches the provider as ``[REDACTED]``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import (
    ModelRetry,
    ToolFailed,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)

from ..config import paths
from ..exceptions import PageReplayMismatch, ToolError, ToolErrorKind
from ..session_state import ExtrasKey
from ..telemetry import Redactor, redact_value

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import ValidatedToolArgs, WrapToolExecuteHandler
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import ToolDefinition

    from ..session_state import CoDeps

__all__ = [
    "ClassifiedError",
    "ToolErrorGuard",
    "classify_http_status",
    "handle_tool_error",
    "session_redactor",
    "tool_error_result",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClassifiedError:
    """A failure and what the model is told about it."""

    kind: ToolErrorKind
    """Terminal, transient or misuse."""
    message: str
    """What happened, in words the model can repeat to the person."""
    hint: str | None = None
    """How to correct the call (misuse only)."""


def classify_http_status(status: int) -> ToolErrorKind:
    """The kind of a failed HTTP call an integration made (Google, Slack, the web)."""
    if status in (408, 429) or status >= 500:
        return ToolErrorKind.TRANSIENT
    if status in (400, 404, 409, 422):
        return ToolErrorKind.MISUSE
    return ToolErrorKind.TERMINAL


def tool_error_result(message: str) -> dict[str, Any]:
    """The result of a call that failed for good; the model sees ``error: true``."""
    return {"display": message, "error": True}


def handle_tool_error(
    kind: ToolErrorKind, message: str, *, hint: str | None = None
) -> dict[str, Any]:
    """Return the terminal result, or raise ``ModelRetry`` for the other kinds."""
    if kind is ToolErrorKind.TERMINAL:
        return tool_error_result(message)
    _retry(kind, message, hint)


def _retry(kind: ToolErrorKind, message: str, hint: str | None) -> NoReturn:
    if kind is ToolErrorKind.TRANSIENT:
        raise ModelRetry(f"{message} This is temporary: try the same call again.")
    raise ModelRetry(
        f"{message} {hint or 'Check the arguments against the tool description and call again.'}"
    )


_REDACTOR = ExtrasKey[tuple[tuple[object, ...], Redactor]]("redactor")
"""The session's redactor, with the settings and files it was made from."""


def session_redactor(deps: CoDeps) -> Redactor:
    """The secrets a session's tools must not hand on (to the model, to a store).

    Those of the settings in force, of both settings files (also keys a later layer
    overrode), of the environment and of the credential files. Made again when the
    settings or either file changed (an edited file and `%mcp reload` bring new secrets).
    """
    files = [paths().settings_file, deps.workspace / ".co" / "settings.json"]
    key = (id(deps.settings), *(_stamp(f) for f in files))
    cached = deps.extras.get(_REDACTOR)
    if cached is not None and cached[0] == key:
        return cached[1]
    redactor = Redactor.from_settings(deps.settings, files=files)
    deps.extras[_REDACTOR] = (key, redactor)
    return redactor


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _describe(error: Exception) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


@dataclass
class ToolErrorGuard(AbstractCapability["CoDeps"]):
    """Turns every tool failure into a readable result or a capped retry."""

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    async def wrap_tool_execute(
        self,
        ctx: RunContext[CoDeps],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        """Run the call; its result, retry prompt or failure reaches the model with Co's
        secret values redacted (only known values: code and data stay as written)."""
        redact = session_redactor(ctx.deps).redact_literals
        try:
            result = await handler(args)
        except ModelRetry as exc:
            cleaned = redact(exc.message)
            if cleaned == exc.message:
                raise
            raise ModelRetry(cleaned) from None
        except ToolFailed as exc:
            cleaned = redact(exc.message)
            if cleaned == exc.message:
                raise
            raise ToolFailed(cleaned) from None
        return redact_value(result, redact)

    async def on_tool_execute_error(
        self,
        ctx: RunContext[CoDeps],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        error: Exception,
    ) -> Any:
        name = call.tool_name
        if isinstance(error, PageReplayMismatch):
            raise error  # the replay does not fit the notebook: the turn ends, naming why
        if isinstance(error, UsageLimitExceeded):
            # A subagent's request could pass a budget of the turn it spends: the turn ends,
            # and the calls beside this one (a card waiting for the person) are cancelled.
            raise error
        if isinstance(error, UnexpectedModelBehavior):
            # The tool raised ModelRetry itself once too often: pydantic-ai would end the
            # whole run here; the model gets a terminal result instead and can still answer.
            return tool_error_result(
                f"`{name}` failed too many times ({error.message}); "
                "do not call it again for this, use what you have or explain the problem."
            )
        if isinstance(error, ToolError):
            kind, message, hint = error.kind, f"`{name}` failed: {error.message}", error.hint
        else:
            # A bug or an unplanned failure in the tool: log it for whoever maintains the
            # tool, and let the model read what happened.
            log.debug("tool %s raised", name, exc_info=error)
            kind, message, hint = (
                ToolErrorKind.MISUSE,
                f"`{name}` raised an unexpected error: {_describe(error)}.",
                "Try different arguments or another way to reach the goal.",
            )
        if kind is not ToolErrorKind.TERMINAL and ctx.retry >= ctx.max_retries:
            return tool_error_result(
                f"{message} Gave up after {ctx.retry} retries (setting `tool_retries`); "
                "do not call it again for this, use what you have or explain the problem."
            )
        return handle_tool_error(kind, message, hint=hint)
