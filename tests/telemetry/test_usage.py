"""Usage sums: a session's turns, from their summaries and from the stored spans."""

from __future__ import annotations

from co_kernel.telemetry import TurnUsage, sum_usage, usage_from_spans
from co_kernel.turn import TurnSummary

from .span_reader import telemetry_db, turns_done, wait_for_spans


def test_sum_of_turn_summaries_per_model() -> None:
    turns = [
        TurnUsage.from_summary(1, TurnSummary("gemini:a", 100, 10, 1, 1.5)),
        TurnUsage.from_summary(2, TurnSummary("gemini:a", 200, 20, 2, 2.0)),
        TurnUsage.from_summary(3, TurnSummary("ollama:b", 50, 5, 1, 0.5)),
    ]
    totals = sum_usage(turns)
    assert (totals.turns, totals.input_tokens, totals.output_tokens) == (3, 350, 35)
    assert (totals.requests, totals.total_tokens, totals.duration) == (4, 385, 4.0)
    assert totals.by_model is not None
    assert {m: (u.turns, u.input_tokens) for m, u in totals.by_model.items()} == {
        "gemini:a": (2, 300),
        "ollama:b": (1, 50),
    }


def test_session_usage_from_stored_spans(start_kernel, model_server, co_home) -> None:
    kernel = start_kernel()
    model_server.extend(
        [
            {"text": "One.", "usage": {"prompt_tokens": 100, "completion_tokens": 7}},
            {
                "tool_calls": [{"name": "no_such_tool", "arguments": {}}],
                "usage": {"prompt_tokens": 150, "completion_tokens": 9},
            },
            {"text": "Two.", "usage": {"prompt_tokens": 170, "completion_tokens": 2}},
        ]
    )
    kernel.execute("one")
    kernel.execute("two")
    db = telemetry_db(co_home)
    spans = wait_for_spans(db, turns_done(2))
    session = spans[0].session_id
    totals = usage_from_spans(db, session[:8])
    assert (totals.turns, totals.requests) == (2, 3)
    assert (totals.input_tokens, totals.output_tokens) == (420, 18)
    assert totals.by_model is not None and set(totals.by_model) == {"scripted"}
    assert usage_from_spans(db, "no-such-session").turns == 0
