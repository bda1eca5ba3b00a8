"""MCP approval by annotations, with a real stdio server whose tools
carry readOnlyHint / destructiveHint: per approval mode, which calls ran (the server's
own call log) and which asked (a headless run denies what would ask)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import mcp_env, server_entry

SERVER = Path(__file__).parent / "servers" / "annotated_server.py"
TOOLS = ["peek", "wipe", "odd", "plain"]


def _server(calls: Path, approval: str) -> dict[str, Any]:
    args = [str(SERVER), "hints", "--calls", str(calls)]
    return server_entry(*args, approval=approval)


def _ran(calls: Path) -> list[str]:
    if not calls.exists():
        return []
    return [json.loads(line)["tool"] for line in calls.read_text().splitlines() if line]


@pytest.mark.parametrize(
    ("approval", "runs"),
    [("ask", []), ("trust", TOOLS), ("annotations", ["peek"])],
)
def test_each_approval_mode_runs_exactly_the_tools_it_should(
    start_kernel, model_server, tmp_path: Path, approval: str, runs: list[str]
):
    calls = tmp_path / "calls.jsonl"
    kernel = start_kernel(mcp_env({"hints": _server(calls, approval)}))
    model_server.extend(
        [{"tool_calls": [{"name": f"hints_{t}", "arguments": {"key": "k"}}]} for t in TOOLS]
        + [{"text": "done"}]
    )

    result = kernel.execute("use every tool", mode="headless", timeout=120)

    assert result.status == "ok", result.text()
    assert _ran(calls) == runs

    listing = kernel.execute("%mcp").text()
    if approval == "annotations":
        assert "runs without asking (read-only hint)" in listing
        assert listing.count("asks first (no hint)") == 3


def test_an_open_world_tool_asks_even_from_a_trusted_server(
    start_kernel, model_server, tmp_path: Path
):
    calls = tmp_path / "calls.jsonl"
    entry = _server(calls, "trust")
    entry["args"].append("--open-world")
    kernel = start_kernel(mcp_env({"hints": entry}))
    model_server.extend(
        [
            {"tool_calls": [{"name": "hints_peek", "arguments": {"key": "k"}}]},
            {"tool_calls": [{"name": "hints_send", "arguments": {"to": "x", "text": "hi"}}]},
            {"expect": {"tool_result_contains": "denied"}, "text": "done"},
        ]
    )
    result = kernel.execute("peek, then send", mode="headless", timeout=120)
    assert result.status == "ok", result.text()
    assert model_server.errors == []
    assert _ran(calls) == ["peek"], "the open-world tool asked, and the headless run denied it"


def test_a_tool_that_may_send_asks_when_its_arguments_repeat_private_text(
    start_kernel, model_server, tmp_path: Path, workspace: Path
):
    (workspace / "notes.txt").write_text("Payroll login: Zebra-Quartz-1187\n")
    calls = tmp_path / "calls.jsonl"
    kernel = start_kernel(mcp_env({"hints": _server(calls, "trust")}))
    model_server.extend(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"tool_calls": [{"name": "hints_plain", "arguments": {"key": "ok"}}]},
            {"tool_calls": [{"name": "hints_plain", "arguments": {"key": "zebra-quartz-1187"}}]},
            {"expect": {"tool_result_contains": "was not sent"}, "text": "done"},
        ]
    )
    result = kernel.execute("read and store", mode="headless", timeout=120)
    assert result.status == "ok", result.text()
    assert model_server.errors == []
    ran = [json.loads(line)["arguments"] for line in calls.read_text().splitlines()]
    assert ran == [{"key": "ok"}], "the call carrying the file's secret did not run"


def test_rules_apply_on_top_of_annotations(start_kernel, model_server, tmp_path: Path):
    """A deny rule stops a read-only tool; an allow rule lets one the server did not mark."""
    calls = tmp_path / "calls.jsonl"
    env = mcp_env({"hints": _server(calls, "annotations")})
    env["CO_PERMISSIONS"] = json.dumps(
        {"allow": ['hints_plain({"key":"ok"})'], "deny": ["hints_peek"]}
    )
    kernel = start_kernel(env)
    steps = [("peek", "k"), ("plain", "ok"), ("plain", "other")]
    model_server.extend(
        [{"tool_calls": [{"name": f"hints_{t}", "arguments": {"key": k}}]} for t, k in steps]
        + [{"text": "done"}]
    )
    result = kernel.execute("go", mode="headless", timeout=120)
    assert result.status == "ok", result.text()
    assert _ran(calls) == ["plain"]
    sent = json.dumps(model_server.requests)
    assert "denied by rule `hints_peek` (CO_PERMISSIONS)" in sent


def test_resources_are_listed_and_read_and_offered_only_when_a_server_has_some(
    start_kernel, model_server, tmp_path: Path
):
    """The model lists and reads a server's resources."""
    calls = tmp_path / "calls.jsonl"
    without = _server(tmp_path / "other.jsonl", "trust")
    without["args"].append("--no-resources")
    kernel = start_kernel(mcp_env({"bare": without}))
    model_server.extend(
        [{"expect": {"tools_exclude": ["list_mcp_resources"]}, "text": "nothing to list"}]
    )
    assert kernel.execute("anything?", mode="headless", timeout=120).status == "ok"
    assert model_server.errors == []

    kernel = start_kernel(mcp_env({"hints": _server(calls, "ask")}))
    model_server.extend(
        [
            {
                "expect": {"tools_include": ["list_mcp_resources", "read_mcp_resource"]},
                "tool_calls": [{"name": "list_mcp_resources", "arguments": {}}],
            },
            {
                "expect": {"tool_result_contains": "memo://today"},
                "tool_calls": [
                    {
                        "name": "read_mcp_resource",
                        "arguments": {"server": "hints", "uri": "memo://x"},
                    }
                ],
            },
            {
                "expect": {"tool_result_contains": "lists no resource"},
                "tool_calls": [
                    {
                        "name": "read_mcp_resource",
                        "arguments": {"server": "hints", "uri": "memo://today"},
                    }
                ],
            },
            {"expect": {"tool_result_contains": "MEMO-CONTENT: buy milk"}, "text": "Buy milk."},
        ]
    )
    result = kernel.execute("what is in today's memo?", mode="headless", timeout=120)
    assert result.status == "ok", result.text()
    assert model_server.errors == []


def test_prompts_are_listed_and_one_runs_as_the_cells_turn(
    start_kernel, model_server, tmp_path: Path
):
    """`%mcp prompts` lists them; `%mcp prompt` sends one as the prompt."""
    kernel = start_kernel(mcp_env({"hints": _server(tmp_path / "calls.jsonl", "ask")}))
    listed = kernel.execute("%mcp prompts", timeout=120).markdown()
    assert "| `hints` | `poem` | topic, lines? | Ask for a short poem. |" in listed

    model_server.extend(
        [{"expect": {"last_user_contains": "Write a 2-line poem about tea."}, "text": "Tea, hot."}]
    )
    result = kernel.execute("%mcp prompt hints poem topic=tea lines=2", timeout=120)
    assert result.status == "ok", result.text()
    assert "Tea, hot." in result.markdown() and model_server.errors == []

    missing = kernel.execute("%mcp prompt hints poem")
    assert missing.status == "error" and "could not give the prompt `poem`" in missing.text()
