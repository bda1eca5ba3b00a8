"""The span processor: finished spans are written when their turn ends.

OpenTelemetry's ``BatchSpanProcessor`` writes on a timer, so a batch was redacted,
serialised and stored halfway through whichever turn the timer fell in, taking the
interpreter from the turn as it streamed. ``TurnSpanProcessor`` queues spans the same
way (one append per span) and writes them on its own thread shortly after a turn's root
span ends (``SETTLE``: the cell's reply and the session save go first), while the person
reads the answer; and every ``delay`` seconds during a long turn, so ``co-kernel tail``
still follows a turn that runs for minutes.
"""

from __future__ import annotations

import collections
import logging
import threading

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["TurnSpanProcessor"]

log = logging.getLogger(__name__)

MAX_QUEUED = 8192
"""Spans held for writing; beyond that the oldest are dropped (a stalled disk)."""

BATCH = 256
"""Spans per ``export`` call (one transaction)."""

SETTLE = 0.1
"""Seconds between a turn's end and the writing of its spans."""


class TurnSpanProcessor(SpanProcessor):
    """Queues finished spans; a worker thread exports them when a turn ends (or on a timer)."""

    def __init__(self, exporter: SpanExporter, *, delay: float = 0.5) -> None:
        self.exporter = exporter
        self.delay = delay
        self._queue: collections.deque[ReadableSpan] = collections.deque(maxlen=MAX_QUEUED)
        self._turn_ended = threading.Event()
        self._stopping = threading.Event()
        self._export_lock = threading.Lock()
        self._stopped = False
        self._worker = threading.Thread(target=self._work, name="co-span-export", daemon=True)
        self._worker.start()

    def on_end(self, span: ReadableSpan) -> None:
        if self._stopped:
            return
        self._queue.append(span)
        if span.parent is None:
            # A root span is a whole turn (or a one-off span): write while the person reads.
            self._turn_ended.set()

    def _work(self) -> None:
        while not self._stopped:
            if self._turn_ended.wait(self.delay):
                self._stopping.wait(SETTLE)
                self._turn_ended.clear()
            self._export_queued()

    def _export_queued(self) -> None:
        with self._export_lock:
            # Exporting must not itself be traced (an OTLP request by instrumented HTTP code).
            token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
            try:
                while self._queue:
                    batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
                    try:
                        self.exporter.export(batch)
                    except Exception:
                        log.exception("writing %d spans failed", len(batch))
            finally:
                detach(token)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export everything queued, now, in the calling thread."""
        if self._stopped:
            return False
        self._export_queued()
        return True

    def shutdown(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        self._turn_ended.set()
        self._worker.join(timeout=30)
        self._export_queued()
        self.exporter.shutdown()
