"""MCP tools through a real kernel: real stdio and HTTP servers, the scripted model.

What each tool received is read from the server's own call log; what the model learnt
from the scripted server's recorded requests; what the person sees from the cell.
"""

from __future__ import annotations

from tests.support.cells import tool_cards
from tests.support.kernel_harness import WidgetClicker
from tests.support.scripted import tool_call, tool_results_sent

from .conftest import HttpToolServer, ToolServers, mcp_env


def test_trusted_stdio_tool_runs_and_its_result_reaches_the_model(
    start_kernel, model_server, tool_servers: ToolServers
):
    greeting = {"TOOL_SERVER_GREETING": "hello-from-env"}
    servers = {"calc": tool_servers.stdio("calc", approval="trust", env=greeting)}
    kernel = start_kernel(mcp_env(servers))
    model_server.extend(
        [
            {
                "expect": {"tools_include": ["calc_add", "calc_shout", "run_shell_command"]},
                "tool_calls": [tool_call("calc_add", a=2, b=40)],
            },
            {"expect": {"tool_result_contains": "42"}, "text": "The sum is 42."},
        ]
    )
    result = kernel.execute("add 2 and 40 with the calculator")
    assert result.status == "ok", result.text()
    assert model_server.errors == []
    assert tool_servers.calls("calc") == [
        {"server": "calc", "tool": "add", "arguments": {"a": 2, "b": 40}, "env": "hello-from-env"}
    ]
    assert "42" in tool_results_sent(model_server)[-1]
    [card] = tool_cards(result)
    assert (card["tool"], card["status"], card["decision"]) == ("calc_add", "ok", None)
    assert "The sum is 42." in result.markdown()


def test_http_server_tools_use_their_prefix_and_headers_stay_secret(
    start_kernel, model_server, http_tool_server: HttpToolServer, tool_servers: ToolServers
):
    token = "Bearer sk-test-0123456789abcdefXYZ"
    servers = {
        "web": {
            "url": http_tool_server.url,
            "headers": {"Authorization": token},
            "prefix": "remote",
            "approval": "trust",
        }
    }
    kernel = start_kernel(mcp_env(servers))
    model_server.extend(
        [
            {
                "expect": {"tools_include": ["remote_shout"], "tools_exclude": ["web_shout"]},
                "tool_calls": [tool_call("remote_shout", text="quiet please")],
            },
            {"expect": {"tool_result_contains": "QUIET PLEASE!"}, "text": "Done."},
        ]
    )
    result = kernel.execute("shout it")
    assert result.status == "ok", result.text()
    assert model_server.errors == []
    assert [c["arguments"] for c in tool_servers.calls("web")] == [{"text": "quiet please"}]
    listing = kernel.execute("%mcp")
    text = listing.text()
    assert "`remote_shout`" in text and "connected, 3 tools" in text
    assert "| `web` | http (headers: Authorization): http://127.0.0.1:" in text
    status = kernel.execute("%status").text()
    assert "| mcp | web | connected, 3 tools (http, trust) |" in status
    for shown in (text, status, result.text()):
        assert "sk-test-0123456789" not in shown


def test_ask_server_waits_for_the_card_approved_then_denied(
    start_kernel, model_server, tool_servers: ToolServers
):
    kernel = start_kernel(mcp_env({"calc": tool_servers.stdio("calc")}))
    model_server.extend(
        [
            {"tool_calls": [tool_call("calc_shout", text="approved")]},
            {"expect": {"tool_result_contains": "APPROVED!"}, "text": "It ran."},
            {"tool_calls": [tool_call("calc_shout", text="denied")]},
            {
                "expect": {"tool_result_contains": "The user denied this action"},
                "text": "I will not.",
            },
        ]
    )
    approved = kernel.execute("shout approved", on_message=WidgetClicker(["Approve"]))
    assert approved.status == "ok", approved.text()
    [card] = tool_cards(approved)
    assert (card["tool"], card["status"], card["decision"]) == ("calc_shout", "ok", "approved")
    denied = kernel.execute("shout denied", on_message=WidgetClicker(["Deny"]))
    assert denied.status == "ok", denied.text()
    [card] = tool_cards(denied)
    assert (card["status"], card["decision"]) == ("denied", "denied")
    assert model_server.errors == []
    # Only the approved call reached the server.
    assert [c["arguments"] for c in tool_servers.calls("calc")] == [{"text": "approved"}]


def test_ask_server_under_the_headless_policy(start_kernel, model_server, tool_servers):
    kernel = start_kernel(mcp_env({"calc": tool_servers.stdio("calc")}))
    model_server.extend(
        [
            {"tool_calls": [tool_call("calc_add", a=1, b=1)]},
            {"expect": {"tool_result_contains": "denied"}, "text": "Not allowed here."},
        ]
    )
    result = kernel.execute("add one and one", mode="headless")
    assert result.status == "ok", result.text()
    assert tool_servers.calls("calc") == []
    assert model_server.errors == []

    approving = start_kernel(
        mcp_env({"calc": tool_servers.stdio("calc")}, CO_APPROVAL_MODE="approve")
    )
    model_server.extend(
        [
            {"tool_calls": [tool_call("calc_add", a=1, b=1)]},
            {"expect": {"tool_result_contains": "2"}, "text": "Two."},
        ]
    )
    result = approving.execute("add one and one", mode="headless")
    assert result.status == "ok", result.text()
    assert [c["arguments"] for c in tool_servers.calls("calc")] == [{"a": 1, "b": 1}]
    assert model_server.errors == []


