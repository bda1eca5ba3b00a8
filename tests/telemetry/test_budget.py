"""Budgets through real kernels: a request that could pass a budget is never sent.

The scripted server answers as ``openai:gpt-4o-mini`` (genai-prices: $0.15 per million input
tokens, $0.60 per million output tokens) and reports the usage each step names, so each
request's cost is known; ``scripted`` (through ``compat:``) has no price.
"""

from __future__ import annotations

import getpass
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from co_kernel.frontend import MIME_TOOL_CALL
from tests.support.cells import tool_cards
from tests.support.files import write_json

from .test_spans import otlp_collector  # noqa: F401 - a fixture

PRICED = {
    "CO_MODEL": "openai:gpt-4o-mini",
    "OPENAI_API_KEY": "sk-test-not-a-real-key",
}


def _priced(model_server: Any) -> dict[str, str]:
    return {**PRICED, "CO_BASE_URL": model_server.base_url}


def _user_settings(co_home: Path, **values: Any) -> Path:
    return write_json(co_home / "config" / "settings.json", values)


def _echo(n: int, prompt_tokens: int = 10_000) -> dict[str, Any]:
    return {
        "tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": f"echo step {n}"}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 10},
    }


def test_a_loop_of_tool_calls_stops_before_the_request_that_would_pass_the_turn_budget(
    start_kernel, model_server, co_home
):
    # Each request costs $0.001506 (10,000 in, 10 out); the next one is estimated at its
    # counted prompt plus 100 output tokens: the fourth would pass $0.005.
    _user_settings(co_home, budget_turn=0.005, max_output_tokens=100)
    done = {"text": "Done.", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
    model_server.extend([_echo(1), _echo(2), _echo(3), done])
    kernel = start_kernel(_priced(model_server))
    stopped = kernel.execute("loop over the steps")
    assert stopped.status == "error", stopped.text()
    text = stopped.text()
    assert len(model_server.requests) == 3, "no request past the budget reached the model"
    assert "`budget_turn`" in text and "$0.0050" in text, text
    assert "Nothing was sent" in text and "%budget turn" in text, text
    assert "Traceback" not in text and "pydantic.dev" not in text
    # Every request went out with the output cap the estimate counted.
    assert all(
        r.get("max_tokens") == 100 or r.get("max_completion_tokens") == 100
        for r in model_server.requests
    ), model_server.requests[0].keys()
    # The conversation is intact: the next turn (a new turn budget) sees the tool results.
    after = kernel.execute("carry on")
    assert after.status == "ok", after.text()
    assert "Done." in after.markdown()
    sent = json.dumps(model_server.requests[-1]["messages"])
    assert "step 3" in sent and "loop over the steps" in sent
    assert kernel.is_alive()


def test_two_kernels_of_one_person_share_a_daily_budget_in_flight_and_after(
    start_kernel, model_server, co_home
):
    # An answer is counted as 100,000 output tokens ($0.06) before it is sent, so two
    # requests in flight at once would pass $0.10: the second waits for the first.
    _user_settings(co_home, budget_day=0.10, max_output_tokens=100_000)
    model_server.extend(
        [
            {"text": "slow", "fault": {"kind": "stall", "seconds": 300}},
            {"text": "B answers.", "usage": {"prompt_tokens": 300_000, "completion_tokens": 5}},
        ]
    )
    first = start_kernel(_priced(model_server))
    second = start_kernel(_priced(model_server))
    # The first kernel's cell runs while the second's is refused (the person stops it later).
    msg_id = first.send("a long answer")
    while not model_server.requests:
        time.sleep(0.05)  # its request is in flight, reserved in the store
    blocked = second.execute("meanwhile, in another notebook")
    first.km.interrupt_kernel()
    first.wait_for(
        msg_id,
        lambda m: m["msg_type"] == "status" and m["content"]["execution_state"] == "idle",
    )
    assert blocked.status == "error", blocked.text()
    text = blocked.text()
    assert "`budget_day`" in text and "today has spent $0.06" in text, text
    assert len(model_server.requests) == 1, "the second kernel's request was not sent"
    # The interrupted request released its reservation: the second kernel goes on.
    after = second.execute("again")
    assert after.status == "ok", after.text()
    assert "B answers." in after.markdown()
    # B's answer cost $0.045: a third kernel (a restart, a new notebook) counts it.
    third = start_kernel(_priced(model_server))
    late = third.execute("one more")
    assert late.status == "error", late.text()
    assert "today has spent $0.0450" in late.text(), late.text()
    assert len(model_server.requests) == 2


def test_a_managed_budget_is_a_ceiling_no_layer_below_can_raise(
    start_kernel, model_server, co_home, workspace, tmp_path
):
    managed = write_json(tmp_path / "etc-co" / "settings.json", {"budget_day": 0.05})
    user_file = _user_settings(co_home, budget_day=5, max_output_tokens=100_000)
    project_file = write_json(workspace / ".co" / "settings.json", {"budget_day": 10})
    kernel = start_kernel(
        {**_priced(model_server), "CO_MANAGED_SETTINGS": str(managed), "CO_BUDGET_DAY": "20"}
    )
    model_server.extend([{"text": "never sent"}])
    stopped = kernel.execute("hello")
    text = stopped.text()
    assert stopped.status == "error", text
    assert f"{user_file}: budget_day: your administrator sets at most 0.05" in text
    assert "environment (CO_BUDGET_DAY): budget_day: your administrator sets at most" in text
    assert f"{project_file}: budget_day: a project file cannot set this" in text
    assert "day's budget of $0.0500" in text and "set by your administrator" in text, text
    assert "`%budget" not in text.split("set by your administrator")[1]
    assert model_server.requests == []
    # Nor %budget: higher or off is refused, lower is kept.
    higher = kernel.execute("%budget day 1")
    assert higher.status == "error" and "at most $0.0500" in higher.text(), higher.text()
    off = kernel.execute("%budget day off")
    assert off.status == "error" and "not turn it off" in off.text(), off.text()
    lower = kernel.execute("%budget day 0.02")
    assert lower.status == "ok", lower.text()
    shown = kernel.execute("%budget").markdown()
    assert "$0.0200" in shown and "managed at most $0.0500" in shown, shown


def test_an_unpriced_model_obeys_a_token_budget(start_kernel, model_server, co_home):
    # `scripted` has no price: a money budget cannot count it, a token budget does.
    _user_settings(co_home, budget_turn=0.000001, budget_turn_tokens=25_000, max_output_tokens=50)
    model_server.extend([_echo(1), _echo(2), _echo(3)])
    kernel = start_kernel()
    stopped = kernel.execute("loop")
    text = stopped.text()
    assert stopped.status == "error", text
    assert len(model_server.requests) == 2, "the third request would pass 25,000 tokens"
    assert "turn's token budget of 25,000 tokens" in text and "`budget_turn_tokens`" in text
    assert "this turn has spent 20,020 tokens" in text, text


def test_budget_magic_sets_shows_and_removes_the_persons_own(start_kernel, co_home):
    kernel = start_kernel()
    assert "%budget" in kernel.execute("%help").markdown()
    assert "No budgets set" in kernel.execute("%budget").markdown()
    set_turn = kernel.execute("%budget turn 0.50")
    assert set_turn.status == "ok", set_turn.text()
    assert "`budget_turn` is now $0.5000" in set_turn.markdown(), set_turn.markdown()
    kernel.execute("%budget month tokens 2000000")
    saved = json.loads((co_home / "config" / "settings.json").read_text())
    assert saved["budget_turn"] == 0.5 and saved["budget_month_tokens"] == 2_000_000
    shown = kernel.execute("%budget").markdown()
    assert "$0.5000" in shown and "2,000,000 tokens" in shown and "user" in shown, shown
    bad = kernel.execute("%budget week 3")
    assert bad.status == "error" and "one of turn, conversation, day, month" in bad.text()
    worse = kernel.execute("%budget day lots")
    assert worse.status == "error" and "US dollars" in worse.text()
    kernel.execute("%budget turn off")
    saved = json.loads((co_home / "config" / "settings.json").read_text())
    assert "budget_turn" not in saved and saved["budget_month_tokens"] == 2_000_000
    kernel.execute("%budget off")
    assert json.loads((co_home / "config" / "settings.json").read_text()) == {}
    assert kernel.is_alive()


def test_the_warning_at_80_percent_of_a_daily_budget_comes_once(
    start_kernel, model_server, co_home
):
    _user_settings(co_home, budget_day=0.01, max_output_tokens=100)
    model_server.extend(
        [
            {"text": "One.", "usage": {"prompt_tokens": 10, "completion_tokens": 10_000}},
            {"text": "Two.", "usage": {"prompt_tokens": 10, "completion_tokens": 4_000}},
            {"text": "Three.", "usage": {"prompt_tokens": 10, "completion_tokens": 10}},
            {"text": "Four.", "usage": {"prompt_tokens": 10, "completion_tokens": 10}},
        ]
    )
    kernel = start_kernel(_priced(model_server))
    first = kernel.execute("one")  # $0.006: 60 %
    assert first.status == "ok" and "of your day's budget" not in first.text()
    second = kernel.execute("two")  # $0.0084: 84 %
    assert second.status == "ok", second.text()
    assert "You have used 84 % of your day's budget: $0.0084 of $0.0100" in second.text()
    third = kernel.execute("three")
    assert third.status == "ok" and "of your day's budget" not in third.text()
    # Once per day for the person, not per kernel.
    other = start_kernel(_priced(model_server)).execute("four")
    assert other.status == "ok" and "of your day's budget" not in other.text(), other.text()


def test_co_kernel_usage_prints_spend_per_person_day_and_model_from_the_shared_store(
    start_kernel, model_server, co_home, tmp_path
):
    shared = tmp_path / "hub" / "spend.db"
    shared.parent.mkdir()  # the deployer's folder, writable by every user's kernel
    managed = write_json(tmp_path / "etc-co" / "settings.json", {"spend_store": str(shared)})
    model_server.extend(
        [
            {"text": "Priced.", "usage": {"prompt_tokens": 20_000, "completion_tokens": 1_000}},
            {"text": "Unpriced.", "usage": {"prompt_tokens": 300, "completion_tokens": 20}},
        ]
    )
    env = {**_priced(model_server), "CO_MANAGED_SETTINGS": str(managed)}
    assert start_kernel(env).execute("hi").status == "ok"
    unpriced = {"CO_MANAGED_SETTINGS": str(managed), "CO_BASE_URL": model_server.base_url}
    assert start_kernel(unpriced).execute("hi").status == "ok"
    assert stat.S_IMODE(shared.stat().st_mode) == 0o660, "every user's kernel writes it"
    person_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CO_", "PYTEST"))},
        "CO_HOME": str(co_home),
        "CO_MANAGED_SETTINGS": str(managed),
    }
    co_kernel = Path(sys.executable).with_name("co-kernel")
    out = subprocess.run(
        [str(co_kernel), "usage"], env=person_env, capture_output=True, text=True, check=True
    ).stdout
    today = time.strftime("%Y-%m-%d")
    person = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
    assert f"Spending recorded in {shared}" in out, out
    lines = out.splitlines()
    priced = next(line for line in lines if "gpt-4o-mini" in line)
    assert priced.split()[:2] == [today, person], out
    # 20,000 x $0.15 + 1,000 x $0.60 per million tokens.
    assert priced.split()[-4:] == ["1", "20,000", "1,000", "$0.0036"], out
    scripted = next(line for line in lines if " scripted " in line)
    assert scripted.endswith("price unknown"), out
    total = next(line for line in lines if line.startswith("total"))
    assert total.endswith("$0.0036 (+1 unpriced)"), out


