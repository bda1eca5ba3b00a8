"""MCP servers as tool sources; a server that fails leaves the turn running without its tools.

The ``mcp_servers`` setting lives with the other settings (``config/_mcp.py``); ``_servers.py`` connects, watches and
restarts the servers of a session; ``_toolset.py`` is the one toolset the agent gets for
all of them. Importing this package is cheap: pydantic-ai's MCP client loads with the
first connection.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import McpServerSpec, expand_vars
from ._servers import McpManager, McpServer

if TYPE_CHECKING:
    from ._toolset import McpServersToolset

__all__ = [
    "McpManager",
    "McpServer",
    "McpServerSpec",
    "McpServersToolset",
    "expand_vars",
    "mcp_log_dir",
]


def mcp_log_dir() -> Path:
    """Where each stdio server's stderr is written: ``<cache dir>/mcp/<name>.log``."""
    from ..config import paths

    return paths().cache_dir / "mcp"


def __getattr__(name: str) -> Any:
    # The toolset loads pydantic-ai: imported when an agent is built, not with the package
    # (a session may be created while the kernel's warm-up thread still imports pydantic-ai).
    if name == "McpServersToolset":
        from ._toolset import McpServersToolset

        return McpServersToolset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
