"""Retention: spans older than ``trace_retention_days`` leave the telemetry database (after
the first batch a kernel writes, then daily); the audit log stays."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from pydantic import ValidationError

from co_kernel.config import Settings
from co_kernel.telemetry import Redactor
from co_kernel.telemetry._audit import AuditEvent, AuditLog
from co_kernel.telemetry._exporter import PRUNE_ROWS, SQLiteSpanExporter
from co_kernel.telemetry._session_telemetry import SessionTelemetry
from co_kernel.telemetry._spans import read_spans

DAY = 86_400 * 1_000_000_000


class _Keep(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def _turns(starts: list[int], first: int = 0) -> list[ReadableSpan]:
    """Turn spans that started at these times (ns), numbered from ``first``."""
    keep = _Keep()
    provider = TracerProvider()
    provider.add_span_processor(keep)
    tracer = provider.get_tracer("test")
    root = trace.set_span_in_context(trace.INVALID_SPAN)
    for number, start in enumerate(starts, first):
        span = tracer.start_span(
            f"turn {number}",
            context=root,
            attributes={"co.kind": "turn", "co.turn": number},
            start_time=start,
        )
        span.end(end_time=start + 5_000_000)
    provider.shutdown()
    return keep.spans


def _stored_turns(db: Path) -> list[int | None]:
    return sorted(row.turn for row in read_spans(db))  # type: ignore[type-var]


def test_spans_past_the_retention_period_leave_and_the_audit_log_stays(tmp_path: Path) -> None:
    db = tmp_path / "telemetry.db"
    now = time.time_ns()
    audit = AuditLog(db)
    audit.record(AuditEvent(session_id="s", tool="run_shell", decision="approved", ts=1.0))
    exporter = SQLiteSpanExporter(db, Redactor(), retention_days=30)
    exporter.export(_turns([now - 40 * DAY, now - 31 * DAY, now - 29 * DAY, now]))
    assert _stored_turns(db) == [2, 3]

    # Checked once a day: an old span written later the same day waits for the next check
    # (here, the next kernel's exporter after its first batch). A span is written when it
    # ends, so one that started long before the spans written ahead of it goes too.
    exporter.export(_turns([now - 90 * DAY], first=4))
    assert _stored_turns(db) == [2, 3, 4]
    exporter.shutdown()
    later = SQLiteSpanExporter(db, Redactor(), retention_days=30)
    later.export(_turns([now], first=5))
    later.shutdown()
    assert _stored_turns(db) == [2, 3, 5]
    assert [row["tool"] for row in audit.query(limit=10)] == ["run_shell"]
    audit.close()


def test_zero_days_keeps_every_span(tmp_path: Path) -> None:
    db = tmp_path / "telemetry.db"
    now = time.time_ns()
    exporter = SQLiteSpanExporter(db, Redactor(), retention_days=0)
    exporter.export(_turns([now - 4000 * DAY, now]))
    exporter.shutdown()
    assert _stored_turns(db) == [0, 1]


def test_a_large_backlog_is_deleted_a_chunk_at_a_time(tmp_path: Path) -> None:
    db = tmp_path / "telemetry.db"
    now = time.time_ns()
    old = PRUNE_ROWS * 2 + 17
    exporter = SQLiteSpanExporter(db, Redactor())
    exporter.export(_turns([now - 100 * DAY + i for i in range(old)]))
    exporter.export(_turns([now - DAY, now], first=old))
    assert exporter.prune(now - 30 * DAY) == old
    assert _stored_turns(db) == [old, old + 1]
    assert exporter.prune(now + DAY) == 2
    assert _stored_turns(db) == []
    exporter.shutdown()


def test_the_setting_reaches_the_exporter_and_bad_values_are_refused(tmp_path: Path) -> None:
    telemetry = SessionTelemetry(
        Settings(trace_retention_days=7), kernel_id="k", db_path=tmp_path / "t.db"
    )
    tracing = telemetry.tracing
    assert tracing is not None and tracing.sqlite.retention_days == 7
    telemetry.close()
    assert Settings().trace_retention_days == 30
    with pytest.raises(ValidationError, match="trace_retention_days"):
        Settings(trace_retention_days=-1)
