"""A session's usage summed from the spans it stored."""

from __future__ import annotations

from ..support.usage import usage_from_spans
from .span_reader import telemetry_db, turns_done, wait_for_spans


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
