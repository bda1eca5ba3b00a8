"""A real HTTP server speaking the OpenAI Chat Completions API, answering from a script.

Standard library only (`http.server`, one thread per connection), so it starts in
milliseconds and can run on a thread inside an asyncio program such as the kernel.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast

from ._script import (
    DropFault,
    MalformedFault,
    ResetFault,
    Script,
    ScriptSource,
    StallFault,
    StatusFault,
    Step,
    UnfinishedFault,
    check_expect,
    split_tokens,
)

__all__ = ("ScriptedModelServer",)

# Sent with the server's own errors (script mismatch, exhaustion) so the openai SDK fails at once
# instead of retrying a 409 or 500 into the next steps of the script.
_NO_RETRY = {"x-should-retry": "false"}
_MID_STREAM_FAULTS = (DropFault, MalformedFault, StallFault)


@dataclass(frozen=True)
class _Turn:
    """One chat completion request and the step that answers it."""

    number: int
    """1-based count of chat completion requests since the server started (never reset)."""
    step: Step


@dataclass(frozen=True)
class _Refusal:
    """Why a request gets no step: the script doesn't match it, or has run out."""

    status: HTTPStatus
    error_type: str
    message: str


class _ScriptState:
    """The script's cursor and the server's records, shared by the connection threads."""

    def __init__(
        self, steps: Sequence[Step], tokens_per_second: float | None, *, keep_unmatched: bool
    ) -> None:
        self.tokens_per_second = tokens_per_second
        self.keep_unmatched = keep_unmatched
        """Record-missing replays: a mismatch skips ahead to a later matching step, or is
        refused without using the step up, so the recorder can put a new step in its place."""
        self.revision = 0
        """Counts changes to the steps (skipped ones dropped, new ones inserted)."""
        self._superseded: set[int] = set()
        """Ids of steps a request did not match and that no request used since."""
        self.stopping = threading.Event()
        """Set when the server stops, to cut short stalls and paced streams."""
        self._lock = threading.Lock()
        self._steps = list(steps)
        self._position = 0
        self._uses = 0
        self._answered = 0
        self._served = 0
        self._requests: list[dict[str, Any]] = []
        self._errors: list[str] = []
        self._connections: set[socket.socket] = set()

    def take(self, body: dict[str, Any]) -> _Turn | _Refusal:
        """Record a request and consume the step that answers it."""
        with self._lock:
            self._requests.append(body)
            self._served += 1
            if self._position >= len(self._steps):
                message = f"script exhausted after {self._answered} requests"
                self._errors.append(message)
                return _Refusal(HTTPStatus.INTERNAL_SERVER_ERROR, "script_exhausted", message)
            if self.keep_unmatched and (refusal := self._skip_to_match(body)) is not None:
                return refusal
            step_number = self._position + 1
            step = self._steps[self._position]
            self._superseded.discard(id(step))
            self._answered += 1
            self._uses += 1
            if self._uses >= step.repeat:
                self._position += 1
                self._uses = 0
            # A mismatched step is still used up: every request consumes exactly one step,
            # so one mistake doesn't shift the rest of the script onto the wrong requests.
            if step.expect is not None and (problem := check_expect(step.expect, body)):
                message = f"step {step_number}: {problem}"
                self._errors.append(message)
                return _Refusal(HTTPStatus.CONFLICT, "script_mismatch", message)
            return _Turn(self._served, step)

    def _skip_to_match(self, body: dict[str, Any]) -> _Refusal | None:
        """Move to the first step from the cursor on whose checks pass, dropping the ones
        before it; a refusal (nothing used up) when none does. Caller holds the lock."""
        first = self._steps[self._position]
        if first.expect is None or (problem := check_expect(first.expect, body)) is None:
            return None
        for later in range(self._position + 1, len(self._steps)):
            expect = self._steps[later].expect
            if expect is not None and check_expect(expect, body) is None:
                for skipped in self._steps[self._position : later]:
                    self._superseded.discard(id(skipped))
                del self._steps[self._position : later]
                self._uses = 0
                self.revision += 1
                return None
        self._superseded.add(id(first))
        message = f"step {self._position + 1}: {problem}"
        self._errors.append(message)
        return _Refusal(HTTPStatus.CONFLICT, "script_mismatch", message)

    def drop_superseded(self) -> None:
        """Drop the steps a request did not match and none used afterwards: the answer an
        edited last prompt got before its edit. Steps no request reached stay (a run of part
        of a notebook)."""
        with self._lock:
            kept = [s for s in self._steps if id(s) not in self._superseded]
            if len(kept) != len(self._steps):
                self._steps = kept
                self._position = min(self._position, len(kept))
                self.revision += 1
            self._superseded.clear()

    def insert(self, step: Step) -> None:
        """Put a step in at the cursor, as used: the answer to a request the script missed."""
        with self._lock:
            self._steps.insert(self._position, step)
            self._position += 1
            self._uses = 0
            self.revision += 1

    def steps(self) -> list[Step]:
        with self._lock:
            return list(self._steps)

    def extend(self, steps: Sequence[Step]) -> None:
        with self._lock:
            self._steps.extend(steps)

    def reset(self, steps: Sequence[Step]) -> None:
        with self._lock:
            self._steps = list(steps)
            self._position = self._uses = self._answered = 0
            self._requests.clear()
            self._errors.clear()
            self._superseded.clear()

    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._requests)

    def errors(self) -> list[str]:
        with self._lock:
            return list(self._errors)

    def record_error(self, message: str) -> None:
        with self._lock:
            self._errors.append(message)

    def model_ids(self) -> list[str]:
        with self._lock:
            return Script(tuple(self._steps)).model_ids() or ["scripted"]

    def track(self, connection: socket.socket, *, active: bool) -> None:
        with self._lock:
            if active:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def open_connections(self) -> list[socket.socket]:
        with self._lock:
            return list(self._connections)

    def wait(self, seconds: float) -> bool:
        """Sleep unless the server stops first; False if it did."""
        if seconds <= 0:
            return not self.stopping.is_set()
        return not self.stopping.wait(seconds)