def test_servers_that_cannot_start_are_reported_once_and_the_rest_work(
    start_kernel, model_server, tool_servers: ToolServers
):
    servers = {
        "calc": tool_servers.stdio("calc", approval="trust"),
        "missing": {"command": "co-test-no-such-command"},
        "sleeper": {"command": "sleep", "args": ["60"], "start_timeout": 1},
        "quitter": {
            "command": tool_servers.stdio("x")["command"],
            "args": [
                "-c",
                "import sys; print('cannot find my config', file=sys.stderr); sys.exit(3)",
            ],
        },
    }
    kernel = start_kernel(mcp_env(servers))
    model_server.extend(
        [
            {
                "expect": {
                    "tools_include": ["calc_add"],
                    "tools_exclude": ["missing_add", "quitter_add"],
                },
                "tool_calls": [tool_call("calc_add", a=3, b=4)],
            },
            {"expect": {"tool_result_contains": "7"}, "text": "Seven."},
            {"text": "Still here."},
            {"text": "And now."},
        ]
    )
    first = kernel.execute("add 3 and 4")
    assert first.status == "ok", first.text()
    text = first.text()
    assert (
        "MCP server `missing` could not start: the command 'co-test-no-such-command' was not found"
        in text
    )
    assert "MCP server `quitter` could not start: the process exited" in text
    assert "cannot find my config" in text
    assert "MCP server `sleeper` could not start: it did not answer within 1 s" in text
    assert "Seven." in text
    assert "Traceback" not in text
    second = kernel.execute("anything else?")
    assert second.status == "ok"
    assert "MCP server" not in second.text()
    assert model_server.errors == []
    status = kernel.execute("%status").text()
    assert "| mcp | calc | connected, 3 tools (stdio, trust) |" in status
    assert (
        "| mcp | missing | failed: the command 'co-test-no-such-command' was not found (stdio, ask) |"
        in status
    )
    listing = kernel.execute("%mcp").text()
    assert "failed: the process exited" in listing
    # A restart that fails again says so in its own cell, not again in the next turn.
    restart = kernel.execute("%mcp restart missing")
    assert restart.status == "ok"
    assert "❌ MCP server `missing` did not start: the command 'co-test-no-such-command'" in (
        restart.text()
    )
    later = kernel.execute("and now?")
    assert later.status == "ok" and "MCP server" not in later.text()


def test_a_server_killed_between_turns_is_reported_once_and_restart_brings_it_back(
    start_kernel, model_server, tool_servers: ToolServers
):
    import os
    import signal

    kernel = start_kernel(mcp_env({"calc": tool_servers.stdio("calc", approval="trust")}))
    model_server.extend(
        [
            {"tool_calls": [tool_call("calc_add", a=1, b=2)]},
            {"expect": {"tool_result_contains": "3"}, "text": "Three."},
            {"expect": {"tools_exclude": ["calc_add"]}, "text": "No calculator now."},
            {"expect": {"tools_exclude": ["calc_add"]}, "text": "Still none."},
            {
                "expect": {"tools_include": ["calc_add"]},
                "tool_calls": [tool_call("calc_add", a=5, b=5)],
            },
            {"expect": {"tool_result_contains": "10"}, "text": "Ten."},
        ]
    )
    assert kernel.execute("1 + 2").status == "ok"
    first_pid = tool_servers.pid("calc")
    os.kill(first_pid, signal.SIGKILL)
    after_kill = kernel.execute("and now?")
    assert after_kill.status == "ok", after_kill.text()
    assert "MCP server `calc` stopped" in after_kill.text()
    assert "%mcp restart calc" in after_kill.text()
    assert "No calculator now." in after_kill.text()
    again = kernel.execute("still?")
    assert "MCP server" not in again.text() and "Still none." in again.text()
    assert "| `calc` |" in kernel.execute("%mcp").text()
    restarted = kernel.execute("%mcp restart calc")
    assert restarted.status == "ok"
    assert "MCP server `calc` is connected again (3 tools)" in restarted.text()
    assert tool_servers.pid("calc") != first_pid
    back = kernel.execute("5 + 5")
    assert back.status == "ok" and "Ten." in back.text()
    assert [c["arguments"] for c in tool_servers.calls("calc")] == [
        {"a": 1, "b": 2},
        {"a": 5, "b": 5},
    ]
    assert model_server.errors == []


def test_a_server_dying_during_a_call_ends_that_call_not_the_turn(
    start_kernel, model_server, tool_servers: ToolServers
):
    kernel = start_kernel(mcp_env({"calc": tool_servers.stdio("calc", approval="trust")}))
    model_server.extend(
        [
            {"tool_calls": [tool_call("calc_crash")]},
            {
                "expect": {
                    "tool_result_contains": "stopped during the call",
                    "tools_exclude": ["calc_add"],
                },
                "text": "The calculator went away.",
            },
        ]
    )
    result = kernel.execute("crash it")
    assert result.status == "ok", result.text()
    text = result.text()
    assert text.count("MCP server `calc` stopped") == 1
    assert "The calculator went away." in text
    [card] = tool_cards(result)
    assert card["status"] == "error"
    assert model_server.errors == []
    assert [c["tool"] for c in tool_servers.calls("calc")] == ["crash"]


def test_kernel_shutdown_stops_the_stdio_servers(start_kernel, tool_servers: ToolServers):
    import os
    import time

    kernel = start_kernel(mcp_env({"calc": tool_servers.stdio("calc", approval="trust")}))
    assert "connected, 3 tools" in kernel.execute("%mcp").text()
    pid = tool_servers.pid("calc")
    os.kill(pid, 0)  # running
    kernel.shutdown()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the MCP server (pid {pid}) outlived its kernel")
