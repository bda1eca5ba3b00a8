"""A real HTTP server on 127.0.0.1 for the web tools' tests, recording every request, and a
request handler that answers JSON for the fake provider servers."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    """One request the server received."""

    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]


Reply = tuple[int, dict[str, str], bytes]
Handler = Callable[[Seen], Reply]


@dataclass
class LocalServer:
    """Routes by path; unknown paths answer 404."""

    routes: dict[str, Handler]
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                seen = Seen(parts.path, parse_qs(parts.query), dict(self.headers.items()))
                server.seen.append(seen)
                handler = server.routes.get(parts.path)
                status, headers, body = handler(seen) if handler else (404, {}, b"not found")
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                # The client may stop reading (size cap, timeout): expected.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


class JSONHandler(BaseHTTPRequestHandler):
    """A quiet request handler with a JSON reply."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, body: Any, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
