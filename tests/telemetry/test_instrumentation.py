"""Co's instrumentation capability: pydantic-ai's spans, without a pass over every event;
and Co's metrics stay out of a meter provider that user code sets up."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.toolsets import FunctionToolset

from co_kernel.config import Settings
from co_kernel.frontend import RecordingFrontend
from co_kernel.telemetry import Redactor
from co_kernel.telemetry._instrumentation import CoInstrumentation
from co_kernel.telemetry._store import SpanRow, read_spans
from co_kernel.telemetry._tracing import Tracing
from co_kernel.testing import ScriptedModelServer
from co_kernel.turn import CoDeps, TurnResult, run_turn
from co_kernel.turn._agent import build_agent
from co_kernel.turn._providers import build_model

STEPS = [
    {
        "text": "Counting.",
        "tool_calls": [{"name": "count_words", "arguments": {"text": "one two three"}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7},
    },
    {"text": "There are three words.", "usage": {"prompt_tokens": 70, "completion_tokens": 5}},
]


def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def _traced_turn(
    server: ScriptedModelServer, tmp: Path, lean: bool
) -> tuple[TurnResult, RecordingFrontend, list[SpanRow]]:
    """One turn with a tool call, traced to its own database."""
    settings = Settings(model="compat:scripted", base_url=server.base_url, api_key="test")
    db = tmp / f"{'lean' if lean else 'plain'}.db"
    tracing = Tracing(db, Redactor(), batch_delay=0.05)
    capability = tracing.instrumentation()
    assert isinstance(capability, CoInstrumentation)
    if not lean:
        capability = Instrumentation(settings=capability.settings)
    handle = build_model(settings, base_dir=tmp)
    toolset: FunctionToolset[Any] = FunctionToolset([count_words])
    agent = build_agent(handle.model, settings, [toolset], capabilities=[capability])
    deps = CoDeps(settings=settings, session_id=uuid.uuid4().hex, kernel_id="t", workspace=tmp)
    frontend = RecordingFrontend()

    async def turn() -> TurnResult:
        async with agent:
            with tracing.turn_span(
                session_id=deps.session_id,
                turn=1,
                kernel_id="t",
                model=handle.label,
                prompt="count",
            ) as span:
                result = await run_turn(
                    agent,
                    "count",
                    deps=deps,
                    history=[],
                    frontend=frontend,
                    provider=handle.provider,
                    model_label=handle.label,
                )
                span.finish(result)
        return result

    result = asyncio.run(turn())
    tracing.shutdown()
    return result, frontend, read_spans(db)


def _shape(spans: list[SpanRow]) -> list[tuple[str, str, str | None, int | None, list[str]]]:
    """What a trace says, without ids and times: kind, name, parent's name, turn, attributes."""
    names = {s.span_id: s.name for s in spans}
    return sorted(
        (
            s.kind,
            s.name,
            names.get(s.parent_id or ""),
            s.turn,
            sorted(k for k in s.attributes if k not in ("gen_ai.response.id",)),
        )
        for s in spans
    )


def test_co_instrumentation_records_what_pydantic_ai_records(tmp_path: Path) -> None:
    shapes = []
    for lean in (True, False):
        with ScriptedModelServer(STEPS) as server:
            result, frontend, spans = _traced_turn(server, tmp_path, lean)
            assert server.errors == []
        assert result.error is None and result.output.endswith("There are three words.")
        # The text still streams to the frontend: the events bypass only the capability.
        assert "There are three words." in frontend.text
        assert {s.kind for s in spans} == {"turn", "agent", "model", "tool"}
        (tool,) = [s for s in spans if s.kind == "tool"]
        assert tool.tool == "count_words" and tool.attributes["gen_ai.tool.call.result"] == "3"
        assert [(s.input_tokens, s.output_tokens) for s in spans if s.kind == "model"] == [
            (50, 7),
            (70, 5),
        ]
        shapes.append(_shape(spans))
    lean_shape, plain_shape = shapes
    assert lean_shape == plain_shape


def test_co_metrics_do_not_reach_a_meter_provider_user_code_set_up(tmp_path: Path) -> None:
    # A process of its own: the global meter provider can be set once per process.
    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

from pathlib import Path
from co_kernel.testing import ScriptedModelServer
from tests.telemetry.test_instrumentation import STEPS, _traced_turn

with ScriptedModelServer(STEPS) as server:
    result, _, spans = _traced_turn(server, Path({str(tmp_path)!r}), lean=True)
assert result.error is None and any(s.kind == "model" for s in spans)
data = reader.get_metrics_data()
names = [m.name for rm in (data.resource_metrics if data else []) for sm in rm.scope_metrics
         for m in sm.metrics]
print(names)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    names = done.stdout.strip().splitlines()[-1]
    assert "gen_ai" not in names, names
