"""One toolset for all MCP servers, offering only the connected ones.

The agent is built once per model, but servers come and go: this toolset asks the
manager at every step which servers are connected, so a server that died is gone from
the next request's tool list and one that was restarted is back, without rebuilding the
agent. A call that finds its server dead marks it failed and gives the model a readable
error instead of a dead turn.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ApprovalRequired, CallDeferred
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from ..tools._errors import ToolError, ToolErrorKind

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from ._servers import McpManager, McpServer

__all__ = ["McpServersToolset"]


@dataclass(kw_only=True)
class _ServerTool(ToolsetTool[Any]):
    """A tool of one server, remembering which server and which of its tools."""

    server: McpServer
    """The server that offers it."""
    source: ToolsetTool[Any]
    """The tool as the server's (prefixed, approval-wrapped) toolset returned it."""


class McpServersToolset(AbstractToolset[Any]):
    """The tools of every connected MCP server, under their prefixes."""

    def __init__(self, manager: McpManager) -> None:
        self._manager = manager

    @property
    def id(self) -> str | None:
        return "co-mcp"

    @property
    def label(self) -> str:
        return "MCP servers"

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        manager = self._manager
        tools: dict[str, ToolsetTool[Any]] = {}
        for server in manager.connected():
            exposed = server.exposed
            if exposed is None:
                continue
            try:
                # Cached after the connect; a server's list_changed notice refreshes it.
                found = await asyncio.wait_for(exposed.get_tools(ctx), server.probe_seconds)
            except TimeoutError:
                manager.fail(
                    server, f"stopped answering (no reply within {server.probe_seconds:g} s)"
                )
                continue
            except Exception as exc:
                from ._servers import _describe

                manager.fail(server, f"stopped: {_describe(exc, server.spec)}")
                continue
            for name, tool in found.items():
                if name in manager.reserved:
                    manager.skip_tool(server, name, "Co has a tool of that name")
                    continue
                if name in tools:
                    manager.skip_tool(server, name, "another MCP server offers a tool of that name")
                    continue
                tools[name] = _ServerTool(
                    toolset=self,
                    tool_def=tool.tool_def,
                    max_retries=tool.max_retries,
                    args_validator=tool.args_validator,
                    args_validator_func=tool.args_validator_func,
                    server=server,
                    source=tool,
                )
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        assert isinstance(tool, _ServerTool)
        server = tool.server
        exposed = server.exposed
        if server.state != "connected" or exposed is None:
            raise ToolError(
                ToolErrorKind.TERMINAL,
                f"the MCP server `{server.name}` is not running ({server.reason or server.state}); "
                "its tools are unavailable until the user restarts it with `%mcp restart`",
            )
        try:
            return await exposed.call_tool(
                name, tool_args, ctx, replace(tool.source, tool_def=tool.tool_def)
            )
        except (ApprovalRequired, CallDeferred):
            raise
        except Exception as exc:
            # pydantic-ai reports a lost connection as a ModelRetry like any tool error:
            # ask the server whether it is still there before the model retries.
            if await self._manager.alive(server):
                raise
            raise ToolError(
                ToolErrorKind.TERMINAL,
                f"the MCP server `{server.name}` stopped during the call ({server.reason}); "
                "its tools are unavailable until the user restarts it with `%mcp restart`",
            ) from exc