class ScriptedModelServer:
    """An OpenAI-compatible model on 127.0.0.1 that answers each request with the next step of a script.

    Use it as a context manager, or call `start()` and `stop()`. Point an OpenAI client at
    `base_url`; `requests` and `errors` tell a test what the model received and what didn't match.
    With `keep_unmatched` (a record-missing replay), a request that doesn't match the next step
    is answered by the first later step it matches, the ones between dropped; when none does, it
    is refused without using a step up, and `insert` puts the step recorded for it in place.
    """

    def __init__(
        self,
        script: ScriptSource = (),
        host: str = "127.0.0.1",
        port: int = 0,
        tokens_per_second: float | None = None,
        *,
        keep_unmatched: bool = False,
    ) -> None:
        if tokens_per_second is not None and tokens_per_second <= 0:
            raise ValueError(f"tokens_per_second must be positive, got {tokens_per_second}")
        self.host = host
        self._requested_port = port
        self._state = _ScriptState(
            Script.coerce(script).steps, tokens_per_second, keep_unmatched=keep_unmatched
        )
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind and serve on a daemon thread; port 0 picks a free port."""
        if self._httpd is not None:
            raise RuntimeError("ScriptedModelServer is already started")
        server_class = _HTTPServer6 if ":" in self.host else _HTTPServer
        httpd = server_class((self.host, self._requested_port), _Handler)
        httpd.state = self._state
        self._state.stopping.clear()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"ScriptedModelServer:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop open connections; safe to call twice."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._state.stopping.set()
        httpd.shutdown()
        for connection in self._state.open_connections():
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("ScriptedModelServer is not started; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, e.g. `http://127.0.0.1:PORT/v1`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def tokens_per_second(self) -> float | None:
        """Default pace of streamed answers; `None` streams as fast as possible."""
        return self._state.tokens_per_second

    # -- script and records ----------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every JSON body received on `/v1/chat/completions`, in order (a copy)."""
        return self._state.requests()

    @property
    def errors(self) -> list[str]:
        """Script mismatches, exhaustion and server faults, in order (a copy)."""
        return self._state.errors()

    @property
    def steps(self) -> list[Step]:
        """The script as it stands (a record-missing replay changes it)."""
        return self._state.steps()

    @property
    def revision(self) -> int:
        """How many times the steps changed since the server started."""
        return self._state.revision

    def drop_superseded(self) -> None:
        """End of a record-missing replay: drop the steps that requests stopped matching
        (the old answer to an edited prompt) and none used afterwards."""
        self._state.drop_superseded()

    def insert(self, step: Step) -> None:
        """Answer-in-place for a request the script missed (only with `keep_unmatched`):
        the step goes in at the cursor, counted as used."""
        self._state.insert(step)

    def extend(self, steps: Sequence[Mapping[str, Any] | Step]) -> None:
        """Append steps to the script, also after it ran out."""
        self._state.extend(Script.from_steps(steps, source="<extend>").steps)

    def reset(self, script: ScriptSource) -> None:
        """Replace the script and forget the requests and errors recorded so far."""
        self._state.reset(Script.coerce(script).steps)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Keep-alive connections park their threads in a read; stop() shuts those sockets instead
    # of joining threads that may never return.
    block_on_close = False
    state: _ScriptState

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name with getfqdn, which can take seconds.
        super(ThreadingHTTPServer, self).server_bind()
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The default prints a traceback; a client hanging up is normal, anything else is a bug
        # a test should see in `errors`.
        error = sys.exc_info()[1]
        if error is not None and not isinstance(error, OSError):
            self.state.record_error(f"server error: {error!r}")


