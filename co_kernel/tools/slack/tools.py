"""Slack tools: channels, messages, threads, people, and posting (approved).

The ``slack_sdk.WebClient`` is created on the first call and kept in ``CoDeps.extras``; so are
the workspace URL (from ``auth.test``, for permalinks) and the channel and user names.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import ModelRetry, RunContext

from ...session_state import CoDeps, ExtrasKey
from .._errors import handle_tool_error
from .._paging import pages
from ._errors import classify_slack_error

__all__ = [
    "list_slack_channels",
    "list_slack_messages",
    "list_slack_replies",
    "list_slack_users",
    "send_slack_message",
]

_HTTP_TIMEOUT = 30
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{6,}$")

# -- session state -------------------------------------------------------------------------

_LOCK = ExtrasKey[threading.Lock]("slack_lock")
"""Makes the session's one client while tools run in threads."""
_CLIENT = ExtrasKey[Any]("slack_client")
"""The session's ``slack_sdk.WebClient`` (imported with the first call)."""
_URL = ExtrasKey[str]("slack_url")
"""The workspace's web address, for permalinks."""
_USERS = ExtrasKey[dict[str, str]]("slack_users")
"""User id -> display name."""
_CHANNELS = ExtrasKey[dict[str, str]]("slack_channels")
"""Channel name -> id, of the channels listed so far."""


def _client(deps: CoDeps) -> Any:
    lock = deps.extras.get_or_create(_LOCK, threading.Lock)
    with lock:
        client = deps.extras.get(_CLIENT)
        if client is None:
            from slack_sdk import WebClient

            token = deps.settings.slack_bot_token
            kwargs: dict[str, Any] = {"timeout": _HTTP_TIMEOUT}
            if deps.settings.slack_api_base_url:
                kwargs["base_url"] = deps.settings.slack_api_base_url
            client = WebClient(token=token.get_secret_value() if token else None, **kwargs)
            deps.extras[_CLIENT] = client
        return client


def _workspace_url(deps: CoDeps, client: Any) -> str:
    """The workspace's web address (``auth.test``), once per session, for permalinks."""
    url = deps.extras.get(_URL)
    if url is None:
        url = str(client.auth_test().get("url") or "https://slack.com/")
        deps.extras[_URL] = url
    return url


def _permalink(base: str, channel: str, ts: str, thread_ts: str | None = None) -> str:
    # Slack's permalink format: /archives/<channel>/p<ts without the dot>.
    link = f"{base.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"
    if thread_ts and thread_ts != ts:
        link += f"?thread_ts={thread_ts}&cid={channel}"
    return link


def _user_names(deps: CoDeps, client: Any) -> dict[str, str]:
    """User id -> name, from the first page of ``users.list``; names are a courtesy, so a
    failure here leaves ids in the output instead of failing the call."""
    names = deps.extras.get(_USERS)
    if names is None:
        from slack_sdk.errors import SlackApiError

        try:
            members: list[Any] = client.users_list(limit=200).get("members", [])
        except SlackApiError:
            members = []
        names = {m["id"]: _display_name(m) for m in members if "id" in m}
        deps.extras[_USERS] = names
    return names


def _display_name(member: dict[str, Any]) -> str:
    profile: dict[str, Any] = member.get("profile") or {}
    return str(
        profile.get("display_name")
        or profile.get("real_name")
        or member.get("real_name")
        or member.get("name")
        or member.get("id")
    )


def _channel_id(deps: CoDeps, client: Any, channel: str) -> str:
    """A channel id from an id, ``#name`` or ``name``."""
    name = channel.strip().lstrip("#")
    if _CHANNEL_ID.match(name):
        return name
    known = deps.extras.get_or_create(_CHANNELS, dict[str, str])
    if name not in known:
        cursor = None
        for _ in range(10):  # at most 10 pages of 200 channels
            answer = client.conversations_list(
                types="public_channel,private_channel",
                exclude_archived=True,
                limit=200,
                cursor=cursor,
            )
            known.update({c["name"]: c["id"] for c in answer.get("channels", []) if "name" in c})
            cursor = _next_cursor(answer)
            if name in known or not cursor:
                break
    if name not in known:
        raise ModelRetry(
            f"No channel named '{name}' that the bot can see. "
            "Use a channel id or name from `list_slack_channels`."
        )
    return known[name]


