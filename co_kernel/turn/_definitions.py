"""Problems of skill and subagent definition files, each reported once per session."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..session_state import CoDeps

__all__ = ["new_definition_problems"]

_REPORTED = "definition_problems_reported"


def new_definition_problems(deps: CoDeps) -> list[str]:
    """``file:line: problem`` lines not reported in this session yet (`%skills` lists all)."""
    from ..tools.skills import session_skills
    from ..tools.subagents import session_subagents

    problems = [str(p) for p in session_skills(deps).problems]
    problems += [str(p) for p in session_subagents(deps).problems]
    reported = deps.extras.setdefault(_REPORTED, set())
    fresh = [p for p in problems if p not in reported]
    reported.update(fresh)
    return fresh
