"""A small MCP server for the tests, over stdio or streamable HTTP.

Every call is appended as one JSON line (tool, arguments, server name) to the file named
by ``--calls``, so a test can assert what the tool received; ``--pid-file`` lets a test
kill the server mid-session. Run: ``python tool_server.py NAME --calls F [--http PORT]``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--calls", type=Path, required=True)
    parser.add_argument("--pid-file", type=Path)
    parser.add_argument("--http", type=int, metavar="PORT")
    options = parser.parse_args()
    if options.pid_file:
        options.pid_file.write_text(str(os.getpid()))
    server = MCPServer(options.name)

    def record(tool: str, arguments: dict[str, object]) -> None:
        entry = {"server": options.name, "tool": tool, "arguments": arguments}
        # Whatever the stdio client passed in `env` shows up here for the env test.
        entry["env"] = os.environ.get("TOOL_SERVER_GREETING")
        with options.calls.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        record("add", {"a": a, "b": b})
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """Return the text in capitals."""
        record("shout", {"text": text})
        return text.upper() + "!"

    @server.tool()
    def crash() -> str:
        """Stop the server process at once (the tests' server dying mid-call)."""
        record("crash", {})
        os._exit(1)

    if options.http:
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
