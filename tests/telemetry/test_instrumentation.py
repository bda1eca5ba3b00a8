"""Co's instrumentation capability and settings: pydantic-ai's spans, without a pass over
every event and converting each message once; and Co's metrics stay out of a meter
provider that user code sets up."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from opentelemetry.metrics import NoOpMeterProvider
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.toolsets import FunctionToolset

from co_kernel.config import Settings
from co_kernel.models._providers import build_model
from co_kernel.replay import ScriptedModelServer
from co_kernel.session_state import CoDeps
from co_kernel.telemetry import Redactor
from co_kernel.telemetry._instrumentation import CoInstrumentation
from co_kernel.telemetry._spans import SpanRow, read_spans
from co_kernel.telemetry._tracing import Tracing
from co_kernel.turn import RecordingFrontend, TurnResult, run_turn
from co_kernel.turn._agent import build_agent

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


MESSAGE_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages")
RUN_KEYS = ("pydantic_ai.all_messages", "pydantic_ai.new_message_index", "co.earlier_messages")
"""Where Co's run span differs on purpose: the turn's messages, not the conversation's."""


def _traced_turns(
    server: ScriptedModelServer, tmp: Path, lean: bool, turns: int = 1
) -> tuple[TurnResult, RecordingFrontend, list[SpanRow]]:
    """Turns with a tool call each, one conversation, traced to its own database.

    ``lean``: Co's capability and settings; else pydantic-ai's own, configured alike.
    """
    settings = Settings(model="compat:scripted", base_url=server.base_url, api_key="test")
    db = tmp / f"{'lean' if lean else 'plain'}.db"
    tracing = Tracing(db, Redactor(), batch_delay=0.05)
    capability = tracing.instrumentation()
    assert isinstance(capability, CoInstrumentation)
    if not lean:
        capability = Instrumentation(
            settings=InstrumentationSettings(
                tracer_provider=tracing.provider,
                meter_provider=NoOpMeterProvider(),
                include_binary_content=False,
                include_model_request_parameters=False,
            )
        )
    handle = build_model(settings, base_dir=tmp)
    toolset: FunctionToolset[Any] = FunctionToolset([count_words])
    agent = build_agent(handle.model, settings, [toolset], capabilities=[capability])
    deps = CoDeps(settings=settings, session_id=uuid.uuid4().hex, kernel_id="t", workspace=tmp)
    frontend = RecordingFrontend()

    async def conversation() -> TurnResult:
        history: list[Any] = []
        async with agent:
            for number in range(1, turns + 1):
                with tracing.turn_span(
                    session_id=deps.session_id,
                    turn=number,
                    kernel_id="t",
                    model=handle.label,
                    prompt="count",
                ) as span:
                    result = await run_turn(
                        agent,
                        "count",
                        deps=deps,
                        history=history,
                        frontend=frontend,
                        provider=handle.provider,
                        model_label=handle.label,
                    )
                    span.finish(result)
                history = result.messages
        return result

    result = asyncio.run(conversation())
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
            sorted(k for k in s.attributes if k not in ("gen_ai.response.id", *RUN_KEYS)),
        )
        for s in spans
    )


def _messages(spans: list[SpanRow]) -> list[tuple[str, int | None, dict[str, object]]]:
    """The message attributes of each span, in start order."""
    return [
        (
            s.name,
            s.turn,
            {k: json.loads(s.attributes[k]) for k in MESSAGE_KEYS if k in s.attributes},
        )
        for s in sorted(spans, key=lambda s: s.start_ns)
    ]


def _runs(spans: list[SpanRow]) -> list[dict[str, object]]:
    """The agent run spans' message attributes, turn by turn."""
    runs = sorted((s for s in spans if s.kind == "agent"), key=lambda s: s.turn or 0)
    return [
        {
            k: json.loads(v) if k == "pydantic_ai.all_messages" else v
            for k, v in s.attributes.items()
            if k in RUN_KEYS
        }
        for s in runs
    ]


def test_co_instrumentation_records_what_pydantic_ai_records(tmp_path: Path) -> None:
    shapes, messages, runs = [], [], []
    for lean in (True, False):
        # Three turns of one conversation: later turns' messages come from the memo.
        with ScriptedModelServer(STEPS * 3) as server:
            result, frontend, spans = _traced_turns(server, tmp_path, lean, turns=3)
            assert server.errors == []
        assert result.error is None and result.output.endswith("There are three words.")
        # The text still streams to the frontend: the events bypass only the capability.
        assert "There are three words." in frontend.text
        assert {s.kind for s in spans} == {"turn", "agent", "model", "tool"}
        tools = [s for s in spans if s.kind == "tool"]
        assert len(tools) == 3
        assert all(
            t.tool == "count_words" and t.attributes["gen_ai.tool.call.result"] == "3"
            for t in tools
        )
        assert [(s.input_tokens, s.output_tokens) for s in spans if s.kind == "model"] == [
            (50, 7),
            (70, 5),
        ] * 3
        shapes.append(_shape(spans))
        messages.append(_messages(spans))
        runs.append(_runs(spans))
    lean_shape, plain_shape = shapes
    assert lean_shape == plain_shape
    lean_messages, plain_messages = messages
    assert lean_messages == plain_messages
    # A run span holds its turn's messages (four: prompt, tool call, tool result, answer)
    # where pydantic-ai's repeats the conversation; they are the tail of pydantic-ai's.
    lean_runs, plain_runs = runs
    for turn, (lean_run, plain_run) in enumerate(zip(lean_runs, plain_runs, strict=True)):
        conversation = plain_run["pydantic_ai.all_messages"]
        own = lean_run["pydantic_ai.all_messages"]
        assert isinstance(conversation, list) and isinstance(own, list)
        assert own == conversation[len(conversation) - len(own) :]
        assert json.dumps(own).count('"count"') == 1
        assert lean_run["co.earlier_messages"] == 4 * turn
        assert "pydantic_ai.new_message_index" not in lean_run
    assert json.dumps(plain_runs[2]["pydantic_ai.all_messages"]).count('"count"') == 3


