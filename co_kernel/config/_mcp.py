"""The ``mcp_servers`` setting: one entry per MCP server, keyed by its name.

Written the way MCP clients commonly write it, so a configuration can be pasted::

    "mcp_servers": {
      "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
      "search": {"url": "https://mcp.example.com/mcp",
                 "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"},
                 "approval": "trust", "prefix": "web"}
    }

A server with ``command`` runs as a child process over stdio; one with ``url`` is reached
over streamable HTTP. Layers merge by server name (a project file adds to the user's
servers and may replace one); a bad entry is reported and dropped alone, the other
servers still load.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

__all__ = ["SERVER_NAME", "McpServerSpec", "expand_vars", "merge_server_layers"]

SERVER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")
"""Server names and prefixes: they become part of tool names, which providers restrict."""

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

PYTHON_VAR = "CO_PYTHON"
"""``${CO_PYTHON}`` is the kernel's own interpreter, so a Python server installed beside
Co runs without knowing where that is."""


class McpServerSpec(BaseModel):
    """One MCP server: how to reach it, how its tools are named and approved."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["stdio", "http", "streamable-http"] | None = Field(
        None, description="Optional; implied by `command` (stdio) or `url` (streamable HTTP)"
    )
    command: str | None = Field(None, description="Program that runs a stdio server")
    args: list[str] = Field(default_factory=list, description="Its arguments")
    env: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Environment of the stdio server, over PATH, HOME and the like "
        "(values are secrets: never shown)",
    )
    cwd: str | None = Field(
        None, description="Working folder of the stdio server; default the notebook's folder"
    )
    url: str | None = Field(None, description="Endpoint of a streamable-HTTP server")
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="HTTP headers (values are secrets: never shown)"
    )
    prefix: str | None = Field(
        None,
        description="Tool names become <prefix>_<tool>; default the server's name, '' for none",
    )
    approval: Literal["ask", "trust", "annotations"] = Field(
        "ask",
        description="ask: every call waits for approval; trust: calls run at once; "
        "annotations: tools the server marks readOnlyHint (not destructiveHint) run at once",
    )
    start_timeout: float = Field(
        10.0, gt=0, le=600, description="Seconds the server may take to start and list its tools"
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a stdio server) or `url` (an HTTP server)")
        if self.command is not None:
            if not self.command.strip():
                raise ValueError("`command` is empty")
            if self.type not in (None, "stdio"):
                raise ValueError(f"`type` is '{self.type}' but `command` makes a stdio server")
            if self.headers:
                raise ValueError("`headers` only apply to an HTTP server (`url`)")
        else:
            url = self.url or ""
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"`url` must start with http:// or https:// (got '{url}')")
            if self.type == "stdio":
                raise ValueError("`type` is 'stdio' but `url` makes an HTTP server")
            if self.args or self.env or self.cwd:
                raise ValueError("`args`, `env` and `cwd` only apply to a stdio server (`command`)")
        if self.prefix is not None and self.prefix != "" and not SERVER_NAME.match(self.prefix):
            raise ValueError(
                f"`prefix` '{self.prefix}' must start with a letter and hold only letters, "
                "digits, '_' and '-' (at most 40)"
            )
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def tool_prefix(self, name: str) -> str:
        """The prefix of this server's tool names ('' for none)."""
        return name if self.prefix is None else self.prefix

    def describe(self) -> str:
        """Where the server is: its command line or URL (env and headers are separate)."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return self.url or ""

    def secret_names(self) -> str:
        """The names of its env variables or headers, never their values ('' for none)."""
        if self.env:
            return f"env: {', '.join(sorted(self.env))}"
        if self.headers:
            return f"headers: {', '.join(sorted(self.headers))}"
        return ""

    def secret_values(self) -> list[str]:
        """Env and header values, expanded, and the variables they name: for the redactor."""
        values = [v.get_secret_value() for v in [*self.env.values(), *self.headers.values()]]
        found = list(values)
        for value in values:
            with contextlib.suppress(KeyError):  # a missing variable: nothing to hide
                found.append(expand_vars(value))
            found += [
                os.environ[name]
                for name in _VAR.findall(value)
                if name != PYTHON_VAR and name in os.environ
            ]
        return found


def expand_vars(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``${NAME}`` replaced from the environment; KeyError names a missing variable."""
    env = os.environ if environ is None else environ

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == PYTHON_VAR:
            return sys.executable
        if name not in env:
            raise KeyError(name)
        return env[name]

    return _VAR.sub(value, text)


def _problem_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key"
        parts.append(f"{loc}: {message}" if loc else message)
    return "; ".join(parts)


def merge_server_layers(
    layers: list[tuple[str, Any]],
) -> tuple[dict[str, McpServerSpec], list[str]]:
    """Merge ``(source, raw value)`` layers by server name; validate each server alone.

    A later layer replaces a server of the same name; ``null`` removes it. Returns the
    valid servers and one problem line per dropped server or layer.
    """
    raw: dict[str, tuple[str, Any]] = {}
    problems: list[str] = []
    for source, value in layers:
        if not isinstance(value, dict):
            problems.append(
                f"{source}: mcp_servers: expected an object of name -> server; ignored "
                '(e.g. {"files": {"command": "npx", "args": [...]}})'
            )
            continue
        for name, spec in value.items():
            raw[str(name)] = (source, spec)
    servers: dict[str, McpServerSpec] = {}
    for name, (source, spec) in raw.items():
        where = f"{source}: mcp_servers.{name}"
        if spec is None:
            continue
        if not SERVER_NAME.match(name):
            problems.append(
                f"{where}: the name must start with a letter and hold only letters, digits, "
                "'_' and '-' (at most 40); server ignored"
            )
            continue
        if not isinstance(spec, dict):
            problems.append(f"{where}: expected an object with `command` or `url`; server ignored")
            continue
        try:
            servers[name] = McpServerSpec.model_validate(spec)
        except ValidationError as exc:
            problems.append(f"{where}: {_problem_text(exc)}; server ignored")
    return servers, problems
