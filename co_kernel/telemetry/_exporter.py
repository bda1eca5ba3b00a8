"""Span exporters: SQLite (always, local) and a redacting wrapper for OTLP.

Both see spans only after the ``BatchSpanProcessor`` hands them over on its worker
thread, so the turn never waits for a write. Redaction happens here, before anything is
serialised, and long attribute values are cut after redaction (never before: a cut
secret would no longer match).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status, get_current_span

from ._redact import Redactor
from ._store import connect

__all__ = [
    "MAX_ATTRIBUTE_CHARS",
    "RedactingSpanExporter",
    "SQLiteSpanExporter",
    "SessionAttributesProcessor",
    "span_kind",
]

MAX_ATTRIBUTE_CHARS = 50_000
"""Longest attribute value stored; the run span's full message history can be large."""

# Attributes every span of a turn carries, copied from parent to child at start.
INHERITED = ("co.session_id", "co.turn")

_INPUT_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.aggregated_usage.input_tokens")
_OUTPUT_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.aggregated_usage.output_tokens")
_MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "co.model", "model_name")
_KINDS = {"chat": "model", "execute_tool": "tool", "invoke_agent": "agent"}


class SessionAttributesProcessor(SpanProcessor):
    """Gives every span the session and turn of its parent, so any span can be filtered."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        parent = get_current_span(parent_context)
        attributes = getattr(parent, "attributes", None)
        if not attributes:
            return
        for key in INHERITED:
            if key in attributes and key not in (span.attributes or {}):
                span.set_attribute(key, attributes[key])

    def on_end(self, span: ReadableSpan) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def span_kind(attributes: dict[str, Any]) -> str:
    """turn, agent, model, tool or other, from the GenAI operation name."""
    kind = attributes.get("co.kind")
    if isinstance(kind, str):
        return kind
    return _KINDS.get(str(attributes.get("gen_ai.operation.name")), "other")


def _first(attributes: dict[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if key in attributes:
            return attributes[key]
    return None


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_ATTRIBUTE_CHARS:
        cut = len(value) - MAX_ATTRIBUTE_CHARS
        return f"{value[:MAX_ATTRIBUTE_CHARS]}…[{cut} characters cut]"
    return value


def clean_attributes(attributes: Any, redactor: Redactor) -> dict[str, Any]:
    """Attributes as plain JSON values, redacted and clipped."""
    out: dict[str, Any] = {}
    for key, value in dict(attributes or {}).items():
        if isinstance(value, tuple | list):
            out[key] = [_clip(redactor.redact_value(v)) for v in value]
        else:
            out[key] = _clip(redactor.redact_value(value))
    return out


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="milliseconds")


class SQLiteSpanExporter(SpanExporter):
    """Writes each batch of spans in one transaction (WAL, so readers never block it)."""

    def __init__(self, path: Path, redactor: Redactor) -> None:
        self.path = path
        self.redactor = redactor
        self._lock = threading.Lock()
        self._db = connect(path)
        self._closed = False

    def _row(self, span: ReadableSpan) -> tuple[Any, ...]:
        redact = self.redactor.redact
        attributes = clean_attributes(span.attributes, self.redactor)
        events = [
            {
                "name": redact(event.name),
                "time_ns": event.timestamp,
                "attributes": clean_attributes(event.attributes, self.redactor),
            }
            for event in span.events
        ]
        context = span.get_span_context()
        parent = span.parent
        start = span.start_time or 0
        end = span.end_time or start
        status = span.status
        input_tokens = _first(attributes, _INPUT_KEYS)
        output_tokens = _first(attributes, _OUTPUT_KEYS)
        turn = attributes.get("co.turn")
        return (
            format(context.span_id, "016x") if context else "",
            format(context.trace_id, "032x") if context else "",
            format(parent.span_id, "016x") if parent else None,
            redact(span.name),
            span_kind(attributes),
            attributes.get("co.session_id"),
            turn if isinstance(turn, int) else None,
            _iso(start),
            _iso(end),
            start,
            end,
            (end - start) / 1e6,
            status.status_code.name,
            redact(status.description) if status.description else None,
            _first(attributes, _MODEL_KEYS),
            attributes.get("gen_ai.tool.name"),
            input_tokens if isinstance(input_tokens, int) else None,
            output_tokens if isinstance(output_tokens, int) else None,
            json.dumps(attributes, ensure_ascii=False, default=str),
            json.dumps(events, ensure_ascii=False, default=str),
        )

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._closed:
            return SpanExportResult.FAILURE
        rows = [self._row(span) for span in spans]
        with self._lock:
            try:
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT OR IGNORE INTO spans (span_id, trace_id, parent_id, name, kind, "
                    "session_id, turn, start_time, end_time, start_ns, end_ns, duration_ms, "
                    "status, status_message, model, tool, input_tokens, output_tokens, "
                    "attributes, events) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    "?, ?, ?, ?)",
                    rows,
                )
                self._db.execute("COMMIT")
            except Exception:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class RedactingSpanExporter(SpanExporter):
    """Hands redacted copies of the spans to another exporter (OTLP)."""

    def __init__(self, inner: SpanExporter, redactor: Redactor) -> None:
        self.inner = inner
        self.redactor = redactor

    def _copy(self, span: ReadableSpan) -> ReadableSpan:
        redact = self.redactor.redact
        status = span.status
        return ReadableSpan(
            name=redact(span.name),
            context=span.get_span_context(),
            parent=span.parent,
            resource=span.resource,
            attributes=clean_attributes(span.attributes, self.redactor),
            events=[
                Event(
                    redact(e.name),
                    clean_attributes(e.attributes, self.redactor),
                    e.timestamp,
                )
                for e in span.events
            ],
            links=span.links,
            kind=span.kind,
            status=Status(status.status_code, redact(status.description))
            if status.description
            else Status(status.status_code),
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([self._copy(s) for s in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
