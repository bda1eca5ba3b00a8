"""Plumbing of the local fake API servers: routing, request records, injected faults.

A `FakeApiServer` serves on 127.0.0.1 from a thread. Subclasses register routes (method and
path regex -> handler) that answer as the documented API does; tests read `requests` to see
what the real client library sent, and `fail_next` makes the next matching requests answer
with an error instead.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    """One request as the server received it."""

    method: str
    """HTTP method."""
    path: str
    """Path without the query string."""
    query: dict[str, list[str]]
    """Query parameters."""
    headers: dict[str, str]
    """Headers, names lower-cased."""
    body: bytes
    """The raw body."""

    @property
    def form(self) -> dict[str, list[str]]:
        """The body as form fields, when it is form-encoded."""
        if "application/x-www-form-urlencoded" in self.headers.get("content-type", ""):
            return parse_qs(self.body.decode("utf-8"), keep_blank_values=True)
        return {}

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None

    def param(self, name: str, default: str | None = None) -> str | None:
        """A parameter from the query, the form body or a JSON body, in that order."""
        for source in (self.query, self.form):
            if name in source:
                return source[name][0]
        if "application/json" in self.headers.get("content-type", ""):
            data = self.json()
            if isinstance(data, dict) and name in data:
                return str(data[name])
        return default

    def params(self, name: str) -> list[str]:
        """Every value of a repeated query parameter."""
        return self.query.get(name, [])

    @property
    def bearer(self) -> str | None:
        auth = self.headers.get("authorization", "")
        return auth[7:] if auth.startswith("Bearer ") else None


@dataclass
class Response:
    """What a route or an injected fault answers."""

    status: int = 200
    """HTTP status."""
    body: Any = b""
    """bytes or str as they are; anything else is sent as JSON."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra headers (a Content-Type here wins)."""
    content_type: str = "application/json; charset=UTF-8"
    """Content-Type when `headers` does not set one."""

    def encoded(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return json.dumps(self.body).encode("utf-8")


Route = Callable[[Request, re.Match[str]], Response]


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    response: Response
    remaining: int


class Paginator:
    """Opaque page tokens the way real APIs hand them out: a token is only good if issued."""

    def __init__(self) -> None:
        self._issued: dict[str, tuple[str, int]] = {}

    def page(
        self, items: list[Any], *, size: int, token: str | None, listing: str
    ) -> tuple[list[Any], str | None] | None:
        """(items of the page, next token) or None when ``token`` was never issued."""
        offset = 0
        if token:
            found = self._issued.get(token)
            if found is None or found[0] != listing:
                return None
            offset = found[1]
        chunk = items[offset : offset + size]
        next_token = None
        if offset + size < len(items):
            next_token = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            self._issued[next_token] = (listing, offset + size)
        return chunk, next_token


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host name up with getfqdn, which can take seconds.
        super(ThreadingHTTPServer, self).server_bind()
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class FakeApiServer:
    """A threaded HTTP server on 127.0.0.1 answering from registered routes."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._routes: list[tuple[str, re.Pattern[str], Route]] = []
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- configuration ------------------------------------------------------------------

    def route(self, method: str, pattern: str, handler: Route) -> None:
        self._routes.append((method, re.compile(pattern), handler))

    def fail_next(
        self,
        method: str,
        pattern: str,
        status: int,
        body: Any = b"",
        *,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` matching requests with this error instead of the route."""
        with self._lock:
            self._faults.append(
                _Fault(method, re.compile(pattern), Response(status, body, headers or {}), times)
            )

    def not_found(self, request: Request) -> Response:
        return Response(404, {"error": f"no route for {request.method} {request.path}"})

    # -- records ------------------------------------------------------------------------

    def requests_to(self, method: str, pattern: str) -> list[Request]:
        """The recorded requests whose method and path match."""
        regex = re.compile(pattern)
        with self._lock:
            return [r for r in self.requests if r.method == method and regex.fullmatch(r.path)]

    # -- serving ------------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        with self._lock:
            self.requests.append(request)
            for fault in self._faults:
                if fault.method == request.method and fault.pattern.fullmatch(request.path):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                    return fault.response
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(request.path)
            if method == request.method and match:
                return handler(request, match)
        return self.not_found(request)

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> Self:
        api = self

        class Handler(BaseHTTPRequestHandler):
            # One request per connection: nothing to drain when the server stops.
            protocol_version = "HTTP/1.0"

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query, keep_blank_values=True),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                response = api.handle(request)
                payload = response.encoded()
                self.send_response(response.status)
                headers = {"Content-Type": response.content_type, **response.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the test reads `requests`, not a log

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def serving(server: FakeApiServer) -> Iterator[FakeApiServer]:
    """A fixture body: start, hand over, stop."""
    with server:
        yield server
