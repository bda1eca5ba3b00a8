"""A real HTTP server on 127.0.0.1 that answers as Anthropic's Messages API does.

``POST /v1/messages`` streams Server-Sent Events when the body says ``"stream": true``
(``message_start``, ``content_block_start``, ``content_block_delta`` with ``text_delta``,
``content_block_stop``, ``message_delta`` with the stop reason and usage, ``message_stop``)
and answers one JSON message otherwise. Usage reports prompt caching as Anthropic does:
the first request writes the cache, later ones read it. Every request's body and headers
are recorded. Point the anthropic SDK at it with ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ..tools._http import JSONHandler

__all__ = ("AnthropicRequest", "FakeAnthropic")


@dataclass(frozen=True)
class AnthropicRequest:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    """Names in lower case."""
    body: dict[str, Any]


class FakeAnthropic(ThreadingHTTPServer):
    """Answers every message request with the next of ``answers`` (the last one repeats)."""

    daemon_threads = True

    def __init__(self, answers: list[str]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers = answers
        self.requests: list[AnthropicRequest] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The bodies of the message requests, in order."""
        return [r.body for r in self.requests if r.path == "/v1/messages"]

    def record(self, request: AnthropicRequest) -> int:
        """Record a request; return how many message requests there have been."""
        with self._lock:
            self.requests.append(request)
            return len(self.messages)

    def answer(self, number: int) -> str:
        return self.answers[min(number, len(self.answers)) - 1]

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(5)


def _usage(body: dict[str, Any], first: bool, output_tokens: int) -> dict[str, int]:
    # A rough count is enough: what matters is the split between cache writes and reads.
    size = len(json.dumps(body)) // 4
    cached = size * 3 // 4
    return {
        "input_tokens": size - cached,
        "cache_creation_input_tokens": cached if first else 0,
        "cache_read_input_tokens": 0 if first else cached,
        "output_tokens": output_tokens,
    }


def _events(message: dict[str, Any], text: str) -> Iterator[dict[str, Any]]:
    """The stream's events; each one's ``type`` is also its SSE event name."""
    usage = message["usage"]
    opening = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**usage, "output_tokens": 1},
    }
    yield {"type": "message_start", "message": opening}
    block = {"type": "text", "text": ""}
    yield {"type": "content_block_start", "index": 0, "content_block": block}
    for word in text.split(" "):
        delta = {"type": "text_delta", "text": word + " "}
        yield {"type": "content_block_delta", "index": 0, "delta": delta}
    yield {"type": "content_block_stop", "index": 0}
    stop = {"stop_reason": "end_turn", "stop_sequence": None}
    yield {"type": "message_delta", "delta": stop, "usage": usage}
    yield {"type": "message_stop"}


class _Handler(JSONHandler):
    server: FakeAnthropic
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        path = urlsplit(self.path).path  # the SDK's beta client adds ?beta=true
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = AnthropicRequest(path, headers, body)
        number = self.server.record(request)
        if path == "/v1/messages/count_tokens":
            self._json({"input_tokens": len(json.dumps(body)) // 4})
            return
        if path != "/v1/messages":
            error = {"type": "not_found_error", "message": f"no route {path}"}
            self._json({"type": "error", "error": error}, 404)
            return
        text = self.server.answer(number)
        message = {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude"),
            "stop_sequence": None,
            "usage": _usage(body, number == 1, len(text.split())),
        }
        if not body.get("stream"):
            content = [{"type": "text", "text": text}]
            self._json({**message, "content": content, "stop_reason": "end_turn"})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for event in _events(message, text):
                sse = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                self.wfile.write(sse.encode())
                self.wfile.flush()
        self.close_connection = True
