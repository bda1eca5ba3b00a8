"""A local stand-in for the Slack Web API methods Co uses.

Answers as api.slack.com documents: HTTP 200 with ``{"ok": false, "error": code}`` for most
failures, 429 with Retry-After for rate limits, cursor pagination through
``response_metadata.next_cursor`` (empty at the end). The real ``slack_sdk.WebClient`` talks
to it through ``base_url``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ._fake_api import FakeApiServer, Paginator, Request, Response

BOT_USER = "U0BOT0001"
WORKSPACE_URL = "https://co-test.slack.com/"


@dataclass
class Channel:
    """A channel in the fake workspace."""

    id: str
    """Channel id."""
    name: str
    """Name without #."""
    is_member: bool = True
    """Whether the bot is in it."""
    is_private: bool = False
    """Private channel."""
    topic: str = ""
    """Topic text."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """Newest first, as conversations.history returns them."""
    threads: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """thread_ts -> parent and replies, oldest first."""


class FakeSlack(FakeApiServer):
    """The Slack Web API on a local server; `posted` records chat.postMessage calls."""

    def __init__(self, token: str = "xoxb-test-token") -> None:
        super().__init__()
        self.token = token
        self.channels: list[Channel] = []
        self.users: list[dict[str, Any]] = []
        self.posted: list[dict[str, str]] = []
        self._pages = Paginator()
        self._ts = 1714557600
        self.route("POST", r"/api/auth\.test", self._auth_test)
        self.route("POST", r"/api/conversations\.list", self._conversations_list)
        self.route("POST", r"/api/conversations\.history", self._history)
        self.route("POST", r"/api/conversations\.replies", self._replies)
        self.route("POST", r"/api/users\.list", self._users_list)
        self.route("POST", r"/api/chat\.postMessage", self._post)

    @property
    def api_base_url(self) -> str:
        """The base URL to give Co (setting `slack_api_base_url`)."""
        return self.base_url + "/api/"

    def calls(self, method: str) -> list[Request]:
        """Recorded calls of one Web API method, e.g. ``chat.postMessage``."""
        return self.requests_to("POST", "/api/" + re.escape(method))

    def handle(self, request: Request) -> Response:
        if request.bearer != self.token:
            with self._lock:
                self.requests.append(request)
            return Response(200, {"ok": False, "error": "invalid_auth"})
        return super().handle(request)

    def not_found(self, request: Request) -> Response:
        return Response(404, {"ok": False, "error": "unknown_method"})

    def _channel(self, request: Request) -> Channel | Response:
        wanted = request.param("channel")
        for c in self.channels:
            if c.id == wanted:
                return c
        return Response(200, {"ok": False, "error": "channel_not_found"})

    def _paged(self, request: Request, items: list[Any], key: str, listing: str) -> Response:
        size = int(request.param("limit") or 100)
        page = self._pages.page(items, size=size, token=request.param("cursor"), listing=listing)
        if page is None:
            return Response(200, {"ok": False, "error": "invalid_cursor"})
        chunk, cursor = page
        body = {"ok": True, key: chunk, "response_metadata": {"next_cursor": cursor or ""}}
        if key == "messages":
            body["has_more"] = cursor is not None
        return Response(200, body)

    def _auth_test(self, request: Request, _: re.Match[str]) -> Response:
        return Response(
            200,
            {
                "ok": True,
                "url": WORKSPACE_URL,
                "team": "Co Test",
                "user": "co",
                "team_id": "T0TEST001",
                "user_id": BOT_USER,
                "bot_id": "B0TEST001",
            },
        )

    def _conversations_list(self, request: Request, _: re.Match[str]) -> Response:
        channels = [
            {
                "id": c.id,
                "name": c.name,
                "is_channel": True,
                "is_private": c.is_private,
                "is_archived": False,
                "is_member": c.is_member,
                "num_members": 3,
                "topic": {"value": c.topic, "creator": "", "last_set": 0},
                "purpose": {"value": "", "creator": "", "last_set": 0},
            }
            for c in self.channels
        ]
        return self._paged(request, channels, "channels", "channels")

    def _history(self, request: Request, _: re.Match[str]) -> Response:
        channel = self._channel(request)
        if isinstance(channel, Response):
            return channel
        if not channel.is_member:
            return Response(200, {"ok": False, "error": "not_in_channel"})
        return self._paged(request, channel.messages, "messages", f"history:{channel.id}")

    def _replies(self, request: Request, _: re.Match[str]) -> Response:
        channel = self._channel(request)
        if isinstance(channel, Response):
            return channel
        thread = channel.threads.get(request.param("ts") or "")
        if thread is None:
            return Response(200, {"ok": False, "error": "thread_not_found"})
        return self._paged(request, thread, "messages", f"replies:{channel.id}")

    def _users_list(self, request: Request, _: re.Match[str]) -> Response:
        return self._paged(request, self.users, "members", "users")

    def _post(self, request: Request, _: re.Match[str]) -> Response:
        channel = self._channel(request)
        if isinstance(channel, Response):
            return channel
        if not channel.is_member:
            return Response(200, {"ok": False, "error": "not_in_channel"})
        text = request.param("text") or ""
        if not text:
            return Response(200, {"ok": False, "error": "no_text"})
        self._ts += 1
        ts = f"{self._ts}.000100"
        self.posted.append({"channel": channel.id, "text": text, "ts": ts})
        message = {"type": "message", "user": BOT_USER, "text": text, "ts": ts}
        channel.messages.insert(0, message)
        return Response(200, {"ok": True, "channel": channel.id, "ts": ts, "message": message})
