"""One toolset per integration.

``collect_toolsets`` builds the toolsets whose configuration is present and reports why
the others are missing (``%tools`` shows it). Each integration module exposes
``build(settings) -> ToolsetBuild``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_ai.toolsets import AbstractToolset

    from ..config import Settings

__all__ = ["ToolsetBuild", "collect_toolsets"]


@dataclass
class ToolsetBuild:
    """The result of building one integration's toolset."""

    name: str
    """Integration name as `%tools` shows it."""
    toolset: AbstractToolset[Any] | None = None
    """The toolset, or None when the integration is not configured."""
    reason: str | None = None
    """Why it is not registered, naming the setting to set."""
    approval: dict[str, bool] = field(default_factory=dict)
    """Tool name -> whether it needs approval."""


# Integration modules, in the order their tools are offered to the model.
_INTEGRATIONS: tuple[str, ...] = ("shell", "python", "google", "slack")


def collect_toolsets(settings: Settings) -> list[ToolsetBuild]:
    """Build every integration's toolset from settings."""
    import importlib

    builds = []
    for module_name in _INTEGRATIONS:
        module = importlib.import_module(f"{__name__}.{module_name}")
        builds.append(module.build(settings))
    return builds
