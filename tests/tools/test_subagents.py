"""Subagents through a real kernel: the one scripted server answers Co's requests and the
subagent's, in order. The subagent's requests carry its own instructions and task, never
Co's conversation; its progress is one collapsible output; its shell call asks the
person in the same cell; it spends the turn's budget; depth and interrupts stop it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from co_kernel.frontend._subagent import MIME_SUBAGENT
from tests.support.cells import tool_cards
from tests.support.kernel_harness import WIDGET_VIEW, CellResult, WidgetClicker
from tests.support.scripted import call_step

RESEARCHER = """---
name: researcher
description: Looks things up in the workspace with shell commands.
tools: [run_shell_command]
---
You are a meticulous researcher. Report facts only.
"""

PLANNER = """---
name: planner
description: Breaks work down and may delegate parts of it.
---
You plan.
"""


def delegate(task: str, subagent: str = "researcher") -> dict[str, Any]:
    return call_step("delegate_task", description=task, subagent=subagent)


def blocks(result: CellResult) -> list[dict[str, Any]]:
    return [d for d in result.final_displays().values() if MIME_SUBAGENT in d]


@pytest.fixture
def agents(workspace: Path) -> Path:
    folder = workspace / ".co" / "agents"
    folder.mkdir(parents=True)
    (folder / "researcher.md").write_text(RESEARCHER)
    (folder / "planner.md").write_text(PLANNER)
    (folder / "broken.md").write_text("---\nname: broken\n---\nNo description.\n")
    return folder


def test_subagent_runs_isolated_streams_progress_and_asks_for_its_shell_call(
    kernel, model_server, workspace, agents
):
    model_server.extend(
        [
            {
                "expect": {
                    "system_contains": "- `researcher`: Looks things up in the workspace",
                    "tools_include": ["delegate_task"],
                },
                "text": "Delegating.",
                **delegate("Count the files in data/ and report the number."),
            },
            {
                "expect": {
                    "system_contains": "You are a meticulous researcher. Report facts only.",
                    "last_user_contains": "Count the files in data/",
                    "tools_include": ["run_shell_command"],
                    "tools_exclude": ["delegate_task", "write_todos", "read_file"],
                },
                "text": "Let me look.",
                **call_step("run_shell_command", cmd="touch sub-marker && echo made"),
            },
            {"expect": {"tool_result_contains": "made"}, "text": "There are 2 files."},
            {
                "expect": {"tool_result_contains": "There are 2 files."},
                "text": "The researcher counted 2 files.",
            },
        ]
    )
    clicker = WidgetClicker(["Approve"])
    result = kernel.execute("How many files are in data? Ask the researcher.", on_message=clicker)
    assert result.status == "ok" and model_server.errors == []
    assert (workspace / "sub-marker").exists()

    # Isolated history: the subagent was sent its instructions and task, not Co's turn.
    sub_request = json.dumps(model_server.requests[1]["messages"])
    assert "Ask the researcher" not in sub_request and "Delegating." not in sub_request
    assert "Ask the researcher" in json.dumps(model_server.requests[3]["messages"])

    # The approval card came from the subagent's call, through the same widget path.
    assert clicker.cards == 1
    [widget] = [d for d in result.final_displays().values() if WIDGET_VIEW in d]
    assert "Co's subagent researcher wants to run run_shell_command" in widget["text/plain"]
    delegate_card, shell_card = tool_cards(result)
    assert delegate_card["tool"] == "delegate_task" and delegate_card["status"] == "ok"
    assert delegate_card["result"] == "There are 2 files."
    assert (shell_card["tool"], shell_card["agent"]) == ("run_shell_command", "researcher")
    assert (shell_card["status"], shell_card["decision"]) == ("ok", "approved")

    # The progress block: one output, updated in place, collapsed once done.
    [block] = blocks(result)
    progress = block[MIME_SUBAGENT]
    assert (progress["name"], progress["status"], progress["depth"]) == ("researcher", "done", 1)
    assert [e["kind"] for e in progress["entries"]] == ["text", "tool", "text"]
    assert progress["entries"][0]["text"] == "Let me look."
    assert progress["entries"][1]["text"].startswith("✅ run_shell_command(cmd='touch sub-marker")
    assert '<details class="co-subagent" data-status="done">' in block["text/html"]
    assert block["text/plain"].startswith("🤖 researcher · done · 2 requests")
    block_updates = [
        m for m in result.of_type("update_display_data") if MIME_SUBAGENT in m["content"]["data"]
    ]
    assert len(block_updates) >= 3
    assert result.markdown().endswith("The researcher counted 2 files.")
    # The broken definition was reported, the others still work.
    assert f"{agents / 'broken.md'}:1: the front-matter has no `description:`" in result.text()


def test_unknown_subagent_gets_a_retry_listing_the_available_ones(kernel, model_server, agents):
    model_server.extend(
        [
            delegate("Do it", subagent="nobody"),
            {
                "expect": {
                    "tool_result_contains": "There is no subagent named 'nobody'. "
                    "Available: `planner`, `researcher`."
                },
                "text": "Sorry.",
            },
        ]
    )
    result = kernel.execute("Delegate to nobody")
    assert result.status == "ok" and model_server.errors == []
    assert len(model_server.requests) == 2  # no subagent ran
    assert blocks(result) == []


def test_depth_limit_stops_recursion(kernel, model_server, agents):
    model_server.extend(
        [
            delegate("Plan the outer part", subagent="planner"),
            {
                # Depth 1 of 2: it may still delegate.
                "expect": {"tools_include": ["delegate_task", "write_todos"]},
                **delegate("Plan the inner part", subagent="planner"),
            },
            {
                # Depth 2 of 2: delegate_task is not offered, nor listed.
                "expect": {
                    "last_user_contains": "Plan the inner part",
                    "tools_include": ["write_todos"],
                    "tools_exclude": ["delegate_task"],
                },
                "text": "inner plan done",
            },
            {"expect": {"tool_result_contains": "inner plan done"}, "text": "outer plan done"},
            {"expect": {"tool_result_contains": "outer plan done"}, "text": "All planned."},
        ]
    )
    result = kernel.execute("Plan everything")
    assert result.status == "ok" and model_server.errors == []
    assert "## Subagents" not in json.dumps(model_server.requests[2]["messages"][0])
    assert [(b[MIME_SUBAGENT]["depth"], b[MIME_SUBAGENT]["status"]) for b in blocks(result)] == [
        (1, "done"),
        (2, "done"),
    ]


def test_no_delegation_when_the_depth_limit_is_zero(start_kernel, model_server, agents):
    kernel = start_kernel({"CO_SUBAGENT_MAX_DEPTH": "0"})
    model_server.extend([{"expect": {"tools_exclude": ["delegate_task"]}, "text": "Alone."}])
    assert kernel.execute("hi").status == "ok"
    assert model_server.errors == []
    assert "## Subagents" not in json.dumps(model_server.requests[0]["messages"][0])


def test_the_subagent_spends_the_turns_budget(start_kernel, model_server, agents):
    kernel = start_kernel({"CO_MAX_REQUEST_LIMIT": "3"})
    model_server.extend(
        [
            delegate("List the workspace"),
            call_step("run_shell_command", cmd="ls"),  # a safe command: runs without asking
            call_step("run_shell_command", cmd="ls -a"),
            {"text": "never asked for"},
        ]
    )
    result = kernel.execute("What is here?")
    # Co's request and the subagent's two used the 3 requests of the turn.
    assert len(model_server.requests) == 3
    assert result.status == "error"
    budget = "Stopped: this turn used its budget of 3 model requests"
    assert budget in result.text()
    card, *shell = tool_cards(result)
    assert card["result"].startswith(f"The subagent `researcher` stopped early: {budget}")
    # Its side-effectful calls show in the cell like Co's own, decided by the safe prefix.
    assert [(c["agent"], c["decision"]) for c in shell] == [("researcher", "safe-prefix")] * 2
    [block] = blocks(result)
    assert block[MIME_SUBAGENT]["status"] == "error"
    assert block[MIME_SUBAGENT]["entries"][-1]["text"].startswith(
        "✅ run_shell_command(cmd='ls -a')"
    )


def test_interrupt_during_a_subagent_stops_it_and_the_turn(kernel, model_server, agents):
    model_server.extend(
        [
            delegate("Write a long report"),
            {"text": "word " * 400, "tokens_per_second": 20},
        ]
    )

    def subagent_is_talking(result_so_far: list[dict[str, Any]]) -> bool:
        return any(
            MIME_SUBAGENT in m["content"].get("data", {})
            and "word word" in m["content"]["data"]["text/plain"]
            for m in result_so_far
            if m["msg_type"] in ("display_data", "update_display_data")
        )

    seen: list[dict[str, Any]] = []
    result = kernel.execute(
        "Report, please",
        on_message=lambda _k, m: seen.append(m),
        interrupt_when=lambda: subagent_is_talking(seen),
    )
    assert result.interrupt_sent
    assert result.status == "error" and result.reply["content"]["ename"] == "KeyboardInterrupt"
    [block] = blocks(result)
    assert block[MIME_SUBAGENT]["status"] == "interrupted"
    [card] = tool_cards(result)
    assert (card["tool"], card["status"]) == ("delegate_task", "interrupted")
    # The conversation goes on: the next cell's request holds the interrupted call's return.
    model_server.reset([{"expect": {"messages_contain": ["Interrupted by user."]}, "text": "OK."}])
    after = kernel.execute("Never mind")
    assert after.status == "ok" and model_server.errors == []
    assert len(model_server.requests) == 1


def test_settings_subagent_with_its_own_model_in_the_console(start_kernel, model_server, workspace):
    (workspace / ".co").mkdir()
    (workspace / ".co" / "settings.json").write_text(
        json.dumps(
            {
                "subagents": [
                    {
                        "name": "writer",
                        "description": "Writes prose.",
                        "instructions": "Write plainly.",
                        "model": "compat:writer-model",
                        "tools": [],
                    }
                ]
            }
        )
    )
    kernel = start_kernel()
    model_server.extend(
        [
            delegate("Write one line about cats", subagent="writer"),
            {
                "expect": {"system_contains": "Write plainly.", "tools_exclude": ["write_todos"]},
                "text": "Cats nap.\nThey purr.",
            },
            {"expect": {"tool_result_contains": "Cats nap."}, "text": "Done."},
        ]
    )
    result = kernel.execute("Write about cats", mode="console")
    assert result.status == "ok" and model_server.errors == []
    assert model_server.requests[1]["model"] == "writer-model"
    assert model_server.requests[0]["model"] == "scripted"
    assert "tools" not in model_server.requests[1] or not model_server.requests[1]["tools"]
    out = result.stdout
    assert "  │ 🤖 writer (compat:writer-model): Write one line about cats\n" in out
    assert "  │ Cats nap.\n  │ They purr.\n" in out
    assert "  │ done · 1 request(s)\n" in out
    assert out.rstrip().endswith("Done.")


def test_headless_subagent_call_follows_the_approval_policy(start_kernel, model_server, agents):
    kernel = start_kernel({"CO_APPROVAL_MODE": "deny"})
    model_server.extend(
        [
            delegate("Delete the scratch folder"),
            call_step("run_shell_command", cmd="rm -rf scratch"),
            {"expect": {"tool_result_contains": "denied"}, "text": "I was not allowed."},
            {"expect": {"tool_result_contains": "I was not allowed."}, "text": "Nothing deleted."},
        ]
    )
    result = kernel.execute("Clean up", mode="headless")
    assert result.status == "ok" and model_server.errors == []
    assert not result.of_type("update_display_data")
    text = result.text()
    assert (
        "Approval needed for `researcher › run_shell_command(cmd='rm -rf scratch')`: **denied**"
        in text
    )
    [block] = blocks(result)
    assert block[MIME_SUBAGENT]["status"] == "done"
    assert "🚫 run_shell_command" in block["text/plain"]


def test_console_asks_for_the_subagents_call_on_stdin(kernel, model_server, workspace, agents):
    model_server.extend(
        [
            delegate("Create the marker"),
            {"text": "Creating it.", **call_step("run_shell_command", cmd="touch console-marker")},
            {"text": "Created."},
            {"expect": {"tool_result_contains": "Created."}, "text": "It is there."},
        ]
    )
    prompts: list[str] = []

    def answer(_kernel: Any, msg: dict[str, Any]) -> str:
        prompts.append(msg["content"]["prompt"])
        return "y"

    result = kernel.execute("Make a marker", mode="console", on_input=answer)
    assert result.status == "ok" and model_server.errors == []
    assert (workspace / "console-marker").exists()
    assert len(prompts) == 1
    out = result.stdout
    assert "Co's subagent researcher wants to run run_shell_command:\n" in out
    assert "  │ 🤖 researcher (compat:scripted): Create the marker\n  │ Creating it.\n" in out
    assert "  │ Created.\n  │ done · 2 request(s)\n" in out
    assert out.rstrip().endswith("It is there.")


def test_the_subagents_requests_count_against_the_hourly_limit(start_kernel, model_server, agents):
    kernel = start_kernel({"CO_MAX_REQUESTS_PER_HOUR": "2"})
    model_server.extend(
        [
            delegate("List the workspace"),
            call_step("run_shell_command", cmd="ls"),
            {"text": "never sent"},
        ]
    )
    result = kernel.execute("What is here?")
    assert len(model_server.requests) == 2  # Co's and the subagent's first; the third refused
    limit = "Stopped: this session has made 2 model requests in the last hour"
    card = tool_cards(result)[0]
    assert card["tool"] == "delegate_task"
    assert card["result"].startswith(f"The subagent `researcher` stopped early: {limit}")
    assert limit in result.text()


def test_audit_rows_of_a_subagents_calls_name_the_subagent(
    start_kernel, model_server, agents, co_home: Path
):
    import sqlite3

    kernel = start_kernel()
    model_server.extend(
        [
            delegate("Count the files"),
            call_step("run_shell_command", cmd="echo from-researcher"),
            {"text": "Counted."},
            call_step("run_shell_command", cmd="echo from-co"),
            {"text": "Done."},
        ]
    )
    result = kernel.execute("Count", mode="headless", timeout=120)
    assert result.status == "ok" and model_server.errors == [], result.text()
    kernel.shutdown()  # the audit rows are written; the database is closed

    with sqlite3.connect(co_home / "data" / "telemetry.db") as db:
        rows = db.execute(
            "SELECT target, agent FROM agent_actions"
            " WHERE tool = 'run_shell_command' AND action = 'call' ORDER BY id"
        ).fetchall()
    assert len(rows) == 2, rows
    by_target = {target: agent for target, agent in rows}
    assert by_target["echo from-researcher"] == "researcher"
    assert by_target["echo from-co"] is None