def _run(deps: CoDeps, body: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    try:
        return body(_client(deps))
    except ModelRetry:
        raise
    except Exception as exc:
        failure = classify_slack_error(exc)
        return handle_tool_error(failure.kind, failure.message, hint=failure.hint)


def _time(ts: str) -> str:
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError):
        return ts


def _message_line(message: dict[str, Any], names: dict[str, str], base: str, channel: str) -> str:
    who = message.get("user")
    author = names.get(who, who) if who else message.get("username") or "bot"
    ts = str(message.get("ts", ""))
    text = (message.get("text") or "").strip() or "(no text)"
    line = f"- {_time(ts)} **{author}**: {text}"
    replies = int(message.get("reply_count") or 0)
    if replies:
        line += f"\n  {replies} repl{'y' if replies == 1 else 'ies'}, thread_ts `{ts}`"
    link = _permalink(base, channel, ts, message.get("thread_ts"))
    return line + f"\n  {link}"


def _next_cursor(answer: Any) -> str | None:
    metadata: dict[str, Any] = answer.get("response_metadata") or {}
    return metadata.get("next_cursor") or None


# -- tools ---------------------------------------------------------------------------------


def list_slack_channels(
    ctx: RunContext[CoDeps], page: Annotated[int, Field(ge=1)] = 1
) -> dict[str, Any]:
    """List the Slack channels the bot can see, with their ids.

    Args:
        page: 1 for the first channels; page + 1 for more when has_more was true.
    """
    listing = pages(ctx.deps, "slack:channels")
    cursor = listing.token_for(page)

    def body(client: Any) -> dict[str, Any]:
        answer = client.conversations_list(
            types="public_channel,private_channel", exclude_archived=True, limit=100, cursor=cursor
        )
        channels = answer.get("channels", [])
        ctx.deps.extras.get_or_create(_CHANNELS, dict[str, str]).update(
            {c["name"]: c["id"] for c in channels if "name" in c and "id" in c}
        )
        has_more = listing.record(page, _next_cursor(answer))
        lines: list[str] = []
        for c in channels:
            kind = "private" if c.get("is_private") else "public"
            member = "" if c.get("is_member") else ", bot not a member"
            about: dict[str, Any] = c.get("topic") or {}
            topic = str(about.get("value") or "").strip()
            line = f"- #{c.get('name')} (id `{c.get('id')}`, {kind}{member})"
            lines.append(line + (f": {topic}" if topic else ""))
        if not lines:
            lines = ["The bot sees no channels; invite it to one with `/invite @<bot name>`."]
        if has_more:
            lines.append(f"More channels: page {page + 1}.")
        return {"display": "\n".join(lines), "count": len(channels), "has_more": has_more}

    return _run(ctx.deps, body)


def list_slack_messages(
    ctx: RunContext[CoDeps],
    channel: Annotated[str, Field(min_length=1, max_length=100)],
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    page: Annotated[int, Field(ge=1)] = 1,
) -> dict[str, Any]:
    """List the newest messages of a Slack channel, newest first, with permalinks.

    Args:
        channel: A channel id (`C0123ABCD`) or name (`#general`).
        limit: How many messages per page.
        page: 1 for the newest; page + 1 for older ones when has_more was true.
    """

    def body(client: Any) -> dict[str, Any]:
        channel_id = _channel_id(ctx.deps, client, channel)
        listing = pages(ctx.deps, f"slack:history:{channel_id}:{limit}")
        cursor = listing.token_for(page)
        answer = client.conversations_history(channel=channel_id, limit=limit, cursor=cursor)
        messages = answer.get("messages", [])
        has_more = listing.record(page, _next_cursor(answer))
        base = _workspace_url(ctx.deps, client)
        names = _user_names(ctx.deps, client)
        lines = [_message_line(m, names, base, channel_id) for m in messages]
        if not lines:
            lines = [f"No messages in {channel}."]
        if has_more:
            lines.append(f"Older messages: page {page + 1}.")
        return {"display": "\n".join(lines), "count": len(messages), "has_more": has_more}

    return _run(ctx.deps, body)


