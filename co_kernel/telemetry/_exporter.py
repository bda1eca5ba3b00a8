"""Span exporters: SQLite (always, local) and a redacting wrapper for OTLP.

Both see spans only after the ``TurnSpanProcessor`` hands them over on its worker
thread, so the turn never waits for a write. Redaction happens here, before anything is
serialised, and long attribute values are cut after redaction (never before: a cut
secret would not match its pattern). A batch whose text holds no secret and no secret's shape
(nearly every batch) is cleared by one test over all of it, not value by value.

The SQLite exporter also keeps the database to the retention period
(``trace_retention_days``): after its first batch, then once a day, it deletes the spans
that started before it, a few thousand rows per transaction so that the audit log's
writes (on the turn's thread) never wait long. SQLite reuses the freed pages, so the file
stops growing at about a retention period's worth of spans.

Every span is stored with its turn's session and turn number (``co.session_id``,
``co.turn``) so any span can be filtered. They are looked up here by trace id (a trace
is one turn) in ``TurnRegistry``, rather than copied onto each span as it starts: that
would cost the turn itself a processor call and an attribute write per span.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

from ._database import connect
from ._redact import Redactor
from ._spans import SPAN_KINDS

__all__ = [
    "MAX_ATTRIBUTE_CHARS",
    "BatchCheck",
    "RedactingSpanExporter",
    "SQLiteSpanExporter",
    "TurnRegistry",
    "span_kind",
]

log = logging.getLogger(__name__)

PRUNE_EVERY = 24 * 3600.0
"""Seconds between two deletions of spans past the retention period."""

PRUNE_ROWS = 2000
"""Spans deleted per transaction."""

MAX_ATTRIBUTE_CHARS = 50_000
"""Longest attribute value stored; the run span's full message history can be large."""

_INPUT_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.aggregated_usage.input_tokens")
_OUTPUT_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.aggregated_usage.output_tokens")
_MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "co.model", "model_name")
_KINDS = {"chat": "model", "execute_tool": "tool", "invoke_agent": "agent"}


class TurnRegistry:
    """The session and turn of each recent trace, for the exporters to add to its spans.

    ``Tracing.turn_span`` registers a turn's trace when the turn starts; the exporters
    read it on their worker threads. Only the newest ``keep`` traces are held: spans are
    exported within a batch delay of ending, long before a thousand turns have passed.
    """

    def __init__(self, keep: int = 1024) -> None:
        self.keep = keep
        self._traces: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, trace_id: int, attributes: Mapping[str, Any]) -> None:
        """Give every span of this trace these attributes (those it does not set itself)."""
        with self._lock:
            self._traces[trace_id] = dict(attributes)
            while len(self._traces) > self.keep:
                self._traces.popitem(last=False)

    def get(self, trace_id: int) -> dict[str, Any]:
        with self._lock:
            return self._traces.get(trace_id, {})


def _with_turn(span: ReadableSpan, turns: TurnRegistry | None) -> dict[str, Any]:
    """The span's attributes with its turn's session and number added."""
    attributes = dict(span.attributes or {})
    context = span.get_span_context()
    if turns is not None and context is not None:
        for key, value in turns.get(context.trace_id).items():
            attributes.setdefault(key, value)
    return attributes


def _texts(spans: Sequence[ReadableSpan]) -> Iterator[str]:
    """Every string of a batch that the exporters write: names, statuses, attributes, events."""
    for span in spans:
        yield span.name
        if span.status.description:
            yield span.status.description
        for attributes in (span.attributes, *(event.attributes for event in span.events)):
            for value in (attributes or {}).values():
                if isinstance(value, str):
                    yield value
                elif isinstance(value, tuple | list):
                    yield from (v for v in value if isinstance(v, str))
        for event in span.events:
            yield event.name


class BatchCheck:
    """Decides per batch whether values need redacting, remembering long clean strings.

    The system instructions and tool definitions come back on every model request; once
    found clean they are not searched again. Only clean strings are remembered, so a
    secret is never skipped: a string is either searched now or was searched against the
    same secrets before (the memory is dropped when the redactor learns a new secret).
    """

    def __init__(self, redactor: Redactor, keep: int = 512, min_chars: int = 128) -> None:
        self.redactor = redactor
        self.keep = keep
        self.min_chars = min_chars
        self._clean: set[str] = set()
        self._literals = redactor.literals

    def redactor_for(self, spans: Sequence[ReadableSpan]) -> Redactor | None:
        """The redactor if some string of the batch may hold a secret; None if none can."""
        if self.redactor.literals is not self._literals:
            # `Redactor.add` (settings read again): what was clean may hold a new secret.
            self._clean.clear()
            self._literals = self.redactor.literals
        fresh = {text for text in _texts(spans) if text not in self._clean}
        # The separator holds no trigger, and a secret within one value stays whole in the join.
        if not self.redactor.is_clean("\n".join(fresh)):
            return self.redactor
        long = [text for text in fresh if len(text) >= self.min_chars]
        if len(self._clean) + len(long) > self.keep:
            self._clean.clear()
        self._clean.update(long[: self.keep])
        return None