class _HTTPServer6(_HTTPServer):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "co-kernel-scripted-model"
    # Small SSE chunks must leave at once, not wait for Nagle's algorithm.
    disable_nagle_algorithm = True
    server: _HTTPServer

    @property
    def state(self) -> _ScriptState:
        return self.server.state

    def setup(self) -> None:
        super().setup()
        self.state.track(self.connection, active=True)

    def finish(self) -> None:
        self.state.track(self.connection, active=False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- routing ---------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._guarded(self._route_get)

    def do_POST(self) -> None:
        self._guarded(self._route_post)

    def _guarded(self, route: Callable[[], None]) -> None:
        try:
            route()
        except OSError:
            # The client went away (or a fault closed the socket): nothing more to say to it.
            self.close_connection = True
        except Exception as e:
            self.state.record_error(f"server error: {e!r}")
            self.close_connection = True

    def _route_get(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models":
            models = [
                {"id": model_id, "object": "model", "created": 0, "owned_by": "co-kernel"}
                for model_id in self.state.model_ids()
            ]
            self._send_json(HTTPStatus.OK, {"object": "list", "data": models})
        elif path == "/_co/requests":
            self._send_json(HTTPStatus.OK, self.state.requests())
        elif path == "/_co/errors":
            self._send_json(HTTPStatus.OK, self.state.errors())
        else:
            self._send_error_body(
                HTTPStatus.NOT_FOUND, f"no route for GET {self.path}", "not_found"
            )

    def _route_post(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self._read_body()
        if path not in ("/v1/chat/completions", "/_co/script"):
            self._send_error_body(
                HTTPStatus.NOT_FOUND, f"no route for POST {self.path}", "not_found"
            )
            return
        try:
            body: object = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            if path == "/v1/chat/completions":
                self.state.record_error(f"request body is not JSON: {e}")
            self._send_error_body(
                HTTPStatus.BAD_REQUEST, f"request body is not JSON: {e}", "invalid_request_error"
            )
            return
        if path == "/_co/script":
            self._replace_script(body)
        elif not isinstance(body, dict):
            self.state.record_error("request body is not a JSON object")
            self._send_error_body(
                HTTPStatus.BAD_REQUEST, "request body is not a JSON object", "invalid_request_error"
            )
        else:
            self._chat_completion(cast(dict[str, Any], body))

    def _replace_script(self, body: object) -> None:
        steps: list[Any] = body if isinstance(body, list) else []
        if not isinstance(body, list):
            self._send_error_body(
                HTTPStatus.BAD_REQUEST, "the script is a JSON list of steps", "invalid_script"
            )
            return
        try:
            self.state.reset(Script.from_steps(steps, source="POST /_co/script").steps)
        except ValueError as e:
            self._send_error_body(HTTPStatus.BAD_REQUEST, str(e), "invalid_script")
            return
        self._send_json(HTTPStatus.OK, {"steps": len(steps)})

    # -- chat completions ------------------------------------------------------------------

    def _chat_completion(self, body: dict[str, Any]) -> None:
        turn = self.state.take(body)
        if isinstance(turn, _Refusal):
            self._send_error_body(turn.status, turn.message, turn.error_type, headers=_NO_RETRY)
            return
        step = turn.step
        fault = step.fault
        if isinstance(fault, StatusFault):
            self._send_status_fault(fault)
            return
        if isinstance(fault, ResetFault):
            self._reset_connection()
            return
        answer = _Answer(turn, body)
        if body.get("stream"):
            self._stream(answer)
        else:
            self._complete(answer)

    def _complete(self, answer: _Answer) -> None:
        fault = answer.step.fault
        if isinstance(fault, StallFault) and not self.state.wait(fault.seconds):
            self.close_connection = True
            return
        payload = json.dumps(answer.completion()).encode()
        if isinstance(fault, MalformedFault):
            payload = b"{not json"
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("x-request-id", answer.request_id)
        self.end_headers()
        if isinstance(fault, DropFault):
            # Promise the whole body, deliver half of it, hang up.
            self.wfile.write(payload[: len(payload) // 2])
            self.close_connection = True
            return
        self.wfile.write(payload)

    def _stream(self, answer: _Answer) -> None:
        fault = answer.step.fault
        rate = answer.step.tokens_per_second or self.state.tokens_per_second
        include_usage = bool((answer.body.get("stream_options") or {}).get("include_usage"))
        chunks = list(answer.chunks(include_usage=include_usage))
        # A fault waiting for more chunks than the answer has strikes just before `[DONE]`.
        cut = min(fault.after_chunks, len(chunks)) if isinstance(fault, _MID_STREAM_FAULTS) else -1
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", answer.request_id)
        self.end_headers()
        start = time.monotonic()
        tokens = 0
        for sent, (chunk, is_token) in enumerate([*chunks, (None, False)]):
            if sent == cut:
                if isinstance(fault, DropFault):
                    self.close_connection = True
                    return
                if isinstance(fault, MalformedFault):
                    self._write_chunk(b"data: {not json\n\n")
                    self._write_chunk(b"")
                    self.close_connection = True
                    return
                assert isinstance(fault, StallFault)
                if not self.state.wait(fault.seconds):
                    self.close_connection = True
                    return
                start += fault.seconds
            if chunk is None:
                break
            if is_token and rate:
                tokens += 1
                # Due times count from the start, so sleeping's overshoot doesn't add up.
                if not self.state.wait(start + tokens / rate - time.monotonic()):
                    self.close_connection = True
                    return
            self._write_chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    # -- faults and plumbing ---------------------------------------------------------------

    def _send_status_fault(self, fault: StatusFault) -> None:
        body: object = fault.body
        if body is None:
            body = {
                "error": {
                    "message": f"scripted fault: HTTP {fault.status}",
                    "type": "scripted_fault",
                    "param": None,
                    "code": None,
                }
            }
        if isinstance(body, str):
            payload, content_type = body.encode(), "text/plain; charset=utf-8"
        else:
            payload, content_type = json.dumps(body).encode(), "application/json"
        headers = dict(fault.headers)
        if not any(name.lower() == "content-type" for name in headers):
            headers["Content-Type"] = content_type
        self._send_bytes(fault.status, payload, headers)

    def _reset_connection(self) -> None:
        # Linger 0 turns close() into a TCP RST; closing here, before the server's own
        # shutdown(SHUT_WR), keeps a FIN from reaching the client first.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    # Trailers, if any, end with an empty line.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _send_json(
        self, status: int, obj: object, headers: Mapping[str, str] | None = None
    ) -> None:
        self._send_bytes(
            status,
            json.dumps(obj).encode(),
            {"Content-Type": "application/json", **(headers or {})},
        )

    def _send_error_body(
        self, status: int, message: str, error_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        error = {"error": {"message": message, "type": error_type, "param": None, "code": None}}
        self._send_json(status, error, headers)

    def _send_bytes(self, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Answer:
    """The chat completion a step makes, as one body or as stream chunks."""

    def __init__(self, turn: _Turn, body: dict[str, Any]) -> None:
        self.step = turn.step
        self.body = body
        self.request_id = f"req_scripted_{turn.number}"
        self.id = f"chatcmpl-scripted-{turn.number}"
        self.created = int(time.time())
        requested = body.get("model")
        self.model = self.step.model or (
            requested if isinstance(requested, str) and requested else "scripted"
        )
        self.tool_calls = [
            (call.id or f"call_{turn.number}_{index}", call.name, call.arguments_json())
            for index, call in enumerate(self.step.tool_calls)
        ]
        self.finish_reason: str | None = self.step.finish_reason or (
            "tool_calls" if self.tool_calls else "stop"
        )
        if isinstance(self.step.fault, UnfinishedFault):
            self.finish_reason = None

    def usage(self) -> dict[str, int]:
        scripted = self.step.usage
        prompt = scripted.prompt_tokens if scripted else None
        completion = scripted.completion_tokens if scripted else None
        if prompt is None:
            request_text = json.dumps(self.body.get("messages", [])) + json.dumps(
                self.body.get("tools", [])
            )
            prompt = math.ceil(len(request_text) / 4)
        if completion is None:
            answer_chars = len(self.step.text) + len(self.step.reasoning or "")
            answer_chars += sum(
                len(name) + len(arguments) for _, name, arguments in self.tool_calls
            )
            completion = math.ceil(answer_chars / 4)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.step.text or None,
            "refusal": None,
        }
        if self.step.reasoning:
            message["reasoning_content"] = self.step.reasoning
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
                for call_id, name, arguments in self.tool_calls
            ]
        elif message["content"] is None:
            message["content"] = ""
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": self.usage(),
        }

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }

    def chunks(self, *, include_usage: bool) -> Iterator[tuple[dict[str, Any], bool]]:
        """The stream's chunks, each with whether it carries a token (and so is paced)."""
        yield self._chunk({"role": "assistant", "content": ""}), False
        for token in split_tokens(self.step.reasoning or ""):
            yield self._chunk({"reasoning_content": token}), True
        for token in split_tokens(self.step.text):
            yield self._chunk({"content": token}), True
        for index, (call_id, name, arguments) in enumerate(self.tool_calls):
            opening = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            yield self._chunk({"tool_calls": [opening]}), True
            for fragment in split_tokens(arguments):
                yield (
                    self._chunk(
                        {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
                    ),
                    True,
                )
        yield self._chunk({}, self.finish_reason), False
        if include_usage:
            yield (
                {
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": self.usage(),
                },
                False,
            )
