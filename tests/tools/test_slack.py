"""Slack tools against a local Slack Web API through the real slack_sdk WebClient."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic_ai import ModelRetry

from co_kernel.tools._paging import pages
from co_kernel.tools.slack.tools import (
    list_slack_channels,
    list_slack_messages,
    list_slack_replies,
    list_slack_users,
    send_slack_message,
)

from ._slack_server import Channel, FakeSlack
from .conftest import ToolContext

MakeCtx = Callable[..., ToolContext]


def _workspace(slack: FakeSlack) -> None:
    slack.users = [
        {
            "id": "U0ALICE01",
            "name": "alice",
            "real_name": "Alice A",
            "profile": {"display_name": "alice", "real_name": "Alice A", "title": "Engineer"},
        },
        {"id": "U0BOB0001", "name": "bob", "profile": {"real_name": "Bob B", "display_name": ""}},
        {"id": "U0GONE001", "name": "gone", "deleted": True, "profile": {}},
        {"id": "U0BOT0001", "name": "co", "is_bot": True, "profile": {}},
    ]
    general = Channel("C0GENERAL1", "general", topic="Company-wide")
    general.messages = [
        {
            "type": "message",
            "user": "U0BOB0001",
            "text": "See <https://example.com/doc|the doc>",
            "ts": "1714557700.000200",
        },
        {
            "type": "message",
            "user": "U0ALICE01",
            "text": "Release today?",
            "ts": "1714557600.000100",
            "thread_ts": "1714557600.000100",
            "reply_count": 2,
        },
    ]
    general.threads["1714557600.000100"] = [
        general.messages[1],
        {
            "type": "message",
            "user": "U0BOB0001",
            "text": "Yes, at 5",
            "ts": "1714557650.000100",
            "thread_ts": "1714557600.000100",
        },
        {
            "type": "message",
            "user": "U0ALICE01",
            "text": "Great",
            "ts": "1714557660.000100",
            "thread_ts": "1714557600.000100",
        },
    ]
    slack.channels = [general, Channel("C0RANDOM01", "random", is_member=False)]


def test_channels_are_listed_with_ids(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    result = list_slack_channels(slack_ctx())
    assert result["count"] == 2 and result["has_more"] is False
    assert "#general (id `C0GENERAL1`, public): Company-wide" in result["display"]
    assert "#random (id `C0RANDOM01`, public, bot not a member)" in result["display"]
    assert slack.calls("conversations.list")[0].bearer == "xoxb-test-token"


def test_channels_page_with_the_next_cursor(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    slack.channels = [Channel(f"C0CHAN{i:04d}", f"chan-{i}") for i in range(130)]
    ctx = slack_ctx()
    first = list_slack_channels(ctx)
    assert first["count"] == 100 and first["has_more"] is True
    second = list_slack_channels(ctx, page=2)
    assert second["count"] == 30 and second["has_more"] is False
    calls = slack.calls("conversations.list")
    assert calls[0].param("cursor") is None
    assert calls[1].param("cursor") == pages(ctx.deps, "slack:channels").tokens[2]


def test_messages_by_channel_name_with_names_and_permalinks(
    slack: FakeSlack, slack_ctx: MakeCtx
) -> None:
    _workspace(slack)
    result = list_slack_messages(slack_ctx(), "#general")
    display = result["display"]
    assert result["count"] == 2
    assert "**Bob B**: See <https://example.com/doc|the doc>" in display
    assert "https://co-test.slack.com/archives/C0GENERAL1/p1714557700000200" in display
    assert "2 replies, thread_ts `1714557600.000100`" in display
    history = slack.calls("conversations.history")[0]
    assert history.param("channel") == "C0GENERAL1"


def test_replies_of_a_thread(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    result = list_slack_replies(slack_ctx(), "C0GENERAL1", "1714557600.000100")
    assert result["count"] == 3
    assert result["display"].index("Release today?") < result["display"].index("Yes, at 5")
    assert "?thread_ts=1714557600.000100&cid=C0GENERAL1" in result["display"]


def test_users_leave_out_bots_and_deactivated(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    result = list_slack_users(slack_ctx())
    assert result["count"] == 2
    assert "alice (@alice, id `U0ALICE01`), Engineer" in result["display"]
    assert "gone" not in result["display"] and "@co" not in result["display"]


def test_send_posts_and_links_the_message(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    result = send_slack_message(slack_ctx(), "general", "Deploy done :rocket:")
    assert slack.posted == [
        {"channel": "C0GENERAL1", "text": "Deploy done :rocket:", "ts": result["ts"]}
    ]
    assert (
        result["link"]
        == f"https://co-test.slack.com/archives/C0GENERAL1/p{result['ts'].replace('.', '')}"
    )


# -- failures -------------------------------------------------------------------------------


def test_bad_token_is_terminal_and_names_the_setting(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    result = list_slack_channels(slack_ctx(token="xoxb-wrong"))
    assert result["error"] is True
    assert "invalid_auth" in result["display"] and "slack_bot_token" in result["display"]


def test_unknown_channel_is_a_hint(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    with pytest.raises(ModelRetry, match=r"No channel named 'nowhere'.*list_slack_channels"):
        list_slack_messages(slack_ctx(), "#nowhere")
    with pytest.raises(ModelRetry, match=r"channel_not_found.*list_slack_channels"):
        list_slack_messages(slack_ctx(), "C0MISSING1")


def test_unknown_thread_is_a_hint(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    with pytest.raises(ModelRetry, match="thread_not_found"):
        list_slack_replies(slack_ctx(), "C0GENERAL1", "1.2")


def test_bot_not_in_channel_is_terminal_and_says_invite(
    slack: FakeSlack, slack_ctx: MakeCtx
) -> None:
    _workspace(slack)
    result = list_slack_messages(slack_ctx(), "random")
    assert result["error"] is True and "/invite" in result["display"]


def test_missing_scope_names_the_scope(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    slack.fail_next(
        "POST",
        r"/api/chat\.postMessage",
        200,
        {
            "ok": False,
            "error": "missing_scope",
            "needed": "chat:write",
            "provided": "channels:read",
        },
    )
    result = send_slack_message(slack_ctx(), "C0GENERAL1", "hi")
    assert result["error"] is True and "`chat:write`" in result["display"]
    assert slack.posted == []


def test_rate_limit_is_retried_with_the_wait(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    slack.fail_next(
        "POST",
        r"/api/conversations\.list",
        429,
        {"ok": False, "error": "ratelimited"},
        headers={"Retry-After": "3"},
    )
    ctx = slack_ctx()
    with pytest.raises(ModelRetry, match=r"rate limiting Co .*wait 3 s.*temporary"):
        list_slack_channels(ctx)
    assert list_slack_channels(ctx)["count"] == 2


def test_server_error_is_retried(slack: FakeSlack, slack_ctx: MakeCtx) -> None:
    _workspace(slack)
    slack.fail_next(
        "POST",
        r"/api/users\.list",
        500,
        "<html>Internal Server Error</html>",
        headers={"Content-Type": "text/html"},
    )
    with pytest.raises(ModelRetry, match=r"500.*temporary"):
        list_slack_users(slack_ctx())
