"""Subagent definitions: the agents ``delegate_task`` may hand one task to.

A subagent is defined in settings (``subagents``: name, description, instructions,
model, tools) or in ``<notebook dir>/.co/agents/<name>.md`` (front-matter ``name``,
``description``, ``model``, ``tools``; body = instructions), the file winning on a name
clash. ``model`` defaults to the session's model; ``tools`` lists the tool names it may
call (absent: all of Co's; ``[]``: none). ``delegate_task`` and the run itself belong to
the turn (``turn/_subagent.py``): running an agent is the turn's job, not a tool's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import parse_model_string
from ..exceptions import DefinitionError
from ._frontmatter import read_definition

if TYPE_CHECKING:
    from ..config import Settings
    from ..session_state import CoDeps

__all__ = [
    "DELEGATE_TOOL",
    "SubagentCatalog",
    "SubagentSpec",
    "can_delegate",
    "discover_subagents",
    "prompt_entries",
    "session_subagents",
]

DELEGATE_TOOL = "delegate_task"


@dataclass(frozen=True)
class SubagentSpec:
    """One subagent definition."""

    name: str
    """What ``delegate_task`` is called with."""
    description: str
    """One line: what it is good at."""
    instructions: str
    """Its instructions (system prompt)."""
    model: str | None = None
    """provider:model; None = the session's model."""
    tools: tuple[str, ...] | None = None
    """Tool names it may call; None = all of Co's."""
    source: str = "settings"
    """``settings`` or the definition file's path."""


@dataclass
class SubagentCatalog:
    """The subagents of a session and the definitions that could not be read."""

    agents: dict[str, SubagentSpec] = field(default_factory=dict[str, SubagentSpec])
    """By name."""
    problems: list[DefinitionError] = field(default_factory=list[DefinitionError])
    """One per unusable ``.co/agents/*.md``, with file and line."""


def _from_file(path: Path, project_dir: Path) -> SubagentSpec:
    definition = read_definition(path, project_dir)
    name = definition.name()
    description = definition.text("description", required=True) or ""
    model = definition.text("model", required=False) or None
    if model is not None:
        try:
            parse_model_string(model)
        except Exception as exc:  # ConfigError or ValueError: the message names the fix
            raise definition.error("model", f"`model` {model!r}: {exc}") from None
    tools = definition.names("tools")
    return SubagentSpec(name, description, definition.body, model, tools, str(path))


def discover_subagents(settings: Settings, project_dir: Path | None) -> SubagentCatalog:
    """Subagents from settings, then ``.co/agents/*.md`` (a file replaces a setting;
    ``project_dir`` None: the folder is not trusted, so its files are not read)."""
    catalog = SubagentCatalog()
    for entry in settings.subagents:
        catalog.agents[entry.name] = SubagentSpec(
            entry.name,
            " ".join(entry.description.split()),
            entry.instructions,
            entry.model,
            tuple(entry.tools) if entry.tools is not None else None,
        )
    folder = project_dir / ".co" / "agents" if project_dir is not None else None
    if project_dir is not None and folder is not None and folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            try:
                spec = _from_file(path, project_dir)
            except DefinitionError as exc:
                catalog.problems.append(exc)
                continue
            catalog.agents[spec.name] = spec
    return catalog


def session_subagents(deps: CoDeps) -> SubagentCatalog:
    """The subagents the session's agent may delegate to."""
    return discover_subagents(deps.settings, deps.project)


def can_delegate(deps: CoDeps) -> bool:
    """Whether an agent at ``deps.depth`` may start another subagent."""
    return deps.depth < deps.settings.subagent_max_depth


def prompt_entries(deps: CoDeps) -> list[tuple[str, str]]:
    """(name, description) of each subagent this agent may delegate to, for the prompt."""
    if not can_delegate(deps):
        return []
    return [(a.name, a.description) for a in session_subagents(deps).agents.values()]
