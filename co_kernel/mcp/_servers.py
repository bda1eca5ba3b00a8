"""The MCP servers of one kernel session: connecting, watching, restarting, closing.

Every configured server is started in the background as soon as the session exists
(each on its own, bounded by its ``start_timeout``); the first turn waits for the ones
still starting. A server that fails to start, or stops answering later, is marked
``failed`` and reported once: in the cell of the turn that finds out, or in the next one.
Its tools leave the agent at once (``_toolset.py`` only offers connected servers) and the
session goes on with the rest. ``%mcp restart`` connects it again.

Connections are pydantic-ai ``MCPToolset``\\ s over FastMCP transports; FastMCP runs each
session in a background task, so a connection opened in one cell is used by the turns
of later cells and closed by whichever cell restarts it or by the kernel's shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..config import McpServerSpec, expand_vars, private_file, private_folder
from ..inert import inert_code, inert_text

if TYPE_CHECKING:
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.toolsets import AbstractToolset

    from ..tools import ToolsetBuild

__all__ = ["McpManager", "McpServer", "ServerState"]

log = logging.getLogger(__name__)

ServerState = Literal["stopped", "connecting", "connected", "failed"]

# A connected server that takes longer than this to list its tools is taken as hung.
_PROBE_SECONDS = 5.0
# Closing a connection never holds a cell longer than this (a dead HTTP server, a child
# process that ignores its closed stdin).
_CLOSE_SECONDS = 5.0
_STDERR_TAIL_CHARS = 300


@dataclass
class McpServer:
    """One configured server and the state of its connection."""

    name: str
    """Its key in `mcp_servers`."""
    spec: McpServerSpec
    """How to reach it."""
    state: ServerState = "stopped"
    """stopped (not started yet, or closed), connecting, connected or failed."""
    reason: str | None = None
    """Why it failed, readable and free of secrets: plain text (shown through ``inert_text``)."""
    tools: dict[str, str] = field(default_factory=dict)
    """Tool names as the model sees them (prefixed) -> description."""
    connection: MCPToolset[Any] | None = None
    """The open connection while connected."""
    exposed: AbstractToolset[Any] | None = None
    """The connection as the agent sees it: prefixed, and asking approval under `ask`."""
    task: asyncio.Task[None] | None = None
    """The connect in progress."""
    skipped: set[str] = field(default_factory=set)
    """Tools not offered because their name is taken (reported once each)."""
    read_only: set[str] = field(default_factory=set)
    """Tools (prefixed names) the server marks ``readOnlyHint`` and not ``destructiveHint``."""
    resources: list[Any] = field(default_factory=list)
    """The resources it listed when it connected (pydantic-ai ``Resource``: uri, name, ...)."""

    @property
    def prefix(self) -> str:
        return self.spec.tool_prefix(self.name)

    def asks(self, name: str) -> bool:
        """Whether a call of the tool ``name`` (prefixed) waits for approval: always under
        ``ask``, never under ``trust``, unless the server marks it read-only under
        ``annotations`` (hints from the server, so ``ask`` stays the default)."""
        if self.spec.approval == "annotations":
            return name not in self.read_only
        return self.spec.approval == "ask"

    @property
    def probe_seconds(self) -> float:
        return min(_PROBE_SECONDS, self.spec.start_timeout)


class McpManager:
    """Owns the session's MCP connections and what the person is told about them."""

    def __init__(
        self,
        specs: dict[str, McpServerSpec],
        *,
        workspace: Path,
        log_dir: Path,
        redact: Callable[[str], str] = str,
    ) -> None:
        self.workspace = workspace
        self.log_dir = log_dir
        self.redact = redact
        """Applied to every failure reason: it may quote a URL, an argument or stderr."""
        self.servers: dict[str, McpServer] = {n: McpServer(n, s) for n, s in specs.items()}
        self.reserved: set[str] = set()
        """Names of Co's own tools: an MCP tool of the same name is not offered."""
        self._client_import: asyncio.Future[None] | None = None
        self._pending: list[tuple[str, str]] = []
        """(server, text) of reports not shown yet."""
        self._notify: Callable[[str], None] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    def reserve(self, builds: list[ToolsetBuild]) -> None:
        """Remember the names of Co's own tools, which MCP tools may not take."""
        names: set[str] = set()
        for build in builds:
            if build.toolset is None:
                continue
            names.update(build.approval)
            names.update(getattr(build.toolset, "tools", {}) or {})
        self.reserved = names

    def connected(self) -> list[McpServer]:
        return [s for s in self.servers.values() if s.state == "connected"]

    def offered(self) -> dict[str, McpServer]:
        """Tool name -> server of every MCP tool the model is offered.

        A name Co's own tools use is not offered; of two servers with the same tool name
        the one listed first in `mcp_servers` keeps it (``_toolset.py`` applies the same rule).
        """
        taken: dict[str, McpServer] = {}
        for server in self.connected():
            for name in server.tools:
                if name not in self.reserved and name not in taken:
                    taken[name] = server
        return taken

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        """Start connecting every server not started yet (needs the running event loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # built outside the kernel's loop: the first turn starts them
            return
        for server in self.servers.values():
            if server.state == "stopped" and server.task is None:
                server.state = "connecting"
                server.task = loop.create_task(self._connect(server), name=f"mcp-{server.name}")

    async def ready(self) -> None:
        """Wait until no server is still starting (each is bounded by its start_timeout)."""
        self.start()
        tasks = [s.task for s in self.servers.values() if s.task is not None]
        if tasks:
            # asyncio.wait does not cancel the connects when the cell is interrupted: they
            # carry on and the next turn finds them done.
            await asyncio.wait(tasks)

    async def check(self) -> None:
        """Ask every connected server for its tools; one that does not answer is failed."""
        await asyncio.gather(*(self.alive(s) for s in self.connected()))

    async def alive(self, server: McpServer) -> bool:
        """Whether the server still answers; marks it failed (and reports it) when not."""
        if server.state != "connected" or server.connection is None:
            return False
        try:
            await asyncio.wait_for(server.connection.client.list_tools(), server.probe_seconds)
        except TimeoutError:
            self.fail(server, f"stopped answering (no reply within {server.probe_seconds:g} s)")
            return False
        except Exception as exc:
            self.fail(server, f"stopped: {_describe(exc, server.spec)}")
            return False
        return True

    async def restart(self, name: str) -> McpServer:
        """Close one server's connection and connect again; returns it in its new state."""
        server = self.servers[name]
        if server.task is not None and not server.task.done():
            await asyncio.wait([server.task])
        await self._disconnect(server)
        server.state = "connecting"
        server.task = asyncio.get_running_loop().create_task(self._connect(server))
        await asyncio.wait([server.task])
        # The person reads the outcome in the magic's output: no notice in a later cell.
        self._pending = [(n, text) for n, text in self._pending if n != name]
        return server

    async def reload(self, specs: dict[str, McpServerSpec]) -> list[str]:
        """Take a new `mcp_servers` setting: close every server, connect the new set."""
        await self.close()
        self.servers = {n: McpServer(n, s) for n, s in specs.items()}
        await self.ready()
        # The magic shows every server's state: nothing is left to report later.
        self._pending = []
        return list(self.servers)

    async def close(self) -> None:
        """Close every connection (kernel shutdown); servers are stopped afterwards."""
        for server in self.servers.values():
            if server.task is not None and not server.task.done():
                server.task.cancel()
                await asyncio.wait([server.task])
        await asyncio.gather(*(self._disconnect(s) for s in self.servers.values()))
        if self._closing:
            await asyncio.wait(list(self._closing))
        for server in self.servers.values():
            server.state = "stopped"

    # -- reporting ---------------------------------------------------------

    def fail(self, server: McpServer, reason: str) -> None:
        """Mark a server failed, drop its connection, and report it once."""
        if server.state == "failed":
            return
        was_connected = server.state == "connected"
        reason = self.redact(reason)
        server.state = "failed"
        server.reason = reason
        log.warning("MCP server %s failed: %s", server.name, reason)
        connection, server.connection, server.exposed = server.connection, None, None
        if connection is not None:
            # In the background: a turn must not wait for a dead server's goodbye.
            task = asyncio.get_running_loop().create_task(_close_quietly(connection))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        if was_connected:
            text = (
                f"MCP server {inert_code(server.name)} {inert_text(reason)}. Its tools are no "
                f"longer offered; {inert_code(f'%mcp restart {server.name}')} connects it again."
            )
        else:
            text = (
                f"MCP server {inert_code(server.name)} could not start: {inert_text(reason)}. "
                "The session goes on without its tools; see `%mcp`, then "
                f"{inert_code(f'%mcp restart {server.name}')}."
            )
        self._say(server.name, text)

    def skip_tool(self, server: McpServer, tool: str, why: str) -> None:
        """Say once that one of a server's tools is not offered."""
        if tool in server.skipped:
            return
        server.skipped.add(tool)
        self._say(
            server.name,
            f"MCP server {inert_code(server.name)}: tool {inert_code(tool)} is not offered: "
            f"{inert_text(why)}. "
            f"Give the server another `prefix` in `mcp_servers`.",
        )

    def _say(self, server: str, text: str) -> None:
        if self._notify is not None:
            try:
                self._notify(text)
                return
            except Exception:  # a finished cell's frontend: keep it for the next one
                log.debug("MCP notice could not be shown", exc_info=True)
        self._pending.append((server, text))

    async def before_turn(self, notify: Callable[[str], None]) -> None:
        """Wait for servers still starting, check the others, and show what went wrong."""
        if not self.servers:
            return
        self._notify = None
        await self.ready()
        await self.check()
        for text in self.take_notices():
            notify(text)
        self._notify = notify

    def take_notices(self) -> list[str]:
        """Reports not yet shown (a magic shows them instead of the next turn)."""
        pending, self._pending = self._pending, []
        return [text for _, text in pending]

    def after_turn(self) -> None:
        """Failures found after this point wait for the next cell."""
        self._notify = None

    # -- connecting --------------------------------------------------------

    async def _import_client(self) -> None:
        """Import the MCP client stack once, in a thread: it takes seconds, and two
        threads importing the same modules at once can see them half-initialised."""
        if self._client_import is None:
            loop = asyncio.get_running_loop()
            self._client_import = loop.run_in_executor(None, _import_client)
        await asyncio.shield(self._client_import)

    def _log_path(self, server: McpServer) -> Path:
        return self.log_dir / f"{server.name}.log"

    async def _connect(self, server: McpServer) -> None:
        spec = server.spec
        log_path = self._log_path(server)
        offset = 0
        try:
            await self._import_client()
            # The server's stderr may print a token: the user's alone (0600 in 0700).
            private_file(log_path)
            offset = log_path.stat().st_size if log_path.exists() else 0
            connection = self._open(server, log_path)
        except KeyError as exc:
            self.fail(server, f"the environment variable '{exc.args[0]}' it names is not set")
            return
        except ImportError as exc:
            self.fail(server, f"the MCP client is not installed ({exc}); install co-kernel again")
            return
        except Exception as exc:  # a bad cwd, a transport that refuses the spec
            self.fail(server, _describe(exc, spec))
            return
        entered = False
        try:
            async with asyncio.timeout(spec.start_timeout):
                await connection.__aenter__()
                entered = True
                listed = await connection.list_tools()
                resources = await connection.list_resources()
        except TimeoutError:
            reason = f"it did not answer within {spec.start_timeout:g} s (setting start_timeout)"
        except asyncio.CancelledError:
            if entered:
                await _close_quietly(connection)
            server.state = "stopped"
            raise
        except Exception as exc:
            reason = _describe(exc, spec)
        else:
            prefix = server.prefix
            server.tools = {
                f"{prefix}_{t.name}" if prefix else t.name: (t.description or "").strip()
                for t in listed
            }
            server.resources = list(resources)
            server.read_only = {
                f"{prefix}_{t.name}" if prefix else t.name for t in listed if _read_only(t)
            }
            server.connection = connection
            exposed: AbstractToolset[Any] = connection.prefixed(prefix) if prefix else connection
            if spec.approval != "trust":
                exposed = exposed.approval_required(
                    lambda ctx, tool_def, args, server=server: server.asks(tool_def.name)
                )
            server.exposed = exposed
            server.state = "connected"
            server.reason = None
            server.skipped = set()
            return
        finally:
            server.task = None
        if entered:
            await _close_quietly(connection)
        tail = _stderr_tail(log_path, offset)
        if tail:
            reason += f"; it wrote: {tail}"
        self.fail(server, reason)

    def _open(self, server: McpServer, log_path: Path) -> MCPToolset[Any]:
        """The (not yet entered) connection; KeyError names a missing ``${VAR}``."""
        from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
        from pydantic_ai.mcp import MCPToolset

        spec = server.spec
        transport: Any
        if spec.command is not None:
            cwd = Path(expand_vars(spec.cwd)).expanduser() if spec.cwd else self.workspace
            if not cwd.is_absolute():
                cwd = self.workspace / cwd
            transport = StdioTransport(
                expand_vars(spec.command),
                [expand_vars(a) for a in spec.args],
                env=_child_env(spec),
                cwd=str(cwd),
                # The child ends with its connection (restart, shutdown), never lingers.
                keep_alive=False,
                # Its stderr goes to a log file, never into a cell.
                log_file=log_path,
            )
        else:
            transport = StreamableHttpTransport(
                expand_vars(spec.url or ""),
                headers={k: expand_vars(v.get_secret_value()) for k, v in spec.headers.items()},
            )
        return MCPToolset(
            transport,
            id=f"mcp-{server.name}",
            init_timeout=spec.start_timeout,
        )

    async def _disconnect(self, server: McpServer) -> None:
        connection, server.connection, server.exposed = server.connection, None, None
        if connection is not None:
            await _close_quietly(connection)
        server.state = "stopped"
        server.reason = None

    # -- reports -----------------------------------------------------------

    def tool_builds(self) -> list[ToolsetBuild]:
        """One `%tools` entry per server: its tools and whether they ask first."""
        from ..tools import ToolsetBuild

        builds = []
        for server in self.servers.values():
            label = f"mcp:{server.name}"
            if server.state == "connected":
                offered = self.offered()
                approval = {
                    name: server.asks(name) for name in server.tools if offered.get(name) is server
                }
                builds.append(ToolsetBuild(label, server.exposed, approval=approval))
            else:
                builds.append(ToolsetBuild(label, reason=inert_text(self.state_text(server))))
        return builds

    def state_text(self, server: McpServer) -> str:
        """The server's state in words (plain text: it may quote the server's output)."""
        if server.state == "connected":
            count = sum(1 for s in self.offered().values() if s is server)
            return f"connected, {count} tool{'s' if count != 1 else ''}"
        if server.state == "failed":
            return f"failed: {server.reason}"
        if server.state == "connecting":
            return "connecting"
        return "stopped"

    def status_rows(self) -> list[tuple[str, str]]:
        """(server, state) rows for `%status`."""
        return [
            (
                name,
                f"{self.state_text(s)} ({s.spec.transport}, {s.spec.approval})",
            )
            for name, s in self.servers.items()
        ]


