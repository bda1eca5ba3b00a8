"""One toolset for all MCP servers, offering only the connected ones.

The agent is built once per model, but servers come and go: this toolset asks the
manager at every step which servers are connected, so a server that died is gone from
the next request's tool list and one that was restarted is back, without rebuilding the
agent. A call that finds its server dead marks it failed and gives the model a readable
error instead of a dead turn.

When a connected server lists resources, two more tools are offered: ``list_mcp_resources``
and ``read_mcp_resource`` (read-only; permission rules apply to them like to any tool).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, ToolsetTool

from ..exceptions import ToolError, ToolErrorKind

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


MAX_RESOURCE_CHARS = 200_000
"""Longer resource text is cut, with a note."""


def _resource_toolset(manager: McpManager) -> FunctionToolset[Any]:
    """``list_mcp_resources`` and ``read_mcp_resource`` over the connected servers."""

    async def list_mcp_resources() -> str:
        """List the resources (documents, data) the connected MCP servers offer: server,
        URI, name and description. Read one with `read_mcp_resource`."""
        lines = [
            f"- server `{s.name}`: `{r.uri}` {r.name}"
            + (f" ({r.mime_type})" if r.mime_type else "")
            + (f": {r.description}" if r.description else "")
            for s in manager.connected()
            for r in s.resources
        ]
        return "\n".join(lines) or "No MCP server offers resources."

    async def read_mcp_resource(server: str, uri: str) -> str:
        """Read one resource of an MCP server, as `list_mcp_resources` lists it.

        Args:
            server: The server's name.
            uri: The resource's URI, exactly as listed.
        """
        found = next((s for s in manager.connected() if s.name == server), None)
        if found is None or found.connection is None:
            names = ", ".join(f"`{s.name}`" for s in manager.connected() if s.resources)
            raise ModelRetry(f"No connected MCP server `{server}` offers resources: {names}.")
        if uri not in {r.uri for r in found.resources}:
            raise ModelRetry(
                f"`{server}` lists no resource `{uri}`; use a URI `list_mcp_resources` gives."
            )
        content = await found.connection.read_resource(uri)
        parts = content if isinstance(content, list) else [content]
        text = "\n".join(
            p if isinstance(p, str) else f"[binary content: {len(p.data):,} bytes, {p.media_type}]"
            for p in parts
        )
        if len(text) > MAX_RESOURCE_CHARS:
            text = text[:MAX_RESOURCE_CHARS] + f"\n[cut at {MAX_RESOURCE_CHARS:,} characters]"
        return text

    return FunctionToolset([list_mcp_resources, read_mcp_resource])


class McpServersToolset(AbstractToolset[Any]):
    """The tools of every connected MCP server, under their prefixes."""

    def __init__(self, manager: McpManager) -> None:
        self._manager = manager
        self._resources = _resource_toolset(manager)

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
        if any(s.resources for s in manager.connected()):
            for name, tool in (await self._resources.get_tools(ctx)).items():
                if name not in tools:
                    tools[name] = replace(tool, toolset=self)
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if not isinstance(tool, _ServerTool):  # list_mcp_resources, read_mcp_resource
            return await self._resources.call_tool(name, tool_args, ctx, tool)
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
