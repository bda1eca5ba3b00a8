"""One Google API call from a tool: credentials, service, classified failures."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ...exceptions import GoogleAuthUnavailable, ToolErrorKind
from ._auth import forget_credentials, save_refreshed_token, session_credentials
from ._errors import classify_google_error, handle_tool_error

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from ...session_state import CoDeps

__all__ = ["CALENDAR", "DRIVE", "GMAIL", "GoogleApi", "run_google"]

# Seconds one HTTP exchange with Google may take before it counts as a transient failure.
_HTTP_TIMEOUT = 30.0


@dataclass(frozen=True)
class GoogleApi:
    """One Google API as the client library's static discovery document names it."""

    name: str
    """Discovery name, e.g. ``drive``."""
    version: str
    """Discovery version, e.g. ``v3``."""
    label: str
    """What messages call it."""
    service_path: str
    """The document's ``servicePath``. ``client_options.api_endpoint`` replaces rootUrl and
    servicePath together, so an endpoint override must add it back."""


DRIVE = GoogleApi("drive", "v3", "Drive", "drive/v3/")
GMAIL = GoogleApi("gmail", "v1", "Gmail", "")
CALENDAR = GoogleApi("calendar", "v3", "Calendar", "calendar/v3/")


def _service(deps: CoDeps, api: GoogleApi, creds: Any) -> Any:
    # google-api-python-client and google-auth-httplib2 ship no types; the service object
    # is used as Google's API reference documents it.
    import google_auth_httplib2  # pyright: ignore[reportMissingTypeStubs]
    import httplib2
    from googleapiclient.discovery import build  # pyright: ignore[reportMissingTypeStubs, reportUnknownVariableType]

    # A new Http per call: httplib2 connections are not thread-safe, and sync tools run in
    # worker threads. Building from the shipped discovery document is a few milliseconds.
    http = google_auth_httplib2.AuthorizedHttp(creds, http=httplib2.Http(timeout=_HTTP_TIMEOUT))
    options: dict[str, str] = {}
    root = deps.settings.google_api_endpoint
    if root:
        options["api_endpoint"] = root.rstrip("/") + "/" + api.service_path
    return cast(Any, build)(
        api.name,
        api.version,
        http=http,
        static_discovery=True,
        cache_discovery=False,
        client_options=options or None,
    )


def run_google(
    ctx: RunContext[CoDeps],
    api: GoogleApi,
    body: Callable[[Any], dict[str, Any]],
    *,
    not_found: str,
) -> dict[str, Any]:
    """Run ``body(service)`` and turn any failure into what the model should get.

    ``not_found`` is the hint the model gets for a 404: which id was wrong and where a good
    one comes from.
    """
    from pydantic_ai import ModelRetry

    deps = ctx.deps
    try:
        creds, source = session_credentials(deps)
    except GoogleAuthUnavailable as exc:
        return handle_tool_error(ToolErrorKind.TERMINAL, str(exc))
    try:
        return body(_service(deps, api, creds))
    except ModelRetry:
        raise
    except Exception as exc:
        failure = classify_google_error(
            exc, api=api.label, auth_fix=source.fix, not_found=not_found
        )
        if failure.kind is ToolErrorKind.TERMINAL:
            # The person may sign in again during the session: read the files anew next time.
            forget_credentials(deps)
        return handle_tool_error(failure.kind, failure.message, hint=failure.hint)
    finally:
        # google-auth may have refreshed the access token during the call (expired, or a
        # 401): keep it for the next kernel, even when the call itself then failed.
        save_refreshed_token(deps)