HELPER = """---
name: helper
description: Runs shell commands in the workspace.
tools: [run_shell_command]
---
You help.
"""


def _card_waiting(seen: list[dict[str, Any]]) -> bool:
    return any(
        m["msg_type"] in ("display_data", "update_display_data")
        and (m["content"]["data"].get(MIME_TOOL_CALL) or {}).get("status") == "waiting"
        for m in seen
    )


def test_an_approval_card_waiting_when_a_subagent_passes_the_budget_is_cancelled(
    start_kernel, model_server, co_home, workspace
):
    """Two subagents run side by side: one waits for the person's approval, the other's
    next request could pass the turn's budget. The turn stops, and the card stops waiting."""
    (workspace / ".co" / "agents").mkdir(parents=True)
    (workspace / ".co" / "agents" / "helper.md").write_text(HELPER)
    # The command waits until the test has seen the other subagent's card, so the budget
    # stop comes while the card waits, whichever subagent takes which step.
    (workspace / "wait.sh").write_text(
        "while [ ! -e card-shown ]; do sleep 0.05; done\necho seen\n"
    )
    _user_settings(
        co_home,
        budget_turn=0.01,
        max_output_tokens=100,
        permissions={"allow": ["run_shell_command(sh wait.sh)"]},
    )
    both = {
        "tool_calls": [
            {"name": "delegate_task", "arguments": {"description": "wait", "subagent": "helper"}},
            {"name": "delegate_task", "arguments": {"description": "ask", "subagent": "helper"}},
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10},
    }
    # 40,000 prompt tokens cost $0.006 and make the next request's estimate as much: the
    # second request of that subagent could pass $0.01, its first could not.
    waits = {
        "tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": "sh wait.sh"}}],
        "usage": {"prompt_tokens": 40_000, "completion_tokens": 10},
    }
    asks = {
        "tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": "touch asked.txt"}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10},
    }
    model_server.extend([both, waits, asks, {"text": "never sent"}])
    kernel = start_kernel(_priced(model_server))
    seen: list[dict[str, Any]] = []

    def watch(_kernel: Any, message: dict[str, Any]) -> None:
        seen.append(message)
        if _card_waiting(seen):
            (workspace / "card-shown").touch()

    result = kernel.execute("do both", on_message=watch, timeout=120)
    text = result.text()
    assert result.status == "error", text
    assert "`budget_turn`" in text and "Nothing was sent" in text, text
    assert len(model_server.requests) == 3, "the request past the budget was not sent"
    assert not (workspace / "asked.txt").exists()
    shell = [c for c in tool_cards(result) if c["tool"] == "run_shell_command"]
    asked = next(c for c in shell if "touch" in json.dumps(c["args"]))
    assert (asked["status"], asked["decision"]) == ("interrupted", "interrupted"), asked
    assert kernel.is_alive()
    # The conversation goes on from a valid history: both delegations have their returns.
    model_server.reset([{"text": "Fine."}])
    after = kernel.execute("%budget turn off")
    assert after.status == "ok"
    again = kernel.execute("what happened?")
    assert again.status == "ok" and "Fine." in again.markdown(), again.text()
    sent = model_server.requests[-1]["messages"]
    assert sum(1 for m in sent if m["role"] == "tool") == 2, sent


