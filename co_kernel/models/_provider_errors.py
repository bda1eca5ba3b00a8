"""What to do when a model request fails: a turn retries, reflects or stops by this table.

| failure                          | action  | behaviour                                          |
|----------------------------------|---------|----------------------------------------------------|
| 400, 422                         | REFLECT | show the model the error body once so it corrects  |
| 401, 403                         | ABORT   | end the turn naming the key or setting to fix      |
| 404                              | ABORT   | end the turn naming the model and `%model`         |
| 402, quota, context window, 4xx  | ABORT   | end the turn with the provider's reason            |
| 429                              | BACKOFF | wait Retry-After (seconds or HTTP date), default 3 s |
| 408, 5xx, network, timeout, bad stream | BACKOFF | 2 s, doubling, capped at 30 s             |
| an answer without a finish reason | BACKOFF | a dropped stream (``_finish.RequireFinish``)   |

The waits come from settings (``model_backoff_base``, ``model_backoff_cap``) so a test can
make them short; the turn retries at most ``model_http_retries`` times (``turn/_run.py``).
pydantic-ai 2.x raises a category per failure (``ModelRateLimitError``,
``ModelServerError``, ``ModelConnectionError``...), and an ``HTTPError`` variant when a
status code came with it; both are read here so a provider that only sends the status
and one that only sends the category are treated alike.
"""

from __future__ import annotations

import email.utils
import enum
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard

from ..inert import inert_code, inert_text

__all__ = [
    "BACKOFF_BASE",
    "BACKOFF_CAP",
    "RATE_LIMIT_DEFAULT",
    "ErrorAction",
    "ProviderErrorKind",
    "backoff_delay",
    "classify_provider_error",
    "parse_retry_after",
]

BACKOFF_BASE = 2.0
"""First wait in seconds for 5xx and network failures; doubles with each retry."""
BACKOFF_CAP = 30.0
"""No wait is longer, not even one a provider asks for."""
RATE_LIMIT_DEFAULT = 3.0
"""First wait after a 429 that did not say how long to wait."""


class ProviderErrorKind(enum.Enum):
    """How a turn reacts to a failed model request."""

    REFLECT = "reflect"
    ABORT = "abort"
    BACKOFF = "backoff"


@dataclass
class ErrorAction:
    """The verdict on one failure."""

    kind: ProviderErrorKind
    """Reflect, abort or back off."""
    message: str
    """What the person reads in the cell (one sentence, no trailing full stop)."""
    retry_after: float | None = None
    """Seconds the provider asked us to wait (429 with Retry-After)."""
    status: int | None = None
    """HTTP status, when there was one."""
    body: str = ""
    """The provider's error text, shown to the model when reflecting."""
    rate_limited: bool = False
    """A 429: without Retry-After the first wait is ``RATE_LIMIT_DEFAULT``."""


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _is_mapping(value: object) -> TypeGuard[Mapping[object, object]]:
    """``isinstance(value, Mapping)``, typed for reading: keys and values as objects (the
    check alone leaves the type checker with a mapping of unknown types)."""
    return isinstance(value, Mapping)


def _body_text(body: object) -> str:
    """The provider's own words from an error body (OpenAI, Anthropic, Gemini shapes)."""
    if body is None:
        return ""
    if _is_mapping(body):
        err = body.get("error", body)
        if _is_mapping(err):
            message = err.get("message")
            if message:
                kind = err.get("type") or err.get("status") or err.get("code")
                return f"{message} ({kind})" if isinstance(kind, str) and kind else str(message)
        elif isinstance(err, str) and err:
            return err
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    return str(body).strip()[:2000]


def _short(exc: BaseException) -> str:
    """The exception's first line, as plain text (``_quoted`` puts it into a notice)."""
    cause = exc.__cause__ or exc
    text = str(cause).strip()
    return (text.splitlines()[0] if text else type(cause).__name__)[:200]


def _quoted(exc: BaseException) -> str:
    return inert_text(_short(exc))


_KEY_HINTS = {
    "gemini": "`GEMINI_API_KEY`",
    "openai": "`OPENAI_API_KEY`",
    "anthropic": "`ANTHROPIC_API_KEY`",
    "compat": "`CO_API_KEY` (and `CO_BASE_URL`)",
    "ollama": "`OLLAMA_HOST`",
    "replay": "the replay script",
}


def _header(exc: object, name: str) -> str | None:
    headers: object = getattr(exc, "headers", None)
    if not _is_mapping(headers):
        return None
    for key, value in headers.items():
        if str(key).lower() == name:
            return str(value)
    return None