def test_a_failed_turn_still_records_its_run_span(tmp_path: Path) -> None:
    fault = {"fault": {"status": 404, "body": {"error": {"message": "no such model"}}}}
    with ScriptedModelServer([*STEPS, fault]) as server:
        result, _, spans = _traced_turns(server, tmp_path, lean=True, turns=2)
    assert result.error is not None and "404" in result.error
    runs = sorted((s for s in spans if s.kind == "agent"), key=lambda s: s.turn or 0)
    assert [(r.turn, r.status) for r in runs] == [(1, "UNSET"), (2, "ERROR")]
    failed = json.loads(runs[1].attributes["pydantic_ai.all_messages"])
    assert '"count"' in json.dumps(failed)
    assert runs[0].attributes["co.earlier_messages"] == 0


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
from co_kernel.replay import ScriptedModelServer
from tests.telemetry.test_instrumentation import STEPS, _traced_turns

with ScriptedModelServer(STEPS) as server:
    result, _, spans = _traced_turns(server, Path({str(tmp_path)!r}), lean=True)
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


def test_turns_reuse_the_capability_and_a_run_inside_a_run_gets_its_own(tmp_path: Path) -> None:
    # Sequential runs are served by the capability itself (pydantic-ai then keeps the
    # agent's capability chain as it is); a run started while one is using it (here a
    # tool that asks the same agent again) gets pydantic-ai's per-run copy, and neither
    # run's span takes the other's messages.
    steps = [
        {"text": "First answer.", "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
        {
            "text": "Asking.",
            "tool_calls": [{"name": "ask_again", "arguments": {"question": "inner question"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2},
        },
        {"text": "Inner answer.", "usage": {"prompt_tokens": 20, "completion_tokens": 3}},
        {"text": "Outer answer.", "usage": {"prompt_tokens": 30, "completion_tokens": 4}},
    ]
    settings = Settings(model="compat:scripted", base_url="http://127.0.0.1:9/v1", api_key="t")
    tracing = Tracing(tmp_path / "nested.db", Redactor(), batch_delay=0.05)
    capability = tracing.instrumentation()
    assert isinstance(capability, CoInstrumentation)
    with ScriptedModelServer(steps) as server:
        settings = settings.model_copy(update={"base_url": server.base_url})
        handle = build_model(settings, base_dir=tmp_path)
        agent: Any = None

        async def ask_again(question: str) -> str:
            """Ask the assistant a question."""
            inner = await agent.run(question, deps=deps)
            return str(inner.output)

        toolset: FunctionToolset[Any] = FunctionToolset([ask_again])
        agent = build_agent(handle.model, settings, [toolset], capabilities=[capability])
        deps = CoDeps(settings=settings, session_id="s", kernel_id="t", workspace=tmp_path)

        async def go() -> tuple[Any, Any]:
            async with agent:
                first = await agent.run("first question", deps=deps)
                with tracing.turn_span(
                    session_id="s", turn=2, kernel_id="t", model=handle.label, prompt="outer"
                ):
                    result = await agent.run(
                        "outer question", deps=deps, message_history=first.all_messages()
                    )
            from pydantic_ai import RunContext
            from pydantic_ai.usage import RunUsage

            ctx = RunContext(deps=deps, model=handle.model, usage=RunUsage())
            return result, await capability.for_run(ctx)

        result, reused = asyncio.run(go())
        assert server.errors == []
    tracing.shutdown()
    assert result.output == "Outer answer."
    assert reused is capability, "a run after the last one is served by the capability itself"
    spans = read_spans(tmp_path / "nested.db")
    runs = {s.span_id: s for s in spans if s.kind == "agent" and s.turn == 2}
    assert len(runs) == 2
    names = {s.span_id: s for s in spans}
    inner = next(r for r in runs.values() if names[r.parent_id or ""].kind == "tool")
    outer = next(r for r in runs.values() if r is not inner)
    assert outer.attributes["co.earlier_messages"] == 2, "the first turn's two messages"
    assert inner.attributes["co.earlier_messages"] == 0
    assert (outer.input_tokens, inner.input_tokens) == (40, 20), "each run its own usage"
    inner_text = inner.attributes["pydantic_ai.all_messages"]
    outer_text = outer.attributes["pydantic_ai.all_messages"]
    assert "inner question" in inner_text and "Inner answer." in inner_text
    assert "outer question" not in inner_text and "Outer answer." not in inner_text
    assert "outer question" in outer_text and "Outer answer." in outer_text
    assert "first question" not in outer_text
    assert "Inner answer." in outer_text, "as the tool's result, once"
    assert outer_text.count("inner question") == 1, "only as the tool call's argument"
