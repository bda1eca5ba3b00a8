"""Spending as OpenTelemetry metrics: what the spend store records, for a deployer's dashboard.

With ``otlp_endpoint`` set, every settled model request adds to two counters, exported over
OTLP/HTTP (``<endpoint>/v1/metrics``) beside the spans: ``co.spend`` (US dollars, priced
requests only) and ``co.tokens`` (every request, ``co.token.type`` input or output), each
with the person and the model as attributes, the same figures ``co-kernel usage`` prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider

__all__ = ["SpendMetrics", "otlp_metrics_url"]

EXPORT_INTERVAL_MS = 60_000
"""How often the counters are sent while the kernel runs; closing the session sends them too."""


def otlp_metrics_url(endpoint: str) -> str:
    """The OTLP/HTTP metrics URL for an endpoint given as a base URL or the traces path."""
    endpoint = endpoint.rstrip("/").removesuffix("/v1/traces")
    return endpoint if endpoint.endswith("/v1/metrics") else f"{endpoint}/v1/metrics"


class SpendMetrics:
    """The counters of one session, exported to an OTLP endpoint."""

    def __init__(self, endpoint: str, *, service_version: str = "") -> None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource

        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=otlp_metrics_url(endpoint)),
            export_interval_millis=EXPORT_INTERVAL_MS,
        )
        resource = Resource.create(
            {"service.name": "co-kernel", "service.version": service_version}
        )
        # A provider of its own, not the global one: the kernel's spans have theirs too.
        self._provider: MeterProvider = MeterProvider(metric_readers=[reader], resource=resource)
        meter = self._provider.get_meter("co_kernel.spend")
        self._cost = meter.create_counter(
            "co.spend", unit="USD", description="US dollars spent on model requests"
        )
        self._tokens = meter.create_counter(
            "co.tokens", unit="{token}", description="Tokens of model requests"
        )

    def record(
        self, *, person: str, model: str, input_tokens: int, output_tokens: int, cost: float | None
    ) -> None:
        attributes = {"co.person": person, "gen_ai.request.model": model}
        if cost is not None:
            self._cost.add(cost, attributes)
        self._tokens.add(input_tokens, {**attributes, "co.token.type": "input"})
        self._tokens.add(output_tokens, {**attributes, "co.token.type": "output"})

    def shutdown(self) -> None:
        """Send what was counted and stop."""
        self._provider.shutdown()
