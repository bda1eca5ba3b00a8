"""MCP servers as tool sources (seed 001 "MCP toolsets", "MCP fallback").

``_spec.py`` is the ``mcp_servers`` setting; ``_servers.py`` connects, watches and
restarts the servers of a session; ``_toolset.py`` is the one toolset the agent gets for
all of them. Importing this package is cheap: pydantic-ai's MCP client loads with the
first connection.
"""

from __future__ import annotations

from pathlib import Path

from ._servers import McpManager, McpServer
from ._spec import McpServerSpec, expand_vars, merge_server_layers

__all__ = [
    "McpManager",
    "McpServer",
    "McpServerSpec",
    "expand_vars",
    "mcp_log_dir",
    "merge_server_layers",
]


def mcp_log_dir() -> Path:
    """Where each stdio server's stderr is written: ``<cache dir>/mcp/<name>.log``."""
    from ..config import paths

    return paths().cache_dir / "mcp"
