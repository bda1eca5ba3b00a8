"""What a turn costs, shown beside its tokens: the footer, `%usage`, the status the page
shows, `%status`, `co-kernel status` and the turn's span. The scripted server answers
under a model name genai-prices prices (``openai:gpt-4o``, the OpenAI route pointed at it),
and the test prices the same tokens with genai-prices itself; a model without a price says
"price unknown", the person's own price prices it, and a project file cannot set one."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price

from tests.support.lab_server import start_server
from tests.support.scripted import call_step

from .span_reader import co_kernel_cli as _cli
from .span_reader import telemetry_db, turns_done, wait_for_spans

USAGE = {"prompt_tokens": 123_456, "completion_tokens": 7_890}
PRICED = {"CO_MODEL": "openai:gpt-4o", "OPENAI_API_KEY": "sk-test-not-a-real-key"}
MINE = {"input_per_mtok": 3, "output_per_mtok": 15}
"""The person's price for the scripted model, dollars per million tokens."""


def dollars(value: Decimal) -> str:
    """How Co writes a cost below a dollar: four decimals."""
    return f"${value.quantize(Decimal('0.0001'), rounding=ROUND_HALF_UP)}"


def gpt_4o(input_tokens: int, output_tokens: int) -> Decimal:
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return calc_price(usage, "gpt-4o", provider_id="openai").total_price


def own_price(input_tokens: int, output_tokens: int) -> Decimal:
    return (
        Decimal(input_tokens) * MINE["input_per_mtok"]
        + Decimal(output_tokens) * MINE["output_per_mtok"]
    ) / 1_000_000


def footer(result: Any) -> str:
    [line] = [
        data["text/plain"]
        for data in result.final_displays().values()
        if "co-turn-footer" in data.get("text/html", "")
    ]
    return line


def shown(markdown: str) -> str:
    """Markdown as read: a dollar sign escaped so that two do not make a formula."""
    return markdown.replace("\\$", "$")


def lab_status(result: Any) -> dict[str, Any]:
    """What the status item reads: the ``co`` key of the execute_reply's metadata."""
    return result.reply["metadata"]["co"]


def turn_spans(co_home: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(co_home / "data" / "telemetry.db")
    try:
        rows = db.execute("SELECT attributes FROM spans WHERE kind = 'turn' ORDER BY id").fetchall()
    finally:
        db.close()
    return [json.loads(r[0]) for r in rows]


def test_a_priced_model_shows_what_genai_prices_charges_everywhere(
    start_kernel, model_server, co_home
) -> None:
    model_server.extend([{"text": "Forty-two.", "usage": USAGE}] * 2)
    kernel = start_kernel(PRICED)
    first = kernel.execute("Answer?", mode="notebook")
    assert first.status == "ok" and model_server.errors == []
    one = gpt_4o(123_456, 7_890)
    assert f"123,456 in / 7,890 out tokens · {dollars(one)} · 1 request" in footer(first)
    assert lab_status(first)["cost"] == dollars(one)

    second = kernel.execute("Again?", mode="notebook")
    assert lab_status(second)["cost"] == dollars(2 * one)
    usage = kernel.execute("%usage").markdown()
    assert f"| 1 | Answer? | openai:gpt-4o | 1 | 123,456 | 7,890 | {dollars(one)} |" in usage
    assert f"| 2 | Again? | openai:gpt-4o | 1 | 123,456 | 7,890 | {dollars(one)} |" in usage
    assert f"| **total** |  | 2 | 246,912 | 15,780 | {dollars(2 * one)} |" in usage
    assert f"output tokens, {dollars(2 * one)}." in usage

    status = shown(kernel.execute("%status").markdown())
    assert f"246,912 in / 15,780 out tokens, {dollars(2 * one)}" in status
    assert "$2.50 in / $10.00 out per million tokens (genai-prices)" in status

    kernel.shutdown()  # the spans are written by the time the kernel has stopped
    spans = turn_spans(co_home)
    assert [Decimal(repr(s["co.cost"])) for s in spans] == [one, one]
    assert [s["co.cost.unknown"] for s in spans] == [False, False]


def test_a_model_without_a_price_says_so_rather_than_nothing(kernel, model_server) -> None:
    model_server.extend([{"text": "Forty-two.", "usage": USAGE}])
    result = kernel.execute("Answer?", mode="notebook")
    assert "7,890 out tokens · price unknown · 1 request" in footer(result)
    assert lab_status(result)["cost"] == "price unknown"
    usage = kernel.execute("%usage").markdown()
    assert "| 1 | Answer? | compat:scripted | 1 | 123,456 | 7,890 | price unknown |" in usage
    status = kernel.execute("%status").markdown()
    assert "price unknown: genai-prices has no price for it" in status
    assert "$0" not in footer(result) + usage


def test_the_persons_own_price_prices_a_model_genai_prices_does_not_know(
    start_kernel, model_server, co_home
) -> None:
    settings = co_home / "config" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"model_prices": {"compat:scripted": MINE}}))
    model_server.extend([{"text": "Forty-two.", "usage": USAGE}])
    kernel = start_kernel()
    result = kernel.execute("Answer?", mode="notebook")
    cost = own_price(123_456, 7_890)
    assert f"7,890 out tokens · {dollars(cost)} · 1 request" in footer(result)
    assert lab_status(result)["cost"] == dollars(cost)
    status = shown(kernel.execute("%status").markdown())
    assert "$3.00 in / $15.00 out per million tokens (your model_prices)" in status


