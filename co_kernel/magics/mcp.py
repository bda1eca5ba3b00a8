"""List the MCP servers of this session, their state and tools; restart or reload them.

`%mcp` shows each server configured in `mcp_servers` (settings.json, `.co/settings.json`
or `CO_MCP_SERVERS`): how it is reached, whether its calls ask for approval (`ask`) or
run at once (`trust`), and whether it is connected, failed (with why) or stopped, then
every tool it offers under its prefix. `%mcp restart <name>` closes one server and starts
it again; `%mcp reload` reads the `mcp_servers` and `permissions` settings again and
reconnects every server, so a server or a rule for its tools added to the settings needs
no kernel restart. `%mcp prompts` lists the servers' prompts and their arguments;
`%mcp prompt <server> <name> key=value ...` gets one and runs it as this cell's prompt.
Env and header values are never shown.
"""

from __future__ import annotations

import contextlib
import difflib
from typing import TYPE_CHECKING

from ..exceptions import ConfigError
from ..inert import inert_text
from . import MagicContext, MagicError, RunPrompt
from ._render import code, table

if TYPE_CHECKING:
    from ..mcp import McpManager

USAGE = "%mcp [restart <name> | reload | prompts | prompt <server> <name> [key=value ...]]"

_SUBCOMMANDS = ("restart", "reload", "prompts", "prompt")
_MCP_SETTINGS = ("mcp_servers", "permissions", "permissions_accept_project")
"""What `%mcp reload` reads again."""

_NONE_CONFIGURED = (
    "No MCP servers are configured. Add them to `mcp_servers` in settings.json (or "
    "`.co/settings.json` beside the notebook, or the `CO_MCP_SERVERS` variable), e.g.\n\n"
    "```json\n"
    '{"mcp_servers": {"files": {"command": "npx", "args": ["-y", '
    '"@modelcontextprotocol/server-filesystem", "."], "approval": "ask"}}}\n'
    "```\n\n"
    "then run `%mcp reload`."
)


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    return [*_SUBCOMMANDS, *ctx.session.mcp.servers]


def format_servers(manager: McpManager) -> str:
    """The `%mcp` listing: one row per server, then one per tool."""
    if not manager.servers:
        return _NONE_CONFIGURED
    rows = []
    tool_rows = []
    unoffered = []
    offered = manager.offered()
    for name, server in manager.servers.items():
        spec = server.spec
        names = spec.secret_names()
        # The names first: a long command line is cut at the end, not them.
        transport = f"{spec.transport}{f' ({names})' if names else ''}: {spec.describe()}"
        rows.append((code(name), transport, spec.approval, manager.state_text(server)))
        for tool, description in server.tools.items():
            if offered.get(tool) is server:
                first_line = description.splitlines()[0] if description else ""
                approval = "asks first" if server.asks(tool) else "runs without asking"
                if spec.approval == "annotations":
                    approval += " (read-only hint)" if tool in server.read_only else " (no hint)"
                tool_rows.append((code(tool), name, approval, first_line))
            elif server.state == "connected":
                unoffered.append(f"{code(tool)} of {code(name)}")
    parts = [
        f"**MCP servers** ({len(rows)})\n\n"
        + table(["server", "transport", "approval", "state"], rows)
    ]
    if tool_rows:
        parts.append(
            f"**MCP tools** ({len(tool_rows)})\n\n"
            + table(["tool", "server", "approval", "description"], tool_rows)
        )
    else:
        parts.append("No MCP tools are offered right now.")
    if unoffered:
        parts.append(
            f"Not offered, the name is taken: {', '.join(unoffered)}. "
            "Give the server another `prefix`."
        )
    return "\n\n".join(parts)


def _server_name(manager: McpManager, name: str) -> str:
    if name in manager.servers:
        return name
    if not manager.servers:
        raise MagicError(f"There is no MCP server `{name}`: none are configured (see %mcp).")
    close = difflib.get_close_matches(name, list(manager.servers), n=1)
    hint = f" Did you mean `{close[0]}`?" if close else ""
    known = ", ".join(f"`{n}`" for n in manager.servers)
    raise MagicError(f"There is no MCP server `{name}`.{hint} Configured: {known}.")