def span_kind(attributes: dict[str, Any]) -> str:
    """turn, agent, model, tool or other, from the GenAI operation name."""
    kind = attributes.get("co.kind")
    if kind in SPAN_KINDS:
        return str(kind)
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


def _keep(text: str) -> str:
    return text


def clean_attributes(attributes: Any, redactor: Redactor | None) -> dict[str, Any]:
    """Attributes as plain JSON values, redacted (unless ``redactor`` is None) and clipped."""
    out: dict[str, Any] = {}
    if redactor is None:
        for key, value in dict(attributes or {}).items():
            if isinstance(value, tuple | list):
                out[key] = [_clip(v) for v in value]
            else:
                out[key] = _clip(value)
        return out
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

    def __init__(
        self,
        path: Path,
        redactor: Redactor,
        turns: TurnRegistry | None = None,
        *,
        retention_days: int = 0,
    ) -> None:
        self.path = path
        self.redactor = redactor
        self.turns = turns
        self.retention_days = retention_days
        """Spans older than this are deleted (0 keeps them all)."""
        self._check = BatchCheck(redactor)
        self._lock = threading.Lock()
        self._db = connect(path)
        self._closed = False
        self._pruned_at: float | None = None

    def _row(self, span: ReadableSpan, redactor: Redactor | None) -> tuple[Any, ...]:
        redact: Callable[[str], str] = redactor.redact if redactor is not None else _keep
        attributes = clean_attributes(_with_turn(span, self.turns), redactor)
        events = [
            {
                "name": redact(event.name),
                "time_ns": event.timestamp,
                "attributes": clean_attributes(event.attributes, redactor),
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
        redactor = self._check.redactor_for(spans)
        rows = [self._row(span, redactor) for span in spans]
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
            self._prune_if_due()
        return SpanExportResult.SUCCESS

    def _prune_if_due(self) -> None:
        if not self.retention_days:
            return
        now = time.monotonic()
        if self._pruned_at is not None and now - self._pruned_at < PRUNE_EVERY:
            return
        self._pruned_at = now
        cutoff = time.time_ns() - self.retention_days * 86_400 * 1_000_000_000
        try:
            deleted = self.prune(cutoff)
        except sqlite3.Error:
            # Tried again tomorrow; the spans are written either way.
            log.exception("deleting spans older than %d days failed", self.retention_days)
            return
        if deleted:
            log.info("deleted %d spans older than %d days", deleted, self.retention_days)

    def prune(self, before_ns: int) -> int:
        """Delete the spans that started before ``before_ns``; returns how many.

        Found through the (kind, start) index, a few thousand per transaction (each
        statement commits on its own), so a large backlog never holds the database long.
        """
        kinds = ", ".join("?" for _ in SPAN_KINDS)
        deleted = 0
        while True:
            cursor = self._db.execute(
                f"DELETE FROM spans WHERE id IN (SELECT id FROM spans WHERE kind IN ({kinds}) "
                "AND start_ns < ? LIMIT ?)",
                (*SPAN_KINDS, before_ns, PRUNE_ROWS),
            )
            deleted += cursor.rowcount
            if cursor.rowcount < PRUNE_ROWS:
                return deleted

    def shutdown(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class RedactingSpanExporter(SpanExporter):
    """Hands redacted copies of the spans to another exporter (OTLP)."""

    def __init__(
        self, inner: SpanExporter, redactor: Redactor, turns: TurnRegistry | None = None
    ) -> None:
        self.inner = inner
        self.redactor = redactor
        self.turns = turns
        self._check = BatchCheck(redactor)

    def _copy(self, span: ReadableSpan, redactor: Redactor | None) -> ReadableSpan:
        redact: Callable[[str], str] = redactor.redact if redactor is not None else _keep
        status = span.status
        return ReadableSpan(
            name=redact(span.name),
            context=span.get_span_context(),
            parent=span.parent,
            resource=span.resource,
            attributes=clean_attributes(_with_turn(span, self.turns), redactor),
            events=[
                Event(
                    redact(e.name),
                    clean_attributes(e.attributes, redactor),
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
        redactor = self._check.redactor_for(spans)
        return self.inner.export([self._copy(s, redactor) for s in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