def test_a_project_file_cannot_set_a_price(start_kernel, model_server, workspace) -> None:
    project = workspace / ".co" / "settings.json"
    project.parent.mkdir(parents=True)
    free = {"input_per_mtok": 0, "output_per_mtok": 0}
    project.write_text(
        json.dumps({"model_prices": {"openai:gpt-4o": free, "compat:scripted": MINE}})
    )
    model_server.extend([{"text": "Forty-two.", "usage": USAGE}] * 2)
    kernel = start_kernel(trusted=True)  # trusted, and still not the folder's to decide
    result = kernel.execute("Answer?", mode="notebook")
    assert "model_prices: a project file cannot set this (your spending limits); ignored" in (
        result.text()
    )
    assert "7,890 out tokens · price unknown · 1 request" in footer(result)
    priced = start_kernel(PRICED, trusted=True).execute("Answer?", mode="notebook")
    assert dollars(gpt_4o(123_456, 7_890)) in footer(priced)


SUBAGENT = """---
name: pricey
description: Answers with a priced model.
model: openai:gpt-4o
tools: []
---
You answer briefly.
"""


def test_usage_puts_subagents_and_compaction_summaries_on_their_own_lines(
    start_kernel, model_server, workspace
) -> None:
    agents = workspace / ".co" / "agents"
    agents.mkdir(parents=True)
    (agents / "pricey.md").write_text(SUBAGENT)
    model_server.extend(
        [
            {**call_step("delegate_task", description="Sum it", subagent="pricey"), "usage": USAGE},
            {"text": "It is 3.", "usage": {"prompt_tokens": 1_000, "completion_tokens": 100}},
            {
                "text": "The subagent says 3.",
                "usage": {"prompt_tokens": 2_000, "completion_tokens": 20},
            },
            {"text": "Second.", "usage": {"prompt_tokens": 10, "completion_tokens": 1}},
            {"text": "Third.", "usage": {"prompt_tokens": 10, "completion_tokens": 1}},
            {"text": "- a summary", "usage": {"prompt_tokens": 500, "completion_tokens": 50}},
        ]
    )
    kernel = start_kernel(
        {"OPENAI_API_KEY": "sk-test-not-a-real-key", "CO_COMPACT_KEEP_TURNS": "1"}
    )
    first = kernel.execute("What is 1 + 2?", mode="notebook")
    assert first.status == "ok" and model_server.errors == [], first.text()
    sub = gpt_4o(1_000, 100)
    # The turn's own requests ran the unpriced scripted model; its subagent a priced one.
    assert f"{dollars(sub)} + price unknown" in footer(first)
    for prompt in ("Second?", "Third?"):
        assert kernel.execute(prompt).status == "ok"
    assert kernel.execute("%compact").status == "ok", model_server.errors
    usage = kernel.execute("%usage").markdown()
    turn = "| 1 | What is 1 + 2? | compat:scripted | 3 | 126,456 | 8,010 |"
    assert f"{turn} {dollars(sub)} + price unknown |" in usage
    assert f"| ↳ *subagent* `pricey` | openai:gpt-4o | 1 | 1,000 | 100 | {dollars(sub)} |" in usage
    assert "| *compaction summaries* |  | 1 | 500 | 50 | price unknown |" in usage
    assert f"| **total** |  | 6 | 126,976 | 8,062 | {dollars(sub)} + price unknown |" in usage


