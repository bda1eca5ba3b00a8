"""Slack tools over a bot token (setting `slack_bot_token`, or SLACK_BOT_TOKEN).

Read channels, messages, threads and people; post a message only after the person approves.
Registered when a token is set; nothing is imported or asked of Slack until the first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import ToolsetBuild

if TYPE_CHECKING:
    from collections.abc import Callable

    from ...config import Settings
    from ...session_state import CoDeps

__all__ = ["APPROVAL", "NOT_CONFIGURED", "build"]

APPROVAL: dict[str, bool] = {
    "list_slack_channels": False,
    "list_slack_messages": False,
    "list_slack_replies": False,
    "list_slack_users": False,
    "send_slack_message": True,
}
NOT_CONFIGURED = (
    "no Slack bot token: set `slack_bot_token` in settings or SLACK_BOT_TOKEN (a bot token "
    "`xoxb-...` with the scopes channels:read, channels:history, groups:read, groups:history, "
    "users:read and chat:write)"
)


def build(settings: Settings) -> ToolsetBuild:
    """The Slack toolset, or the reason it is not registered."""
    token = settings.slack_bot_token
    if token is None or not token.get_secret_value().strip():
        return ToolsetBuild("slack", reason=NOT_CONFIGURED)
    from pydantic_ai.toolsets import FunctionToolset

    from . import tools

    toolset: FunctionToolset[CoDeps] = FunctionToolset(id="slack")
    # One declared type: pyright cannot bind add_function's ParamSpec to a union of signatures.
    funcs: list[Callable[..., Any]] = [
        tools.list_slack_channels,
        tools.list_slack_messages,
        tools.list_slack_replies,
        tools.list_slack_users,
        tools.send_slack_message,
    ]
    for func in funcs:
        toolset.add_function(func, requires_approval=APPROVAL[func.__name__])
    return ToolsetBuild("slack", toolset, approval=dict(APPROVAL))
