"""Spans of real turns in a real kernel: tree, usage, model, status, content switch, OTLP."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .span_reader import telemetry_db, turns_done, wait_for_spans


def _children(spans, parent):
    return [s for s in spans if s.parent_id == parent.span_id]


def test_a_turn_is_a_tree_of_spans_with_usage_and_model(start_kernel, model_server, co_home):
    kernel = start_kernel()
    model_server.extend(
        [
            {"text": "Paris.", "usage": {"prompt_tokens": 120, "completion_tokens": 4}},
            # Second turn: a call of a tool that does not exist, then the answer: two requests.
            {
                "tool_calls": [{"name": "no_such_tool", "arguments": {"path": "a.txt"}}],
                "usage": {"prompt_tokens": 200, "completion_tokens": 10},
            },
            {"text": "Done.", "usage": {"prompt_tokens": 260, "completion_tokens": 2}},
        ]
    )
    assert kernel.execute("Capital of France?").status == "ok"
    assert kernel.execute("Now use a tool").status == "ok"
    db = telemetry_db(co_home)
    spans = wait_for_spans(db, turns_done(2))

    turns = sorted((s for s in spans if s.kind == "turn"), key=lambda s: s.turn or 0)
    assert [t.turn for t in turns] == [1, 2]
    first, second = turns
    assert first.parent_id is None and first.status == "OK"
    assert first.model == "compat:scripted"
    assert (first.input_tokens, first.output_tokens) == (120, 4)
    assert first.attributes["co.usage.requests"] == 1
    assert first.attributes["co.prompt"] == "Capital of France?"

    # turn -> agent run -> model request, all in the turn's trace and session.
    (agent,) = _children(spans, first)
    assert agent.kind == "agent" and agent.name == "invoke_agent co"
    (request,) = _children(spans, agent)
    assert request.kind == "model"
    assert (request.input_tokens, request.output_tokens) == (120, 4)
    assert request.attributes["gen_ai.request.model"] == "scripted"
    assert "Capital of France?" in request.attributes["gen_ai.input.messages"]
    assert {s.trace_id for s in (first, agent, request)} == {first.trace_id}
    assert {s.session_id for s in spans} == {first.session_id}
    assert first.start_ns <= agent.start_ns <= request.start_ns
    assert request.end_ns <= agent.end_ns <= first.end_ns

    # The second turn made two requests; their tokens add up on the turn.
    requests = [s for s in spans if s.kind == "model" and s.trace_id == second.trace_id]
    assert len(requests) == 2 and all(s.turn == 2 for s in requests)
    assert (second.input_tokens, second.output_tokens) == (460, 12)
    assert second.trace_id != first.trace_id
    # The tool call's decision is an event on the turn, as in the audit log.
    audits = [e for e in second.events if e["name"] == "co.audit"]
    assert [a["attributes"]["co.tool"] for a in audits] == ["no_such_tool"]
    assert audits[0]["attributes"]["co.target"] == "a.txt"


def test_a_failed_request_makes_an_error_turn_span(start_kernel, model_server, co_home):
    kernel = start_kernel()
    model_server.extend([{"fault": {"status": 404, "body": {"error": {"message": "no model"}}}}])
    result = kernel.execute("Hello?")
    assert result.status == "error"
    spans = wait_for_spans(telemetry_db(co_home), turns_done(1))
    (turn,) = [s for s in spans if s.kind == "turn"]
    assert turn.status == "ERROR"
    assert "404" in (turn.status_message or "")
    # pydantic-ai records the provider's exception on the agent run it ended.
    (agent,) = [s for s in spans if s.kind == "agent"]
    assert agent.status == "ERROR"
    (exception,) = [e for e in agent.events if e["name"] == "exception"]
    assert "ModelNotFoundError" in exception["attributes"]["exception.type"]
    model_server.extend([{"text": "Yes."}])
    assert kernel.execute("Still alive?").status == "ok"


def test_trace_content_off_keeps_prompts_and_answers_out(start_kernel, model_server, co_home):
    kernel = start_kernel({"CO_TRACE_CONTENT": "false"})
    model_server.extend([{"text": "The secret recipe is mostly butter."}])
    kernel.execute("Tell me the family recipe for shortbread")
    spans = wait_for_spans(telemetry_db(co_home), turns_done(1))
    assert {s.kind for s in spans} >= {"turn", "agent", "model"}
    raw = json.dumps([[s.name, s.attributes, s.events] for s in spans])
    assert "family recipe" not in raw
    assert "mostly butter" not in raw
    (request,) = [s for s in spans if s.kind == "model"]
    assert request.input_tokens and request.output_tokens, "usage is still recorded"


def test_tracing_off_writes_no_spans(start_kernel, model_server, co_home):
    kernel = start_kernel({"CO_TRACING": "false"})
    model_server.extend([{"text": "Hi."}])
    assert kernel.execute("Hello").status == "ok"
    kernel.shutdown()
    db = telemetry_db(co_home)
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        count = conn.execute("SELECT count(*) FROM spans").fetchone()[0] if "spans" in tables else 0
    assert count == 0


class _Collector(BaseHTTPRequestHandler):
    bodies: list[tuple[str, bytes]]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.server.bodies.append((self.path, self.rfile.read(length)))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def otlp_collector() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    server.bodies = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_spans_also_go_to_an_otlp_endpoint_redacted(
    start_kernel, model_server, co_home, otlp_collector
):
    port = otlp_collector.server_address[1]
    secret = "sk-otlp-test-0123456789abcdefghij"
    kernel = start_kernel({"CO_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "CO_API_KEY": secret})
    model_server.extend([{"text": f"Your key is {secret}, keep it safe."}])
    assert kernel.execute(f"Is {secret} my key?").status == "ok"
    wait_for_spans(telemetry_db(co_home), turns_done(1))
    kernel.shutdown()  # flushes the OTLP batch too
    bodies = otlp_collector.bodies  # type: ignore[attr-defined]
    assert bodies, "the OTLP endpoint received nothing"
    # Spans, and the spend counters (tests/telemetry/test_budget.py reads those).
    assert {path for path, _ in bodies} == {"/v1/traces", "/v1/metrics"}
    payload = b"".join(body for path, body in bodies if path == "/v1/traces")
    assert b"turn 1" in payload and b"invoke_agent co" in payload
    assert secret.encode() not in payload
    assert b"[REDACTED]" in payload


def test_no_spans_before_the_first_turn(start_kernel, co_home: Path):
    """Magics write no spans. The database itself may exist: the session (tracing included)
    is built in the background before the first cell, so the first answer waits for none
    of it."""
    import sqlite3

    kernel = start_kernel()
    assert kernel.execute("%help").status == "ok"
    db = telemetry_db(co_home)
    if db.exists():
        with sqlite3.connect(db) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            assert "spans" not in tables or conn.execute(
                "SELECT COUNT(*) FROM spans"
            ).fetchone() == (0,)


def test_the_kernel_start_path_does_not_import_the_tracing_stack():
    import subprocess
    import sys

    code = (
        "import sys, co_kernel.kernel, co_kernel.kernel._dispatch, co_kernel.telemetry\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'rich')))\n"
        "print(loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_unwritable_data_directory_turns_telemetry_off_not_the_turn(
    start_kernel, model_server, co_home: Path
):
    (co_home / "data").write_text("not a directory")
    kernel = start_kernel()
    model_server.extend([{"text": "Answer one."}, {"text": "Answer two."}])
    first = kernel.execute("hello")
    assert first.status == "ok"
    assert "Answer one." in first.markdown()
    assert "Telemetry is off for this session" in first.text()
    assert "telemetry.db" in first.text()
    second = kernel.execute("again")
    assert second.status == "ok" and "Telemetry is off" not in second.text(), "said once"
