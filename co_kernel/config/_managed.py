"""Managed settings: a deployer's file whose keys nobody below it can override.

A hub or a class gives every kernel one system-wide file, ``/etc/co/settings.json`` (or the
path in ``CO_MANAGED_SETTINGS``, which then replaces it), read before the user's. Its keys
are locked: a user file, a project file or a ``CO_<NAME>`` variable that sets one has its
value ignored, with one notice each ("set by your administrator in <path>; your value
ignored"). Two settings are floors that add up instead of locking:

- ``permissions``: the managed rules join every other layer's; deny over ask over allow
  holds across layers, so a managed ``deny`` beats any ``allow`` (and a managed ``ask``
  asks even under ``%yolo``: ``permissions/_approval.py``);
- ``mcp_servers``: the managed servers join the others, and no lower layer may replace or
  remove one of the same name. ``mcp_allowed_servers`` (managed only) names the servers
  (by name, or by command as written or its file name, or by URL) any other layer may add;
  every other server is dropped with a notice.

The budgets (``CEILINGS``: per turn, conversation, day and month, in money and tokens) are
ceilings instead: a managed value is the most any other layer may set, so a user file or
``CO_BUDGET_*`` may lower it, and a value above it (or ``null``, no budget) is ignored with
a notice.

``LoadedSettings.origins`` says which layer set each value (``layer_origins``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

__all__ = [
    "CEILINGS",
    "MANAGED",
    "MANAGED_ENV",
    "MANAGED_ONLY",
    "ManagedLayer",
    "env_variable",
    "layer_origins",
    "managed_settings_file",
]

MANAGED_ENV = "CO_MANAGED_SETTINGS"
"""The variable naming the managed settings file instead of ``/etc/co/settings.json``."""
_DEFAULT = Path("/etc/co/settings.json")
MANAGED = "managed settings"
"""The source of the managed file's permission rules (``%permissions`` shows it)."""
MANAGED_ONLY = frozenset({"mcp_allowed_servers"})
"""Settings only the managed file may set."""
_FLOORS = frozenset({"permissions", "mcp_servers"})
"""Managed settings that add to the other layers' instead of replacing them."""
CEILINGS = frozenset(
    f"budget_{period}{unit}"
    for period in ("turn", "conversation", "day", "month")
    for unit in ("", "_tokens")
)
"""Managed settings that other layers may lower, never raise: the budgets."""


