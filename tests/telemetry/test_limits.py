"""Rate limits: requests per hour per session, tokens per turn, enforced before a request."""

from __future__ import annotations

from co_kernel.telemetry import AuditLog, RequestWindow

from .span_reader import telemetry_db


def test_the_window_slides() -> None:
    now = [1000.0]
    window = RequestWindow(2, period=3600, clock=lambda: now[0])
    assert window.admit() is None
    now[0] += 600
    assert window.admit() is None
    now[0] += 600
    assert window.admit() == 2400, "the first request frees its slot an hour after it was made"
    assert window.used() == 2
    now[0] += 2400
    assert window.admit() is None, "an hour after the first, there is room again"
    assert window.used() == 2


def test_requests_per_hour_stop_the_next_request(start_kernel, model_server, co_home):
    kernel = start_kernel({"CO_MAX_REQUESTS_PER_HOUR": "2"})
    model_server.extend(
        [
            {"text": "One."},
            {"tool_calls": [{"name": "no_such_tool", "arguments": {}}]},
            {"text": "never sent"},
        ]
    )
    assert kernel.execute("first").status == "ok"
    second = kernel.execute("second, with a tool")
    assert second.status == "error"
    assert "max_requests_per_hour" in second.text()
    assert "2 model requests in the last hour" in second.text()
    third = kernel.execute("third", mode="headless")
    assert third.status == "error"
    assert "nothing was sent" in third.text()
    assert len(model_server.requests) == 2, "the refused requests never reached the model"
    assert "Traceback" not in second.text() + third.text()
    assert kernel.is_alive()
    assert kernel.execute("%help").status == "ok"
    rows = AuditLog(telemetry_db(co_home)).query(decision="rate-limited")
    # One refusal in the second turn (after its tool call), one at the start of the third.
    assert sorted((r["turn"], r["target"], r["status"]) for r in rows) == [
        (2, "max_requests_per_hour", "refused"),
        (3, "max_requests_per_hour", "refused"),
    ]
    assert "nothing was sent" in rows[0]["detail"]


def test_tokens_per_turn_stop_the_turn_before_its_next_request(start_kernel, model_server):
    kernel = start_kernel({"CO_MAX_TOKENS_PER_TURN": "100"})
    model_server.extend(
        [
            {
                "tool_calls": [{"name": "no_such_tool", "arguments": {}}],
                "usage": {"prompt_tokens": 80, "completion_tokens": 30},
            },
            {"text": "A small answer.", "usage": {"prompt_tokens": 60, "completion_tokens": 5}},
        ]
    )
    stopped = kernel.execute("do a lot")
    assert stopped.status == "error"
    assert "110 tokens" in stopped.text() and "max_tokens_per_turn" in stopped.text()
    assert len(model_server.requests) == 1
    # The budget is per turn: the next turn starts from zero.
    after = kernel.execute("something small")
    assert after.status == "ok"
    assert "A small answer." in after.markdown()
