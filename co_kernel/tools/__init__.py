"""One toolset per integration.

``collect_toolsets`` builds the toolsets whose configuration is present and reports why
the others are missing (``%tools`` shows it). Each integration module exposes
``build(settings)`` returning a ``ToolsetBuild``, or a list of them when the module holds
integrations that are configured separately (``web``: ``web_search`` and ``web_fetch``).
Installed packages add their own integrations the same way through the
``co_kernel.toolsets`` entry-point group (``name = "module:build"``).

Whatever a toolset's tools raise reaches the model as a readable tool error
(``tools/_errors.py``, applied to the agent as a capability), never as a dead turn.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ..inert import inert_code, inert_text
from ._outbound import OutboundLedger, describe_request, outbound_ledger, result_text

if TYPE_CHECKING:
    from pydantic_ai.toolsets import AbstractToolset

    from ..config import Settings
    from ._errors import ToolError, ToolErrorGuard, ToolErrorKind

__all__ = [
    "ENTRY_POINT_GROUP",
    "OutboundLedger",
    "ToolError",
    "ToolErrorGuard",
    "ToolErrorKind",
    "ToolsetBuild",
    "collect_toolsets",
    "describe_request",
    "outbound_ledger",
    "result_text",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "co_kernel.toolsets"
"""Entry points of installed packages that add toolsets: ``build(settings) -> ToolsetBuild``."""


@dataclass
class ToolsetBuild:
    """The result of building one integration's toolset."""

    name: str
    """Integration name as `%tools` shows it."""
    toolset: AbstractToolset[Any] | None = None
    """The toolset, or None when the integration is not configured."""
    reason: str | None = None
    """Why it is not registered, naming the setting to set."""
    approval: dict[str, bool] = field(default_factory=dict[str, bool])
    """Tool name -> whether it needs approval."""


# Integration modules, in the order their tools are offered to the model.
_INTEGRATIONS: tuple[str, ...] = (
    "shell", "python", "notebook_cells", "files", "notes", "web", "memory", "google", "slack",
    "todos", "skills",
)  # fmt: skip


def collect_toolsets(settings: Settings) -> list[ToolsetBuild]:
    """Build every integration's toolset from settings."""
    import importlib

    builds: list[ToolsetBuild] = []
    for module_name in _INTEGRATIONS:
        module = importlib.import_module(f"{__name__}.{module_name}")
        # Each integration module's `build` makes one ToolsetBuild or a list of them.
        built = cast("ToolsetBuild | list[ToolsetBuild]", module.build(settings))
        builds.extend(built if isinstance(built, list) else [built])
    builds.extend(_plugin_builds(settings))
    return builds


def _plugin_builds(settings: Settings) -> list[ToolsetBuild]:
    """Toolsets from installed plugins; a broken plugin is reported, never fatal."""
    from importlib.metadata import entry_points

    builds: list[ToolsetBuild] = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            build = entry.load()(settings)
        except Exception as exc:
            log.debug("toolset plugin %s failed", entry.value, exc_info=True)
            build = ToolsetBuild(
                entry.name, reason=f"plugin {inert_code(entry.value)} failed: {inert_text(exc)}"
            )
        if not isinstance(build, ToolsetBuild):
            build = ToolsetBuild(
                entry.name, reason=f"plugin {inert_code(entry.value)} returned no ToolsetBuild"
            )
        builds.append(build)
    return builds


def __getattr__(name: str) -> Any:
    # Tool errors load pydantic-ai: with the first toolset or agent, not with the package.
    if name in ("ToolError", "ToolErrorGuard", "ToolErrorKind"):
        from . import _errors

        return getattr(_errors, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