def _within(value: Any, ceiling: Any) -> bool:
    """Whether a lower layer's budget stays at or under the managed one (None: no budget)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return False
    try:
        return float(value) <= float(ceiling)
    except (TypeError, ValueError):
        return False


def managed_settings_file() -> Path:
    """The managed settings file: ``CO_MANAGED_SETTINGS``, else ``/etc/co/settings.json``."""
    named = os.environ.get(MANAGED_ENV)
    return Path(named).expanduser() if named else _DEFAULT


def env_variable(name: str) -> str:
    """The variable that gave the environment's value of a setting (``GEMINI_API_KEY``
    for ``gemini_api_key`` when that is what is set), else ``CO_<NAME>``."""
    from pydantic import AliasChoices

    from . import Settings

    alias = Settings.model_fields[name].validation_alias
    choices = alias.choices if isinstance(alias, AliasChoices) else []
    upper = {key.upper() for key in os.environ}
    for choice in choices:
        if isinstance(choice, str) and choice.upper() in upper:
            return choice.upper()
    return f"CO_{name.upper()}"


def _server_allowed(name: str, spec: Any, allowed: frozenset[str]) -> bool:
    """Whether ``mcp_allowed_servers`` names this server, its command or its URL."""
    if name in allowed or spec is None:  # removing a server of one's own is no power
        return True
    if not isinstance(spec, dict):
        return False
    command = spec.get("command")
    if isinstance(command, str) and (command in allowed or PurePath(command).name in allowed):
        return True
    url = spec.get("url")
    return isinstance(url, str) and url in allowed


@dataclass
class ManagedLayer:
    """The managed file's settings, and the lock they put on every other layer."""

    path: Path
    """Where they were read (it may not exist)."""
    values: dict[str, Any] = field(default_factory=dict)
    """Setting name -> value, as read (empty when there is no file)."""

    @property
    def label(self) -> str:
        """The layer's label among ``load_settings``'s layers."""
        return str(self.path)

    def _allowed_servers(self, problems: list[str]) -> frozenset[str] | None:
        value = self.values.get("mcp_allowed_servers")
        if value is None:
            return None
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return frozenset(value)
        # Unreadable, the list allows nothing more than the managed servers: a floor that
        # fails opens nothing.
        problems.append(
            f"{self.path}: mcp_allowed_servers: expected a list of server names, commands "
            "or URLs; only the managed servers are allowed"
        )
        self.values["mcp_allowed_servers"] = []
        return frozenset()

    def lock(self, label: str, layer: dict[str, Any], problems: list[str]) -> dict[str, Any]:
        """``layer`` (``label``: a file's path or "environment") without what the managed
        file locks, each dropped value reported once."""
        if label == self.label or not (self.values or MANAGED_ONLY & layer.keys()):
            return layer
        kept: dict[str, Any] = {}
        for name, value in layer.items():
            where = f"environment ({env_variable(name)})" if label == "environment" else label
            if name in MANAGED_ONLY:
                problems.append(
                    f"{where}: {name}: only managed settings ({self.path}) can set this; "
                    "your value ignored"
                )
            elif name == "mcp_servers":
                kept[name] = self._lock_servers(where, value, problems)
            elif name in CEILINGS and name in self.values:
                if _within(value, self.values[name]):
                    kept[name] = value
                else:
                    problems.append(
                        f"{where}: {name}: your administrator sets at most "
                        f"{self.values[name]} in {self.path}; your value ignored"
                    )
            elif name in self.values and name not in _FLOORS:
                if value != self.values[name]:
                    problems.append(
                        f"{where}: {name}: set by your administrator in {self.path}; "
                        "your value ignored"
                    )
            else:
                kept[name] = value
        return kept

    def _lock_servers(self, where: str, value: Any, problems: list[str]) -> Any:
        if not isinstance(value, dict):
            return value  # merge_server_layers reports it
        managed = self.values.get("mcp_servers")
        locked = frozenset(managed) if isinstance(managed, dict) else frozenset[str]()
        allowed = self._allowed_servers(problems)
        kept: dict[str, Any] = {}
        for name, spec in value.items():
            if name in locked:
                problems.append(
                    f"{where}: mcp_servers.{name}: set by your administrator in {self.path}; "
                    "your value ignored"
                )
            elif allowed is not None and not _server_allowed(name, spec, allowed):
                problems.append(
                    f"{where}: mcp_servers.{name}: not among the MCP servers your "
                    f"administrator allows (mcp_allowed_servers in {self.path}); server ignored"
                )
            else:
                kept[name] = spec
        return kept


def layer_origins(
    layers: list[tuple[str, dict[str, Any]]], kinds: dict[str, str], names: set[str]
) -> dict[str, str]:
    """Setting -> the layer that set it: ``managed (<path>)``, ``user (<path>)``,
    ``project (<path>)`` or ``environment (CO_X)``; the settings that add up across layers
    (``permissions``, ``mcp_servers``) name every layer that gave some, joined by ``+``.
    Only ``names`` (what is in force) count; a setting absent is at its default."""
    found: dict[str, list[str]] = {}
    for label, layer in layers:
        for name, value in layer.items():
            if name not in names:
                continue
            if label == "environment":
                origin = f"environment ({env_variable(name)})"
            else:
                origin = f"{kinds.get(label, 'file')} ({label})"
            if name not in _FLOORS:
                found[name] = [origin]
            elif value:
                found.setdefault(name, []).append(origin)
    return {name: " + ".join(origins) for name, origins in found.items()}
