"""What the exporters add and check per batch: the turn of every span (looked up by trace),
and one secret test per batch that never lets a secret through."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from co_kernel.telemetry import REDACTED, Redactor
from co_kernel.telemetry._exporter import (
    BatchCheck,
    RedactingSpanExporter,
    SQLiteSpanExporter,
    TurnRegistry,
)
from co_kernel.telemetry._redact import _ANY_TRIGGER, _SHAPES
from co_kernel.telemetry._spans import read_spans

SECRET = "literal-secret-0123456789"
TRIGGERS = [t for shape in _SHAPES for t in shape.triggers]


class _Keep(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


class _Received(SpanExporter):
    """Stands for the OTLP exporter: keeps what the redacting wrapper hands it."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: object) -> SpanExportResult:
        self.spans.extend(spans)  # type: ignore[arg-type]
        return SpanExportResult.SUCCESS


def _turn_spans(
    registry: TurnRegistry, *, session: str, turn: int, text: str
) -> list[ReadableSpan]:
    """A turn span with a nested request span, as Tracing makes them (registered by trace)."""
    keep = _Keep()
    provider = TracerProvider()
    provider.add_span_processor(keep)
    tracer = provider.get_tracer("test")
    root_context = trace.set_span_in_context(trace.INVALID_SPAN)
    attributes = {"co.kind": "turn", "co.session_id": session, "co.turn": turn}
    with tracer.start_as_current_span(
        f"turn {turn}", context=root_context, attributes=attributes
    ) as root:
        registry.add(root.get_span_context().trace_id, {"co.session_id": session, "co.turn": turn})
        with tracer.start_as_current_span(
            "chat scripted",
            attributes={"gen_ai.operation.name": "chat", "gen_ai.input.messages": text},
        ):
            pass
    provider.shutdown()
    return keep.spans


def test_every_span_is_stored_with_its_turn_and_session(tmp_path: Path) -> None:
    registry = TurnRegistry()
    spans = _turn_spans(registry, session="s1", turn=3, text="hello")
    spans += _turn_spans(registry, session="s1", turn=4, text="again")
    exporter = SQLiteSpanExporter(tmp_path / "t.db", Redactor([SECRET]), registry)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()
    rows = read_spans(tmp_path / "t.db")
    assert sorted((r.kind, r.turn) for r in rows) == [
        ("model", 3),
        ("model", 4),
        ("turn", 3),
        ("turn", 4),
    ]
    assert {r.session_id for r in rows} == {"s1"}
    (request,) = [r for r in rows if r.kind == "model" and r.turn == 4]
    assert request.attributes["co.session_id"] == "s1" and request.attributes["co.turn"] == 4


def test_the_registry_keeps_the_newest_traces() -> None:
    registry = TurnRegistry(keep=2)
    for trace_id in (1, 2, 3):
        registry.add(trace_id, {"co.turn": trace_id})
    assert registry.get(1) == {}
    assert registry.get(3) == {"co.turn": 3}


def test_a_secret_in_one_span_of_a_clean_batch_is_redacted(tmp_path: Path) -> None:
    registry = TurnRegistry()
    long_clean = "You are Co, a helpful assistant in a notebook. " * 10
    first = _turn_spans(registry, session="s", turn=1, text=long_clean)
    # The same long text again (remembered as clean), now beside a secret and a key shape.
    second = _turn_spans(registry, session="s", turn=2, text=long_clean + SECRET)
    third = _turn_spans(registry, session="s", turn=3, text=f"{long_clean} api_key=abcd1234")
    db = tmp_path / "t.db"
    exporter = SQLiteSpanExporter(db, Redactor([SECRET]), registry)
    for batch in (first, second, third):
        exporter.export(batch)
    exporter.shutdown()
    with sqlite3.connect(db) as conn:
        stored = " ".join(row[0] for row in conn.execute("SELECT attributes FROM spans"))
    assert SECRET not in stored
    assert "abcd1234" not in stored
    assert stored.count(REDACTED) == 2
    assert long_clean.strip() in stored, "clean text is stored as it was"


def test_the_otlp_copies_are_redacted_and_carry_the_turn() -> None:
    registry = TurnRegistry()
    received = _Received()
    exporter = RedactingSpanExporter(received, Redactor([SECRET]), registry)
    exporter.export(_turn_spans(registry, session="s9", turn=7, text=f"my key {SECRET}"))
    (request,) = [s for s in received.spans if s.name == "chat scripted"]
    assert request.attributes is not None
    assert request.attributes["gen_ai.input.messages"] == f"my key {REDACTED}"
    assert (request.attributes["co.session_id"], request.attributes["co.turn"]) == ("s9", 7)


def test_batch_check_remembers_only_clean_text() -> None:
    check = BatchCheck(Redactor([SECRET]), min_chars=10)
    registry = TurnRegistry()
    clean = _turn_spans(registry, session="s", turn=1, text="nothing to hide here at all")
    assert check.redactor_for(clean) is None
    dirty = _turn_spans(registry, session="s", turn=2, text=f"nothing to hide here {SECRET}")
    assert check.redactor_for(dirty) is not None


def test_a_secret_learnt_later_is_found_in_text_remembered_as_clean(tmp_path: Path) -> None:
    redactor = Redactor([SECRET])
    registry = TurnRegistry()
    late = "mcp-token-9876543210"
    instructions = f"Use the server with the header token {late} for every call. " * 4
    db = tmp_path / "t.db"
    exporter = SQLiteSpanExporter(db, redactor, registry)
    exporter.export(_turn_spans(registry, session="s", turn=1, text=instructions))
    redactor.add([late])  # e.g. `%mcp reload` read a new server secret
    exporter.export(_turn_spans(registry, session="s", turn=2, text=instructions))
    exporter.shutdown()
    with sqlite3.connect(db) as conn:
        rows = dict(conn.execute("SELECT turn, attributes FROM spans WHERE kind = 'model'"))
    assert late in rows[1], "written before the secret was known"
    assert late not in rows[2] and REDACTED in rows[2]


# -- the redactor's one-test-per-batch ---------------------------------------------

_pieces = st.sampled_from(
    [*TRIGGERS, SECRET, "api", "key", "_", "-", " ", "x", "sk", "1/", "\n", "é"]
)
_texts = st.lists(_pieces, max_size=12).map("".join) | st.text(max_size=60)


@given(st.lists(_texts, max_size=6))
def test_a_clean_join_means_every_value_is_left_alone(values: list[str]) -> None:
    redactor = Redactor([SECRET])
    if redactor.is_clean("\n".join(values)):
        assert [redactor.redact(v) for v in values] == values


@given(_texts)
def test_the_trigger_trie_finds_exactly_the_triggers(text: str) -> None:
    lowered = text.lower()
    found = _ANY_TRIGGER.search(lowered) is not None
    assert found == any(t in lowered for t in TRIGGERS)
    plain = re.compile("|".join(re.escape(t) for t in TRIGGERS))
    assert found == (plain.search(lowered) is not None)
