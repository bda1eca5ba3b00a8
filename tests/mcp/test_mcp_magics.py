"""`%mcp`, `%tools` and Tab completion with real MCP servers in a real kernel."""

from __future__ import annotations

import json

from tests.magics.test_complete import complete

from .conftest import ToolServers, mcp_env


def test_mcp_lists_servers_and_tools_restart_checks_names_and_tools_shows_approval(
    start_kernel, tool_servers: ToolServers
):
    servers = {
        "calc": tool_servers.stdio("calc", prefix="math", approval="trust"),
        "notes": tool_servers.stdio("notes", env={"API_TOKEN": "tok-secret-value-123"}),
        # Same prefix as calc: its tools clash, calc (listed first) keeps them.
        "twin": tool_servers.stdio("twin", prefix="math", approval="trust"),
    }
    kernel = start_kernel(mcp_env(servers))
    listing = kernel.execute("%mcp")
    assert listing.status == "ok"
    text = listing.markdown()
    assert "**MCP servers** (3)" in text
    assert "| `twin` | stdio: " in text and "| trust | connected, 0 tools |" in text
    assert "Not offered, the name is taken: `math_add` of `twin`, `math_shout` of `twin`" in text
    assert "| `calc` | stdio: " in text and "| trust | connected, 3 tools |" in text
    assert "| `notes` | stdio (env: API_TOKEN): " in text
    assert "| ask | connected, 3 tools |" in text
    assert "| `math_add` | calc | runs without asking | Add two integers. |" in text
    assert "| `notes_shout` | notes | asks first | Return the text in capitals. |" in text
    assert "tok-secret-value" not in listing.text()

    tools = kernel.execute("%tools").markdown()
    assert "| `math_add` | mcp:calc | runs without asking |" in tools
    assert "| `notes_crash` | mcp:notes | asks first |" in tools
    assert "| `run_shell_command` | shell |" in tools

    unknown = kernel.execute("%mcp restart calk")
    assert unknown.status == "error"
    assert (
        "There is no MCP server `calk`. Did you mean `calc`? Configured: `calc`, `notes`, `twin`."
        in (unknown.stderr)
    )
    assert "Traceback" not in unknown.text()
    bad = kernel.execute("%mcp restrat calc")
    assert bad.status == "error" and "Did you mean `%mcp restart`?" in bad.stderr
    assert "Name the server" in kernel.execute("%mcp restart").stderr

    assert complete(kernel, "%mcp re")["matches"] == ["restart", "reload"]
    assert complete(kernel, "%mcp restart no")["matches"] == ["notes"]
    assert complete(kernel, "%mcp restart t")["matches"] == ["twin"]
    assert complete(kernel, "%mc")["matches"] == ["%mcp"]


def test_reload_reads_the_setting_again_without_a_kernel_restart(
    start_kernel, tool_servers: ToolServers
):
    kernel = start_kernel()
    empty = kernel.execute("%mcp").markdown()
    assert "No MCP servers are configured" in empty
    servers = {"calc": tool_servers.stdio("calc", approval="trust"), "bad": {"command": ""}}
    setup = kernel.execute(
        f"%%python\nimport os\nos.environ['CO_MCP_SERVERS'] = {json.dumps(json.dumps(servers))}"
    )
    assert setup.status == "ok", setup.text()
    reloaded = kernel.execute("%mcp reload").markdown()
    assert "| `calc` |" in reloaded and "connected, 3 tools" in reloaded
    # A problem is plain text (it quotes settings), escaped in the Markdown source.
    assert "mcp_servers.bad: \\`command\\` is empty; server ignored" in reloaded


def test_reload_also_reads_the_permission_rules_for_mcp_tools(
    start_kernel, model_server, tool_servers: ToolServers, co_home
):
    """Rules naming MCP tools come with the servers: `%mcp reload` reads both again."""
    settings = co_home / "config" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    servers = {"calc": tool_servers.stdio("calc", approval="trust")}
    settings.write_text(json.dumps({"mcp_servers": servers}))
    kernel = start_kernel()
    settings.write_text(
        json.dumps({"mcp_servers": servers, "permissions": {"deny": ["calc_shout"]}})
    )
    reloaded = kernel.execute("%mcp reload").markdown()
    assert "connected, 3 tools" in reloaded
    assert "calc_shout" in kernel.execute("%permissions").markdown()

    shout = {"name": "calc_shout", "arguments": {"text": "hi"}}
    model_server.extend([{"tool_calls": [shout]}, {"text": "ok"}])
    result = kernel.execute("shout", mode="headless", timeout=120)
    assert result.status == "ok", result.text()
    assert tool_servers.calls("calc") == []
    assert "denied by rule `calc_shout` (user settings)" in json.dumps(model_server.requests)