def classify_provider_error(exc: BaseException, *, provider: str, model: str) -> ErrorAction | None:
    """Classify a model-request failure; None means it is not a provider error."""
    from pydantic_ai import exceptions as x

    if not isinstance(exc, x.ModelAPIError):
        return None
    from ._record_replay import ReplayMismatch

    if isinstance(exc, ReplayMismatch):  # the script and the notebook differ: say where
        return ErrorAction(ProviderErrorKind.ABORT, exc.message)
    status = exc.status_code if isinstance(exc, x.ModelHTTPError) else None
    raw = _body_text(exc.body) or _short(exc)
    # What the provider wrote is outside text: inert in the notice, as it is for the model.
    detail = inert_text(raw)
    who = f"The {provider} provider"
    if status in (401, 403) or isinstance(exc, x.ModelAuthenticationError):
        fix = _KEY_HINTS.get(provider, "the provider's credentials")
        what = "refused access" if status == 403 else "rejected the credentials"
        return ErrorAction(
            ProviderErrorKind.ABORT,
            f"{who} {what} (HTTP {status or 401}): {detail}. "
            f"To fix: check {fix}, or switch model with `%model provider:model`",
            status=status,
        )
    if status == 404 or isinstance(exc, x.ModelNotFoundError):
        return ErrorAction(
            ProviderErrorKind.ABORT,
            f"Model {inert_code(model)} was not found by the {provider} provider (HTTP 404): {detail}. "
            "Pick an available model with `%model provider:model`",
            status=status,
        )
    if isinstance(exc, x.ModelQuotaExceededError) or status == 402:
        return ErrorAction(
            ProviderErrorKind.ABORT,
            f"{who} says the account's quota is used up (HTTP {status or 429}): {detail}. "
            "Check the plan or billing, or switch model with `%model`",
            status=status,
        )
    if status == 429 or isinstance(exc, x.ModelRateLimitError):
        after = parse_retry_after(_header(exc, "retry-after"))
        if after is None:
            after = exc.retry_after
        asked = f"; it asked to wait {after:g} s" if after is not None else ""
        return ErrorAction(
            ProviderErrorKind.BACKOFF,
            f"Rate limited by the {provider} provider (HTTP 429){asked}",
            retry_after=after,
            status=429,
            rate_limited=True,
        )
    if isinstance(exc, x.ModelContextWindowExceededError):
        return ErrorAction(
            ProviderErrorKind.ABORT,
            f"The conversation no longer fits {inert_code(model)}'s context window: {detail}. "
            "Start a new conversation or shorten it, then ask again",
            status=status,
        )
    if status is not None and (status >= 500 or status == 408):
        return ErrorAction(
            ProviderErrorKind.BACKOFF, f"{who} failed (HTTP {status}): {detail}", status=status
        )
    if status in (400, 422) or (status is None and isinstance(exc, x.ModelRequestRejectedError)):
        return ErrorAction(
            ProviderErrorKind.REFLECT,
            f"{who} rejected the request (HTTP {status or 400}): {detail}",
            status=status,
            body=raw,
        )
    if status is not None and 400 <= status < 500:
        return ErrorAction(
            ProviderErrorKind.ABORT,
            f"{who} refused the request (HTTP {status}): {detail}",
            status=status,
        )
    return ErrorAction(ProviderErrorKind.BACKOFF, _transient(exc, who, provider), status=status)


def _transient(exc: BaseException, who: str, provider: str) -> str:
    """What a failure a retry may cure (timeout, lost connection, bad stream) reads as."""
    from pydantic_ai import exceptions as x

    from ._finish import UnfinishedResponse

    if isinstance(exc, UnfinishedResponse):
        return f"{who}'s answer ended without finishing (no finish reason)"
    if isinstance(exc, x.ModelTimeoutError):
        return f"{who} did not answer in time (setting `request_timeout`)"
    if isinstance(exc, x.ModelConnectionError):
        if exc.phase in ("pool", "connect") or (exc.phase is None and _never_connected(exc)):
            return f"Could not reach the {provider} provider ({_quoted(exc)})"
        return f"Lost the connection to the {provider} provider ({_quoted(exc)})"
    if isinstance(exc, x.ModelServerError | x.ModelUnavailableError):
        return f"{who} is unavailable ({_quoted(exc)})"
    # A malformed stream (invalid SSE chunk) and anything else a retry may cure.
    return f"{who} sent a response Co could not read ({_quoted(exc)})"


def _never_connected(exc: BaseException) -> bool:
    """True when the connection failed before any byte (refused, DNS), not mid-answer."""
    seen: BaseException | None = exc
    for _ in range(8):  # the cause chain is short; the bound only guards against cycles
        if seen is None:
            return False
        if type(seen).__name__ in ("ConnectError", "ConnectTimeout", "ConnectionRefusedError"):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def backoff_delay(
    action: ErrorAction, attempt: int, *, base: float = BACKOFF_BASE, cap: float = BACKOFF_CAP
) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based), never more than ``cap``."""
    if action.retry_after is not None:
        return min(action.retry_after, cap)
    first = RATE_LIMIT_DEFAULT if action.rate_limited else base
    return min(first * 2.0 ** (attempt - 1), cap)