def test_spend_goes_out_as_opentelemetry_counters_per_person_and_model(
    start_kernel,
    model_server,
    otlp_collector,  # noqa: F811 - the fixture imported above
):
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    port = otlp_collector.server_address[1]
    model_server.extend(
        [{"text": "Priced.", "usage": {"prompt_tokens": 20_000, "completion_tokens": 1_000}}]
    )
    kernel = start_kernel({**_priced(model_server), "CO_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"})
    assert kernel.execute("hi").status == "ok"
    kernel.shutdown()  # sends what was counted
    points: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for path, body in otlp_collector.bodies:
        if path != "/v1/metrics":
            continue
        request = ExportMetricsServiceRequest.FromString(body)
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.sum.data_points:
                        attributes = tuple(
                            sorted((a.key, a.value.string_value) for a in point.attributes)
                        )
                        value = point.as_double or float(point.as_int)
                        points[(metric.name, attributes)] = value
    person = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()
    who = (("co.person", person), ("gen_ai.request.model", "gpt-4o-mini"))
    assert points[("co.spend", who)] == pytest.approx(0.0036), points
    tokens = {k[1]: v for k, v in points.items() if k[0] == "co.tokens"}
    assert tokens[tuple(sorted((*who, ("co.token.type", "input"))))] == 20_000
    assert tokens[tuple(sorted((*who, ("co.token.type", "output"))))] == 1_000


def test_a_budget_that_cannot_be_checked_sends_nothing(
    start_kernel, model_server, co_home, tmp_path
):
    # The deployer's folder for the shared store is missing: nothing can be recorded.
    missing = tmp_path / "no-such-folder" / "spend.db"
    _user_settings(co_home, spend_store=str(missing), budget_day=5)
    model_server.extend([{"text": "never sent"}, {"text": "Unbudgeted."}])
    kernel = start_kernel(_priced(model_server))
    stopped = kernel.execute("hello")
    text = stopped.text()
    assert stopped.status == "error", text
    assert "Spending cannot be recorded: cannot open" in text and str(missing) in text
    assert "your budgets cannot be checked" in text and "Nothing was sent" in text
    assert model_server.requests == []
    # Without a budget the turn goes on, unrecorded.
    assert kernel.execute("%budget day off").status == "ok"
    after = kernel.execute("hello again")
    assert after.status == "ok" and "never sent" in after.markdown(), after.text()
