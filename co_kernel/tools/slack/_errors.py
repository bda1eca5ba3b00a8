"""Slack Web API failures, classified into the tool error kinds of ``tools/_errors.py``.

A bad or revoked token, a missing scope or a bot that is not in the channel is terminal and
names the fix; rate limits (429) and Slack outages (5xx) are transient; an unknown channel,
thread or cursor is misuse with a hint. Slack reports most failures as HTTP 200 with
``{"ok": false, "error": "<code>"}``, so the code matters more than the status.
"""

from __future__ import annotations

from typing import Any, cast

from ...exceptions import ToolErrorKind
from .._errors import ClassifiedError
from .._json import as_object

__all__ = ["classify_slack_error"]

_AUTH_ERRORS = {
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "no_permission",
    "org_login_required",
    "team_access_not_granted",
}
_TRANSIENT_ERRORS = {
    "ratelimited",
    "fatal_error",
    "internal_error",
    "service_unavailable",
    "request_timeout",
}
_MISUSE_HINTS = {
    "channel_not_found": "Use a channel id or name from `list_slack_channels`.",
    "thread_not_found": "Use a thread_ts from `list_slack_messages` (a message with replies).",
    "message_not_found": "Use a ts from `list_slack_messages`.",
    "invalid_cursor": "Start again from page 1.",
    "user_not_found": "Use a user id from `list_slack_users`.",
    "no_text": "Give the message some text.",
    "msg_too_long": "Shorten the message (Slack takes up to 40,000 characters).",
    "is_archived": "That channel is archived; pick another one from `list_slack_channels`.",
}


def classify_slack_error(error: Exception) -> ClassifiedError:
    """Classify a failure of a Slack Web API call as terminal, transient or misuse."""
    from slack_sdk.errors import SlackApiError, SlackClientError

    if not isinstance(error, SlackApiError):
        if isinstance(error, SlackClientError | OSError | TimeoutError):
            return ClassifiedError(ToolErrorKind.TRANSIENT, f"Could not reach Slack ({error}).")
        raise error
    # slack_sdk leaves the error's response untyped: a SlackResponse, read as documented.
    response = cast(object, error.response)  # pyright: ignore[reportUnknownMemberType]
    status = int(getattr(response, "status_code", 200) or 200)
    data = as_object(getattr(response, "data", None)) or {}
    code = str(data.get("error") or f"HTTP {status}")
    if status == 429 or code == "ratelimited":
        headers: dict[str, Any] = getattr(response, "headers", None) or {}
        wait = headers.get("Retry-After") or headers.get("retry-after")
        after = f" (Slack asks to wait {wait} s)" if wait else ""
        return ClassifiedError(ToolErrorKind.TRANSIENT, f"Slack is rate limiting Co{after}.")
    if status >= 500 or code in _TRANSIENT_ERRORS:
        return ClassifiedError(ToolErrorKind.TRANSIENT, f"Slack answered {status}: {code}.")
    if status in (401, 403) or code in _AUTH_ERRORS:
        return ClassifiedError(
            ToolErrorKind.TERMINAL,
            f"Slack refused the bot token ({code}). The person must set a valid bot token "
            "(`xoxb-...`) in the setting `slack_bot_token` or SLACK_BOT_TOKEN and restart "
            "the kernel.",
        )
    if code == "missing_scope":
        needed = data.get("needed") or "a scope this call needs"
        return ClassifiedError(
            ToolErrorKind.TERMINAL,
            f"The Slack app lacks the scope `{needed}`. The person must add it under OAuth & "
            "Permissions in the app's settings at https://api.slack.com/apps and reinstall "
            "the app to the workspace.",
        )
    if code == "not_in_channel":
        return ClassifiedError(
            ToolErrorKind.TERMINAL,
            "The Co bot is not a member of that channel. The person must invite it there "
            "(`/invite @<bot name>` in the channel); meanwhile use another channel.",
        )
    if code in _MISUSE_HINTS or status in (400, 404):
        return ClassifiedError(
            ToolErrorKind.MISUSE, f"Slack answered {code}.", hint=_MISUSE_HINTS.get(code)
        )
    return ClassifiedError(ToolErrorKind.TERMINAL, f"Slack refused the call ({code}).")
