"""An MCP server whose tools carry the specification's hints, over stdio.

``peek`` is marked read-only, ``wipe`` destructive, ``odd`` read-only *and* destructive
(contradictory hints: Co asks), ``plain`` has no hints; one resource, ``memo://today``,
and one prompt, ``poem``, which ``--no-resources`` leaves out; ``--open-world`` adds
``send``, marked read-only but reaching the open world (``openWorldHint``). Every call is appended as a JSON
line (tool, arguments) to the file named by ``--calls``, so a test sees what ran.
Run: ``python annotated_server.py NAME --calls F``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--calls", type=Path, required=True)
    parser.add_argument("--no-resources", action="store_true")
    parser.add_argument("--open-world", action="store_true")
    options = parser.parse_args()
    server = MCPServer(options.name)

    def record(tool: str, **arguments: object) -> str:
        with options.calls.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")
        return f"{tool} ran"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def peek(key: str) -> str:
        """Read a value."""
        return record("peek", key=key)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
    def wipe(key: str) -> str:
        """Delete a value."""
        return record("wipe", key=key)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True))
    def odd(key: str) -> str:
        """Contradictory hints."""
        return record("odd", key=key)

    @server.tool()
    def plain(key: str) -> str:
        """No hints at all."""
        return record("plain", key=key)

    if options.open_world:

        @server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=True))
        def send(to: str, text: str) -> str:
            """Post a message to someone outside."""
            return record("send", to=to, text=text)

    if not options.no_resources:

        @server.resource("memo://today", name="today", description="Today's memo.",
                         mime_type="text/plain")  # fmt: skip
        def today() -> str:
            return "MEMO-CONTENT: buy milk"

        @server.prompt(description="Ask for a short poem.")
        def poem(topic: str, lines: str = "4") -> str:
            return f"Write a {lines}-line poem about {topic}."

    server.run()


if __name__ == "__main__":
    main()