async def _reload(ctx: MagicContext) -> str:
    from ..config import load_settings

    session = ctx.session
    loaded = load_settings(session.workspace)
    specs = loaded.settings.mcp_servers
    for spec in specs.values():
        session.telemetry.redactor.add(spec.secret_values())
    # Every setting that decides what MCP tools do: the servers, and the permission
    # rules that name their tools (mcp_* rules, annotations on top).
    fresh = {name: getattr(loaded.settings, name) for name in _MCP_SETTINGS}
    session.update_settings(fresh)
    await session.mcp.reload(specs)
    problems = [p for p in loaded.problems if any(name in p for name in _MCP_SETTINGS)]
    text = format_servers(session.mcp)
    if problems:
        text += "\n\n**Ignored**\n" + "\n".join(f"- {inert_text(p)}" for p in problems)
    return text


async def _prompts(manager: McpManager) -> str:
    rows = []
    for server in manager.connected():
        assert server.connection is not None
        for prompt in await server.connection.list_prompts():
            arguments = ", ".join(
                f"{a.name}{'' if a.required else '?'}" for a in prompt.arguments or []
            )
            rows.append((code(server.name), code(prompt.name), arguments, prompt.description or ""))
    if not rows:
        return "No connected MCP server offers prompts."
    return (
        f"**MCP prompts** ({len(rows)}); run one with `%mcp prompt <server> <name> key=value`"
        "\n\n" + table(["server", "prompt", "arguments (? optional)", "description"], rows)
    )


async def _prompt(manager: McpManager, text: str) -> RunPrompt:
    import shlex

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise MagicError(f"Cannot read the arguments: {exc}.") from None
    if len(words) < 2:
        raise MagicError("Name the server and the prompt, e.g. `%mcp prompt docs summarize`.")
    name = _server_name(manager, words[0])
    server = manager.servers[name]
    if server.state != "connected" or server.connection is None:
        raise MagicError(f"MCP server `{name}` is not connected ({manager.state_text(server)}).")
    arguments: dict[str, str] = {}
    for word in words[2:]:
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise MagicError(f"Arguments are key=value, not '{word}'.")
        arguments[key] = value
    try:
        result = await server.connection.get_prompt(words[1], arguments or None)
    except Exception as exc:  # MCPError: an unknown prompt, a missing argument
        raise MagicError(f"`{name}` could not give the prompt `{words[1]}`: {exc}") from None
    parts = [getattr(m.content, "content", None) for m in result.messages]
    prompt = "\n\n".join(p for p in parts if isinstance(p, str) and p.strip())
    if not prompt:
        raise MagicError(f"The prompt `{words[1]}` of `{name}` holds no text to send.")
    return RunPrompt(prompt)


async def run(ctx: MagicContext, args: str) -> str | RunPrompt:
    manager = ctx.session.mcp
    words = args.split()
    if not words:
        with contextlib.suppress(ConfigError):
            # Learns the names of Co's own tools, which MCP tools may not take.
            ctx.session.ensure_agent()
        await manager.ready()
        await manager.check()
        notices = manager.take_notices()
        listing = format_servers(manager)
        return "\n\n".join([*(f"⚠️ {n}" for n in notices), listing])
    command, rest = words[0].lower(), words[1:]
    if command == "reload":
        if rest:
            raise MagicError(f"%mcp reload takes no more arguments (got '{' '.join(rest)}').")
        return await _reload(ctx)
    if command == "prompts":
        await manager.ready()
        return await _prompts(manager)
    if command == "prompt":
        await manager.ready()
        return await _prompt(manager, args.split(maxsplit=1)[1] if len(words) > 1 else "")
    if command == "restart":
        if len(rest) != 1:
            raise MagicError("Name the server to restart, e.g. `%mcp restart files`.")
        name = _server_name(manager, rest[0])
        server = await manager.restart(name)
        if server.state == "connected":
            count = len(server.tools)
            head = f"✅ MCP server {code(name)} is connected again ({count} tool{'s' if count != 1 else ''})."
        else:
            head = f"❌ MCP server {code(name)} did not start: {inert_text(server.reason)}"
        return head + "\n\n" + format_servers(manager)
    close = difflib.get_close_matches(command, _SUBCOMMANDS, n=1)
    hint = f" Did you mean `%mcp {close[0]}`?" if close else ""
    raise MagicError(f"Unknown %mcp command '{command}'.{hint}")
