"""Spans are written when their turn ends, on a timer during a long turn, and never lost
to an exporter's failure or to shutdown."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from co_kernel.telemetry._processor import TurnSpanProcessor


def _provider(
    exporter: InMemorySpanExporter, delay: float
) -> tuple[TracerProvider, TurnSpanProcessor]:
    provider = TracerProvider()
    processor = TurnSpanProcessor(exporter, delay=delay)
    provider.add_span_processor(processor)
    return provider, processor


def _names(exporter: InMemorySpanExporter) -> list[str]:
    return [s.name for s in exporter.get_finished_spans()]


def _eventually(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


def test_a_turns_spans_are_written_when_the_turn_ends() -> None:
    exporter = InMemorySpanExporter()
    provider, processor = _provider(exporter, delay=60)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("turn 1"):
        with tracer.start_as_current_span("chat"):
            pass
        with tracer.start_as_current_span("execute_tool"):
            pass
        time.sleep(0.3)
        # The timer is a minute away and the turn goes on: nothing written yet.
        assert _names(exporter) == []
    assert _eventually(lambda: sorted(_names(exporter)) == ["chat", "execute_tool", "turn 1"])
    processor.shutdown()


def test_a_long_turn_is_written_as_it_goes() -> None:
    exporter = InMemorySpanExporter()
    provider, processor = _provider(exporter, delay=0.1)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("turn 1"):
        with tracer.start_as_current_span("execute_tool"):
            pass
        assert _eventually(lambda: _names(exporter) == ["execute_tool"])
    assert _eventually(lambda: _names(exporter) == ["execute_tool", "turn 1"])
    processor.shutdown()


def test_flush_and_shutdown_write_what_is_queued() -> None:
    exporter = InMemorySpanExporter()
    provider, processor = _provider(exporter, delay=60)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("turn 1"):
        with tracer.start_as_current_span("chat"):
            pass
        assert processor.force_flush()
        assert _names(exporter) == ["chat"]
        with tracer.start_as_current_span("execute_tool"):
            pass
    processor.shutdown()
    assert sorted(_names(exporter)) == ["chat", "execute_tool", "turn 1"]
    # After shutdown nothing is queued and flushing says so.
    assert processor.force_flush() is False


class _FailsOnce(InMemorySpanExporter):
    def __init__(self) -> None:
        super().__init__()
        self.failures = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.failures == 0:
            self.failures += 1
            raise OSError("disk full")
        return super().export(spans)


def test_a_failing_write_does_not_stop_later_ones() -> None:
    exporter = _FailsOnce()
    provider, processor = _provider(exporter, delay=60)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("turn 1"):
        pass
    assert _eventually(lambda: exporter.failures == 1)
    with tracer.start_as_current_span("turn 2"):
        pass
    assert _eventually(lambda: _names(exporter) == ["turn 2"])
    processor.shutdown()
