"""Problems of skill and subagent definition files, each reported once per session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..session_state import ExtrasKey

if TYPE_CHECKING:
    from ..session_state import CoDeps

__all__ = ["new_definition_problems"]

_REPORTED = ExtrasKey[set[str]]("definition_problems_reported")


def new_definition_problems(deps: CoDeps) -> list[str]:
    """``file:line: problem`` lines not reported in this session yet (`%skills` lists all)."""
    from ..tools.skills import session_skills
    from ..tools.subagents import session_subagents

    problems = [str(p) for p in session_skills(deps).problems]
    problems += [str(p) for p in session_subagents(deps).problems]
    reported = deps.extras.get_or_create(_REPORTED, set[str])
    fresh = [p for p in problems if p not in reported]
    reported.update(fresh)
    return fresh
