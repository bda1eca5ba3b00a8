"""OpenTelemetry for one kernel session: a tracer provider, pydantic-ai's instrumentation
(GenAI semantic conventions: agent runs, model requests, tool calls) and Co's turn span.

Imported on the first turn only (the OTel SDK is not on the kernel's start path). The
provider is Co's own, not the global one, so user code or other libraries in the process
neither see nor change it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.trace import Status, StatusCode

from ._cost import CostSum
from ._exporter import RedactingSpanExporter, SQLiteSpanExporter, TurnRegistry
from ._processor import TurnSpanProcessor
from ._redact import Redactor

if TYPE_CHECKING:
    from pydantic_ai.capabilities import AbstractCapability

    from ._audit import AuditEvent

__all__ = ["Tracing", "TurnSpan", "otlp_traces_url"]

_PROMPT_CHARS = 2000


def otlp_traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for an endpoint given as a base URL or the full path."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else f"{endpoint}/v1/traces"


class TurnSpan:
    """The span of one turn; ``finish`` records how the turn ended."""

    def __init__(self, span: trace.Span | None) -> None:
        self.span = span

    def finish(self, result: Any) -> None:
        """Usage, request count, decisions and status from a ``TurnResult``."""
        span = self.span
        if span is None or not span.is_recording():
            return
        usage = getattr(result, "usage", None)
        input_tokens = getattr(usage, "input_tokens", 0) or 0
        output_tokens = getattr(usage, "output_tokens", 0) or 0
        span.set_attributes(
            {
                "co.usage.input_tokens": input_tokens,
                "co.usage.output_tokens": output_tokens,
                "co.usage.requests": getattr(result, "requests", 0) or 0,
                "co.tool_calls": getattr(usage, "tool_calls", 0) or 0,
                "co.interrupted": bool(getattr(result, "interrupted", False)),
                # The input/output token columns of the turn row are the turn's totals.
                "gen_ai.aggregated_usage.input_tokens": input_tokens,
                "gen_ai.aggregated_usage.output_tokens": output_tokens,
            }
        )
        cost = getattr(result, "cost", None)
        if isinstance(cost, CostSum):
            # What Co priced the turn at (subagents' models and the person's own prices
            # included): the sum of its requests' costs, which a model request span carries
            # as pydantic-ai's ``operation.cost`` only for models genai-prices knows.
            # ``co.cost.unknown``: some tokens had no price (``co.cost`` is the rest).
            attributes: dict[str, float | bool] = {"co.cost.unknown": cost.unknown}
            if cost.priced or not cost.unknown:
                attributes["co.cost"] = float(cost.known)
            span.set_attributes(attributes)
        error = getattr(result, "error", None)
        if error:
            span.set_status(Status(StatusCode.ERROR, error))
        elif getattr(result, "interrupted", False):
            span.set_attribute("co.status", "interrupted")
        else:
            span.set_status(Status(StatusCode.OK))


class Tracing:
    """A tracer provider exporting to SQLite (always) and OTLP (when configured)."""

    def __init__(
        self,
        db_path: Path,
        redactor: Redactor,
        *,
        include_content: bool = True,
        otlp_endpoint: str | None = None,
        batch_delay: float = 0.5,
        retention_days: int = 0,
        service_version: str = "",
    ) -> None:
        self.db_path = db_path
        self.redactor = redactor
        self.include_content = include_content
        self.provider = TracerProvider(
            resource=Resource.create(
                {"service.name": "co-kernel", "service.version": service_version}
            ),
            shutdown_on_exit=True,
        )
        self.turns = TurnRegistry()
        """Session and turn of each turn's trace; the exporters add them to every span."""
        delay = max(0.001, batch_delay)
        self.sqlite = SQLiteSpanExporter(
            db_path, redactor, self.turns, retention_days=retention_days
        )
        self.provider.add_span_processor(TurnSpanProcessor(self.sqlite, delay=delay))
        self.otlp: SpanExporter | None = None
        if otlp_endpoint:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            self.otlp = OTLPSpanExporter(endpoint=otlp_traces_url(otlp_endpoint))
            self.provider.add_span_processor(
                TurnSpanProcessor(
                    RedactingSpanExporter(self.otlp, redactor, self.turns), delay=delay
                )
            )
        self.tracer = self.provider.get_tracer("co-kernel", service_version)

    def instrumentation(self) -> AbstractCapability[Any]:
        """pydantic-ai's instrumentation capability, reporting to this provider."""
        from opentelemetry.metrics import NoOpMeterProvider

        from ._instrumentation import CoInstrumentationSettings, instrumentation

        return instrumentation(
            CoInstrumentationSettings(
                tracer_provider=self.provider,
                # Co stores spans, not metrics (token usage is on the spans). Without this,
                # pydantic-ai records into the process's global meter provider: whatever
                # user code in the kernel set up would receive Co's metrics.
                meter_provider=NoOpMeterProvider(),
                include_content=self.include_content,
                # Binary parts (images) would bloat the database; their media type stays.
                include_binary_content=False,
                # The full request parameters repeat every tool's schema on every request;
                # `gen_ai.tool.definitions` (always recorded) already names the tools.
                include_model_request_parameters=False,
            )
        )

    @contextmanager
    def turn_span(
        self,
        *,
        session_id: str,
        turn: int,
        kernel_id: str,
        model: str,
        prompt: str,
    ) -> Iterator[TurnSpan]:
        """The root span of a turn; pydantic-ai's spans nest inside it."""
        attributes: dict[str, Any] = {
            "co.kind": "turn",
            "co.session_id": session_id,
            "co.turn": turn,
            "co.kernel_id": kernel_id,
            "co.model": model,
            "gen_ai.conversation.id": session_id,
        }
        if self.include_content:
            attributes["co.prompt"] = prompt[:_PROMPT_CHARS]
        # A new trace per turn (no parent), so a trace is exactly one turn's tree.
        with self.tracer.start_as_current_span(
            f"turn {turn}",
            context=trace.set_span_in_context(trace.INVALID_SPAN),
            attributes=attributes,
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            self.turns.add(
                span.get_span_context().trace_id,
                {"co.session_id": session_id, "co.turn": turn},
            )
            yield TurnSpan(span)

    def record_decision(self, event: AuditEvent) -> None:
        """An audit row as an event on the current span (the turn, or the tool that asked)."""
        span = trace.get_current_span()
        if not span.is_recording():
            return
        attributes: dict[str, Any] = {
            "co.tool": event.tool,
            "co.action": event.action,
            "co.decision": event.decision,
            "co.status": event.status,
        }
        if event.target:
            attributes["co.target"] = event.target
        if event.result_size is not None:
            attributes["co.result_size"] = event.result_size
        if event.duration_ms is not None:
            attributes["co.duration_ms"] = event.duration_ms
        if event.detail:
            attributes["co.detail"] = event.detail
        span.add_event("co.audit", attributes)

    def flush(self, timeout: float = 10.0) -> bool:
        """Export everything finished so far."""
        return self.provider.force_flush(int(timeout * 1000))

    def shutdown(self) -> None:
        self.provider.shutdown()
