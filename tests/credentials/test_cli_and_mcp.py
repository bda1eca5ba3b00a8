"""`co-kernel secrets set` at a terminal (no echo), and an MCP server's env value taken from the
store reaching the real server through a kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
from cryptography.fernet import Fernet

from tests.mcp.conftest import ToolServers, mcp_env

from .conftest import REPO, all_bytes, clean_env, secrets_cli

TYPED = "typed-at-the-terminal-0123456789"


def test_set_at_a_terminal_asks_without_echo(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "co", CO_CREDENTIAL_STORE="file")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "co_kernel.cli", "secrets", "set", "brave_search_api_key"],
        env=env,
        cwd=str(REPO),
        encoding="utf-8",
        timeout=120,
    )
    try:
        child.expect_exact("Value for brave_search_api_key (not shown): ")
        child.sendline(TYPED)
        child.expect(pexpect.EOF)
    finally:
        child.close()
    shown = (child.before or "") + str(child.after or "")
    assert child.exitstatus == 0, shown
    assert "Stored brave_search_api_key in the file" in shown
    assert TYPED not in shown  # the terminal never echoed it
    assert secrets_cli(env, "list").stdout.splitlines() == ["brave_search_api_key\tfile"]
    assert TYPED.encode() not in all_bytes(tmp_path / "co")


def test_an_empty_mcp_env_value_is_taken_from_the_store(
    start_kernel, model_server, co_home: Path, tmp_path: Path
) -> None:
    secret_key = Fernet.generate_key().decode()
    env = clean_env(co_home, CO_CREDENTIAL_STORE="file", CO_SECRET_KEY=secret_key)
    name = "mcp_servers.calc.TOOL_SERVER_GREETING"
    assert secrets_cli(env, "set", name, value="greeting-from-the-store").returncode == 0
    tools = ToolServers(tmp_path / "mcp")
    tools.root.mkdir()
    servers = {"calc": tools.stdio("calc", approval="trust", env={"TOOL_SERVER_GREETING": ""})}
    kernel = start_kernel(mcp_env(servers, CO_CREDENTIAL_STORE="file", CO_SECRET_KEY=secret_key))
    model_server.extend(
        [
            {"tool_calls": [{"name": "calc_add", "arguments": {"a": 1, "b": 2}}]},
            {"expect": {"tool_result_contains": "3"}, "text": "Three."},
        ]
    )
    result = kernel.execute("add 1 and 2", timeout=120)
    assert result.status == "ok", result.text()
    assert [c["env"] for c in tools.calls("calc")] == ["greeting-from-the-store"]
    status = kernel.execute("%status", timeout=120).text()
    assert f"| secrets | {name} | set (file) |" in status
    assert "greeting-from-the-store" not in status + result.text()