def list_slack_replies(
    ctx: RunContext[CoDeps],
    channel: Annotated[str, Field(min_length=1, max_length=100)],
    thread_ts: Annotated[str, Field(min_length=1, max_length=40)],
) -> dict[str, Any]:
    """Read a Slack thread: the parent message and its replies, oldest first.

    Args:
        channel: The channel id or name the thread is in.
        thread_ts: The thread's `thread_ts`, as `list_slack_messages` showed it.
    """

    def body(client: Any) -> dict[str, Any]:
        channel_id = _channel_id(ctx.deps, client, channel)
        answer = client.conversations_replies(channel=channel_id, ts=thread_ts, limit=200)
        messages = answer.get("messages", [])
        base = _workspace_url(ctx.deps, client)
        names = _user_names(ctx.deps, client)
        lines = [_message_line(m, names, base, channel_id) for m in messages]
        has_more = bool(answer.get("has_more"))
        if has_more:
            lines.append("The thread has more replies than shown (first 200).")
        return {
            "display": "\n".join(lines) or "The thread has no messages.",
            "count": len(messages),
            "has_more": has_more,
        }

    return _run(ctx.deps, body)


def list_slack_users(
    ctx: RunContext[CoDeps], page: Annotated[int, Field(ge=1)] = 1
) -> dict[str, Any]:
    """List the people of the Slack workspace with their ids (bots and deactivated left out).

    Args:
        page: 1 for the first people; page + 1 for more when has_more was true.
    """
    listing = pages(ctx.deps, "slack:users")
    cursor = listing.token_for(page)

    def body(client: Any) -> dict[str, Any]:
        answer = client.users_list(limit=100, cursor=cursor)
        members = answer.get("members", [])
        has_more = listing.record(page, _next_cursor(answer))
        people = [
            m
            for m in members
            if not m.get("deleted") and not m.get("is_bot") and m.get("id") != "USLACKBOT"
        ]
        lines: list[str] = []
        for m in people:
            profile: dict[str, Any] = m.get("profile") or {}
            title = str(profile.get("title") or "").strip()
            line = f"- {_display_name(m)} (@{m.get('name')}, id `{m.get('id')}`)"
            lines.append(line + (f", {title}" if title else ""))
        if not lines:
            lines = ["No people on this page."]
        if has_more:
            lines.append(f"More people: page {page + 1}.")
        return {"display": "\n".join(lines), "count": len(people), "has_more": has_more}

    return _run(ctx.deps, body)


def send_slack_message(
    ctx: RunContext[CoDeps],
    channel: Annotated[str, Field(min_length=1, max_length=100)],
    text: Annotated[str, Field(min_length=1, max_length=40_000)],
) -> dict[str, Any]:
    """Post a message to a Slack channel as the Co bot.

    Args:
        channel: A channel id (`C0123ABCD`) or name (`#general`).
        text: The message, in Slack's mrkdwn.
    """

    def body(client: Any) -> dict[str, Any]:
        channel_id = _channel_id(ctx.deps, client, channel)
        answer = client.chat_postMessage(channel=channel_id, text=text)
        ts = str(answer.get("ts", ""))
        link = _permalink(_workspace_url(ctx.deps, client), answer.get("channel", channel_id), ts)
        return {"display": f"Sent to {channel}: {link}", "ts": ts, "link": link}

    return _run(ctx.deps, body)