def _child_env(spec: McpServerSpec) -> dict[str, str]:
    """The server's ``env``, expanded; Python's byte-code cache kept in Co's cache unless
    the spec sets its own: a ``.pyc`` in the folder's ``__pycache__`` runs in place of
    its source (which workspace trust hashes), and the sandbox can write there."""
    from ..config import paths

    env = {k: expand_vars(v.get_secret_value()) for k, v in spec.env.items()}
    if "PYTHONPYCACHEPREFIX" not in env:
        # Made here, 0700: Python makes the folders and files under it with the umask's
        # modes, readable by no one else through this one (and tightened at the next start).
        env["PYTHONPYCACHEPREFIX"] = str(private_folder(paths().cache_dir / "mcp-pycache"))
    return env


def _read_only(tool: Any) -> bool:
    """Whether an MCP tool is marked read-only and not destructive by its server."""
    hints = getattr(tool, "annotations", None)
    return bool(
        hints is not None
        and getattr(hints, "readOnlyHint", None) is True
        and getattr(hints, "destructiveHint", None) is not True
    )


def _import_client() -> None:
    import fastmcp.client.transports  # noqa: F401
    import pydantic_ai.mcp  # noqa: F401


async def _close_quietly(connection: MCPToolset[Any]) -> None:
    """Leave a connection whatever state its server is in; never raises, never hangs."""
    try:
        async with asyncio.timeout(_CLOSE_SECONDS):
            while connection.is_running:
                await connection.__aexit__(None, None, None)
    except asyncio.CancelledError:
        raise
    except BaseException:  # a dead server's transport complains on the way out
        log.debug("closing an MCP connection failed", exc_info=True)


def _describe(exc: BaseException, spec: McpServerSpec) -> str:
    """A one-line reason from an exception and its causes, for the person."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for item in chain:
        if isinstance(item, FileNotFoundError) and spec.command is not None:
            return f"the command '{spec.command}' was not found"
        if isinstance(item, PermissionError) and spec.command is not None:
            return f"the command '{spec.command}' cannot be run (permission denied)"
    text = ""
    for item in chain:
        text = " ".join(str(item).split())
        if text and not text.startswith("unhandled errors in a TaskGroup"):
            break
    text = text.removeprefix("Client failed to connect: ")
    if text == "Connection closed":
        return (
            "the process exited" if spec.command is not None else "the server closed the connection"
        )
    if len(text) > 200:
        text = text[:199] + "…"
    return text or type(exc).__name__


def _stderr_tail(path: Path, offset: int) -> str:
    """What the server wrote on stderr since ``offset``: its last lines, on one line."""
    try:
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return ""
    text = " ".join(data.decode("utf-8", errors="replace").split())
    if len(text) > _STDERR_TAIL_CHARS:
        text = "…" + text[-_STDERR_TAIL_CHARS:]
    return text
