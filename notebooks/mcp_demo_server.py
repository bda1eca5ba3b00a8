"""A tiny MCP server for `07-mcp.ipynb`: two tools, over stdio.

Written with the `mcp` package (installed with Co). Run it yourself with
`python mcp_demo_server.py`: it then waits for an MCP client on stdin.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("demo")


@server.tool()
def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit."""
    return round(celsius * 9 / 5 + 32, 2)


@server.tool()
def word_count(text: str) -> dict[str, int]:
    """Count the words and characters of a text."""
    return {"words": len(text.split()), "characters": len(text)}


if __name__ == "__main__":
    server.run()
