"""What to do when a model request fails (seed 001 "Provider Error Handling").

| status              | action  | behaviour                                             |
|---------------------|---------|-------------------------------------------------------|
| 400                 | REFLECT | show the model the error body once so it can correct  |
| 401, 403            | ABORT   | end the turn naming the key or setting to fix         |
| 404                 | ABORT   | end the turn naming the model and `%model`            |
| 429                 | BACKOFF | wait Retry-After (seconds or HTTP date), default 3 s  |
| 5xx, network, timeout | BACKOFF | 2 s, doubling, capped at 30 s                       |
"""

from __future__ import annotations

import email.utils
import enum
import time
from dataclasses import dataclass

__all__ = ["ErrorAction", "ProviderErrorKind", "backoff_delay", "classify_provider_error"]

BACKOFF_BASE = 2.0
BACKOFF_CAP = 30.0
RATE_LIMIT_DEFAULT = 3.0


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
    """What the person reads in the cell."""
    retry_after: float | None = None
    """Seconds the provider asked us to wait (429)."""
    status: int | None = None
    """HTTP status, when there was one."""
    body: str = ""
    """The provider's error body, for reflection."""


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _body_text(body: object) -> str:
    if body is None:
        return ""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and "message" in err:
            return str(err["message"])
    return str(body)[:2000]


_KEY_HINTS = {
    "gemini": "GEMINI_API_KEY",
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "compat": "CO_API_KEY",
}


def classify_provider_error(exc: BaseException, *, provider: str, model: str) -> ErrorAction | None:
    """Classify a model-request failure; None means it is not a provider error."""
    from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError

    if isinstance(exc, ModelHTTPError):
        status = exc.status_code
        detail = _body_text(exc.body)
        if status in (401, 403):
            var = _KEY_HINTS.get(provider)
            fix = f"check `{var}`" if var else "check the provider's credentials"
            what = "rejected the API key" if status == 401 else "refused access"
            return ErrorAction(
                ProviderErrorKind.ABORT,
                f"The {provider} provider {what} (HTTP {status}): {detail or 'no detail'}. "
                f"To fix: {fix}, or switch model with `%model`.",
                status=status,
            )
        if status == 404:
            return ErrorAction(
                ProviderErrorKind.ABORT,
                f"Model `{model}` was not found by the {provider} provider (HTTP 404): "
                f"{detail or 'no detail'}. Pick an available model with `%model provider:model`.",
                status=status,
            )
        if status == 429:
            headers = exc.headers or {}
            after = _parse_retry_after(headers.get("retry-after"))
            if after is None:
                after = exc.retry_after if exc.retry_after is not None else RATE_LIMIT_DEFAULT
            return ErrorAction(
                ProviderErrorKind.BACKOFF,
                f"Rate limited by {provider} (HTTP 429)",
                retry_after=after,
                status=status,
            )
        if status >= 500:
            return ErrorAction(
                ProviderErrorKind.BACKOFF, f"{provider} server error (HTTP {status})", status=status
            )
        if status == 400 or 400 <= status < 500:
            return ErrorAction(
                ProviderErrorKind.REFLECT,
                f"The {provider} provider rejected the request (HTTP {status}): {detail}",
                status=status,
                body=detail,
            )
    if isinstance(exc, ModelAPIError):
        return ErrorAction(
            ProviderErrorKind.BACKOFF,
            f"Could not reach the {provider} provider ({_short(exc)})",
        )
    return None


def _short(exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    text = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return text[:200]


def backoff_delay(action: ErrorAction, attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based)."""
    if action.retry_after is not None:
        return min(action.retry_after, BACKOFF_CAP)
    return min(BACKOFF_BASE * (2 ** (attempt - 1)), BACKOFF_CAP)