def test_co_kernel_status_names_the_models_price(tmp_path: Path, model_server) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CO_", "OPENAI"))}
    env.update({"CO_HOME": str(tmp_path), "CO_BASE_URL": model_server.base_url})

    def price_row(model: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "co_kernel.cli", "status", "--project", str(tmp_path)],
            capture_output=True,
            text=True,
            env={**env, "CO_MODEL": model, "OPENAI_API_KEY": "sk-test-not-a-real-key"},
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        [row] = [line for line in done.stdout.splitlines() if line.startswith("model.price")]
        return row

    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    found = calc_price(usage, "gpt-4o", provider_id="openai")
    assert f"${found.input_price:.2f} in / ${found.output_price:.2f} out per million tokens" in (
        price_row("openai:gpt-4o")
    )
    assert "price unknown" in price_row("compat:gpt-4o"), "any server may call a model gpt-4o"
    assert "price unknown" in price_row("ollama:llama3.2")


@pytest.mark.parametrize("value", ["-1", "lots"])
def test_a_bad_price_is_reported_and_the_kernel_answers(
    start_kernel, model_server, value: str
) -> None:
    prices = json.dumps({"compat:scripted": {"input_per_mtok": value, "output_per_mtok": 1}})
    model_server.extend([{"text": "Still here.", "usage": USAGE}])
    result = start_kernel({"CO_MODEL_PRICES": prices}).execute("Answer?", mode="notebook")
    assert result.status == "ok"
    assert "environment (CO_MODEL_PRICES): model_prices: Input should be" in result.text()
    assert "price unknown" in footer(result)


@pytest.mark.slow
def test_traces_tail_and_the_activity_panels_sessions_show_each_turns_cost(
    start_kernel, model_server, co_home: Path, tmp_path: Path
) -> None:
    model_server.extend([{"text": "Forty-two.", "usage": USAGE}] * 3)
    priced = start_kernel(PRICED)
    priced.execute("Answer?")
    priced.execute("Again?")
    unpriced = start_kernel()
    unpriced.execute("Answer?")
    spans = wait_for_spans(telemetry_db(co_home), turns_done(3))
    priced_id = next(s.session_id for s in spans if s.model == "openai:gpt-4o")
    one = gpt_4o(123_456, 7_890)

    out = tmp_path / "traces.html"
    done = _cli("traces", "--output", str(out), co_home=co_home)
    assert done.returncode == 0, done.stdout + done.stderr
    page = out.read_text()
    assert page.count(f"123,456 → 7,890 tokens · {dollars(one)} · 1 request(s)") == 2
    assert page.count("123,456 → 7,890 tokens · price unknown · 1 request(s)") == 1

    tail = _cli("tail", "--once", "--kind", "turn", co_home=co_home)
    rows = [line for line in tail.stdout.splitlines() if line.strip()]
    assert sum(f"7,890 tok {dollars(one)}" in r for r in rows) == 2
    assert sum("7,890 tok price unknown" in r for r in rows) == 1

    root = tmp_path / "root"
    root.mkdir()
    server = start_server(root, env={"CO_HOME": str(co_home)}, app="server", base=tmp_path / "j")
    try:
        status, data = server.get_json("co-kernel/activity")
    finally:
        server.stop()
    assert status == 200, data
    costs = {s["session_id"]: s["cost"] for s in data["sessions"]}
    assert costs.pop(priced_id) == dollars(2 * one)
    assert list(costs.values()) == ["price unknown"]
