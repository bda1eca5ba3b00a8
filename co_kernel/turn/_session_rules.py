"""The permission rules of one session, as `%permissions`, `%allow` and `%tools` see them.

The rule functions load pydantic-ai: imported when a magic asks, not with the kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import PermissionRule
    from ..session_state import CoDeps

__all__ = ["SessionRules"]


class SessionRules:
    """The rules of the settings layers and of the session, and a project's consent."""

    def __init__(self, deps: CoDeps) -> None:
        self._deps = deps

    @property
    def listed(self) -> list[PermissionRule]:
        """Every rule, in force or waiting for consent: the settings', then the session's."""
        return [*self._deps.settings.permissions, *self._deps.session_rules]

    def in_force(self) -> list[PermissionRule]:
        """The rules that decide calls now (a project's allow rules once accepted)."""
        from ..permissions import active_rules

        return active_rules(self._deps)

    def waiting(self) -> list[PermissionRule]:
        """The project file's allow rules that wait for `%permissions accept`."""
        from ..permissions import pending_project_rules

        return pending_project_rules(self._deps)

    def accept_project(self) -> list[PermissionRule]:
        """Accept the project's allow rules as they are now; returns the rules accepted."""
        from ..permissions import accept_project_rules

        return accept_project_rules(self._deps)

    def add(self, rule: PermissionRule) -> None:
        """A rule for the rest of the session (`%allow`, `%ask`, `%deny`)."""
        if rule not in self._deps.session_rules:
            self._deps.session_rules.append(rule)
