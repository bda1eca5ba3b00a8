"""Google API failures, classified into the tool error kinds of ``tools/_errors.py``.

| kind        | the model gets                                  | Google answers                         |
|-------------|-------------------------------------------------|----------------------------------------|
| `TERMINAL`  | a result ``{"display": ..., "error": True}``    | 401, refresh refused, API not enabled, |
|             | naming what the person must do                  | missing scope, no access (403)         |
| `TRANSIENT` | ``ModelRetry``: call again                      | 429, 5xx, 403 rate limits, network     |
| `MISUSE`    | ``ModelRetry`` with a hint to fix the arguments | 404 (bad id), 400 (bad query)          |

``ClassifiedError``, ``ToolErrorKind``, ``handle_tool_error`` and ``tool_error_result`` are
the shared ones from ``co_kernel/tools/_errors.py`` (Slack classifies its failures the same way).
"""

from __future__ import annotations

import json
from typing import Any

from ...exceptions import ToolErrorKind
from .._errors import ClassifiedError, handle_tool_error, tool_error_result
from .._json import as_list, as_object

__all__ = [
    "ClassifiedError",
    "ToolErrorKind",
    "classify_google_error",
    "handle_tool_error",
    "tool_error_result",
]


# The API's service name, for the "enable it" link when a project has not enabled it.
_SERVICE_NAMES = {
    "Drive": "drive.googleapis.com",
    "Gmail": "gmail.googleapis.com",
    "Calendar": "calendar-json.googleapis.com",
}
_DISABLED = {"accessNotConfigured", "SERVICE_DISABLED"}
_SCOPE = {"insufficientPermissions", "ACCESS_TOKEN_SCOPE_INSUFFICIENT"}
_RATE = {"rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"}


def _error_body(content: bytes) -> tuple[set[str], str | None]:
    """The reasons Google gave (``errors[].reason`` and ``details[].reason``) and an
    activation URL, from an error body of the documented shape."""
    try:
        data = json.loads(content.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return set(), None
    error = as_object((as_object(data) or {}).get("error"))
    if error is None:
        return set(), None
    reasons: set[str] = set()
    url: str | None = None
    for item in map(as_object, [*as_list(error.get("errors")), *as_list(error.get("details"))]):
        if item is None:
            continue
        if isinstance(item.get("reason"), str):
            reasons.add(item["reason"])
        meta = as_object(item.get("metadata"))
        if meta is not None and isinstance(meta.get("activationUrl"), str):
            url = meta["activationUrl"]
    return reasons, url


def classify_google_error(
    error: Exception, *, api: str, auth_fix: str, not_found: str
) -> ClassifiedError:
    """Classify an exception from a Google API call.

    ``api`` names the API ("Drive"), ``auth_fix`` says how to sign in again, ``not_found``
    is the hint for a 404 (which id was wrong and where to get a good one).
    """
    from google.auth.exceptions import RefreshError, TransportError
    from googleapiclient.errors import HttpError  # pyright: ignore[reportMissingTypeStubs]

    if isinstance(error, RefreshError):
        return ClassifiedError(
            ToolErrorKind.TERMINAL,
            f"Google refused Co's saved sign-in ({error}). The person must {auth_fix}; "
            "tell them, then stop using Google tools until they have.",
        )
    if isinstance(error, HttpError):
        return _classify_http(error, api=api, auth_fix=auth_fix, not_found=not_found)
    if isinstance(error, TransportError | OSError | TimeoutError):
        return ClassifiedError(ToolErrorKind.TRANSIENT, f"Could not reach the {api} API ({error}).")
    import httplib2

    if isinstance(error, httplib2.HttpLib2Error):
        return ClassifiedError(ToolErrorKind.TRANSIENT, f"Could not reach the {api} API ({error}).")
    raise error


def _classify_http(error: Any, *, api: str, auth_fix: str, not_found: str) -> ClassifiedError:
    status = int(error.resp.status)
    reason = str(error.reason or "").strip() or f"HTTP {status}"
    reasons, activation = _error_body(error.content)
    said = f"The {api} API answered {status}: {reason}"
    if status in (408, 429) or status >= 500 or (status == 403 and reasons & _RATE):
        return ClassifiedError(ToolErrorKind.TRANSIENT, f"{said}.")
    if status == 401:
        return ClassifiedError(
            ToolErrorKind.TERMINAL,
            f"{said}. Co's Google sign-in is no longer valid: the person must {auth_fix}.",
        )
    if status == 403 and reasons & _DISABLED:
        service = _SERVICE_NAMES.get(api, "the API")
        link = activation or f"https://console.cloud.google.com/apis/library/{service}"
        return ClassifiedError(
            ToolErrorKind.TERMINAL,
            f"The {api} API is not enabled for the Google Cloud project of Co's OAuth client. "
            f"The person must enable it at {link}, wait a minute, and ask again.",
        )
    if status == 403 and reasons & _SCOPE:
        return ClassifiedError(
            ToolErrorKind.TERMINAL,
            f"{said}. Co's Google sign-in does not include {api} access: the person must "
            f"{auth_fix} and allow {api}.",
        )
    if status == 404:
        return ClassifiedError(ToolErrorKind.MISUSE, f"{said}.", hint=not_found)
    if status == 400:
        return ClassifiedError(
            ToolErrorKind.MISUSE,
            f"{said}.",
            hint="Correct the arguments (query syntax, ids, dates) and call again.",
        )
    return ClassifiedError(
        ToolErrorKind.TERMINAL,
        f"{said}. The account Co signed in with is not allowed to do this; say so and "
        "suggest another way.",
    )
