"""A subagent gets the MCP tools its `tools:` list names, and only those."""

from __future__ import annotations

from pathlib import Path

from ..support.scripted import call_step, tools_offered
from .conftest import ToolServers, mcp_env

CALCULATOR = """---
name: calculator
description: Adds numbers with the calculator server.
tools: [calc_add]
---
You add numbers.
"""


def test_a_subagent_calls_the_mcp_tool_it_names(
    start_kernel, model_server, tool_servers: ToolServers, workspace: Path
):
    folder = workspace / ".co" / "agents"
    folder.mkdir(parents=True)
    (folder / "calculator.md").write_text(CALCULATOR)
    kernel = start_kernel(mcp_env({"calc": tool_servers.stdio("calc", approval="trust")}))
    model_server.extend(
        [
            call_step("delegate_task", description="Add 2 and 40", subagent="calculator"),
            call_step("calc_add", a=2, b=40),
            {"expect": {"tool_result_contains": "42"}, "text": "It is 42."},
            {"text": "The calculator says 42."},
        ]
    )
    result = kernel.execute("add 2 and 40 via the calculator", timeout=120)
    assert result.status == "ok" and model_server.errors == [], result.text()
    assert [c["tool"] for c in tool_servers.calls("calc")] == ["add"]
    assert sorted(tools_offered(model_server.requests[1])) == ["calc_add"]
