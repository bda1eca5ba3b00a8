"""Real MCP servers for the tests: ``servers/tool_server.py`` over stdio or HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.kernel_forkserver import python_command

from ..support.net import free_port

SERVER = Path(__file__).parent / "servers" / "tool_server.py"


@dataclass
class ToolServers:
    """Builds `mcp_servers` entries for the test server and reads what its tools received."""

    root: Path
    """Where call logs and pid files go."""

    def calls_file(self, name: str) -> Path:
        return self.root / f"{name}.calls.jsonl"

    def pid_file(self, name: str) -> Path:
        return self.root / f"{name}.pid"

    def stdio(self, name: str, **extra: Any) -> dict[str, Any]:
        """A stdio server entry running the test server under ``name``."""
        args = [str(SERVER), name, "--calls", str(self.calls_file(name))]
        args += ["--pid-file", str(self.pid_file(name))]
        return server_entry(*args, **extra)

    def calls(self, name: str) -> list[dict[str, Any]]:
        """Every call the server's tools received, in order."""
        path = self.calls_file(name)
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line]

    def pid(self, name: str) -> int:
        return int(self.pid_file(name).read_text())


def server_entry(*args: str, **extra: Any) -> dict[str, Any]:
    """An `mcp_servers` entry running ``python ARGS`` (from the test run's fork server)."""
    command, *rest = python_command(*args)
    return {"command": command, "args": rest, **extra}


def mcp_env(servers: dict[str, Any], **extra: str) -> dict[str, str]:
    """Kernel environment configuring these MCP servers."""
    return {"CO_MCP_SERVERS": json.dumps(servers), **extra}


@pytest.fixture
def tool_servers(tmp_path: Path) -> ToolServers:
    root = tmp_path / "mcp"
    root.mkdir()
    return ToolServers(root)


@dataclass
class HttpToolServer:
    """The test server over streamable HTTP on 127.0.0.1."""

    url: str
    """Its endpoint."""
    process: subprocess.Popen[bytes]
    """The server process."""
    name: str
    """Its server name (the calls file is named after it)."""


@pytest.fixture
def http_tool_server(tool_servers: ToolServers) -> Iterator[HttpToolServer]:
    port = free_port()
    name = "web"
    command = python_command(str(SERVER), name, "--calls", str(tool_servers.calls_file(name)))
    process = subprocess.Popen(
        [*command, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP MCP test server did not start") from None
                time.sleep(0.05)
        yield HttpToolServer(f"http://127.0.0.1:{port}/mcp", process, name)
    finally:
        process.terminate()
        process.wait(timeout=10)
