"""Skills: packages of instructions the agent loads on demand (the Agent Skills format).

A skill is a folder with a ``SKILL.md`` (front-matter ``name`` and ``description``, body =
instructions) and any resource files beside it. Skills are found in
``<config dir>/skills/*/SKILL.md`` (the user's) and ``<notebook dir>/.co/skills/*/SKILL.md``
(the project's, which win on a name clash). The system prompt lists each skill's one-line
description; ``load_skill`` returns the instructions and the resource list,
``read_skill_resource`` one resource file, never anything outside the skill's folder.

Discovery reads the folders again for every request, so a skill written during a session
is there on the next one. A file that cannot be parsed is reported (file:line) once in the
cell and in `%skills`; the other skills still load.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from ..exceptions import DefinitionError, TextFileError
from ..session_state import CoDeps  # at run time: pydantic-ai reads the tools' annotations
from . import ToolsetBuild
from ._frontmatter import read_definition
from ._scope import Protection, Root, Scope, in_scope, read_text, walk
from ._textfile import settled_realpath

if TYPE_CHECKING:
    from pydantic_ai.tools import ToolDefinition

    from ..config import Settings

__all__ = [
    "Skill",
    "SkillCatalog",
    "build",
    "discover_skills",
    "load_skill",
    "prompt_entries",
    "read_skill_resource",
    "session_skills",
]

SKILL_FILE = "SKILL.md"
MAX_RESOURCES = 100


@dataclass(frozen=True)
class Skill:
    """One discovered skill."""

    name: str
    """What ``load_skill`` is called with."""
    description: str
    """One line: when to use it."""
    path: Path
    """Its ``SKILL.md``."""
    source: Literal["user", "project"]
    """user: ``<config dir>/skills``; project: ``.co/skills`` beside the notebook."""

    @property
    def root(self) -> Path:
        """The skill's folder: the only place ``read_skill_resource`` reads from."""
        return self.path.parent

    @property
    def anchor(self) -> Path:
        """The config dir (user skills) or the notebook's folder (project skills): the only
        folder resolved; the skill folders below it are opened as named, without following
        links, so a skill folder in the workspace swapped for a link to elsewhere is refused
        rather than read as the skill (a skill folder that is itself a link is unreadable)."""
        return self.root.parent.parent if self.source == "user" else self.root.parents[2]

    def instructions(self, protection: Protection | None = None) -> str:
        """The body of ``SKILL.md``, read now (so an edit shows on the next load), by
        descriptor like its resources."""
        return read_definition(self.path, self.anchor, protection).body

    def scope(self, protection: Protection) -> Scope:
        """The skill's folder as the only root: resources are read through the scope guard."""
        anchor = self.anchor
        path = Path(os.path.realpath(anchor)) / self.root.relative_to(anchor)
        return Scope(
            (Root(path, f"skill {self.name!r}", frozenset({"read"})),), protection=protection
        )

    def resources(self, scope: Scope | None = None) -> list[str]:
        """Files in the skill's folder besides ``SKILL.md``, as relative POSIX paths.

        Hidden files and folders are left out; the folder is walked by descriptor (with
        ``scope``'s protection, by default only the ``.env`` rule).
        """
        scope = scope or self.scope(Protection())
        found = sorted(rel for rel, _ in walk(scope, scope.roots[0]) if rel != SKILL_FILE)
        return found[:MAX_RESOURCES]


@dataclass
class SkillCatalog:
    """The skills of a session, and the files that could not be read."""

    skills: dict[str, Skill] = field(default_factory=dict[str, Skill])
    """By name; a project skill replaces a user skill of the same name."""
    shadowed: list[Skill] = field(default_factory=list[Skill])
    """User skills hidden by a project skill of the same name."""
    problems: list[DefinitionError] = field(default_factory=list[DefinitionError])
    """One per unusable ``SKILL.md``, with file and line."""


def skill_folders(
    config_dir: Path, project_dir: Path | None
) -> list[tuple[Literal["user", "project"], Path]]:
    """Where skills are looked for, lowest precedence first (``project_dir`` None: the
    folder is not trusted, so its skills are not)."""
    folders: list[tuple[Literal["user", "project"], Path]] = [("user", config_dir / "skills")]
    if project_dir is not None:
        folders.append(("project", project_dir / ".co" / "skills"))
    return folders


def discover_skills(config_dir: Path, project_dir: Path | None) -> SkillCatalog:
    """Every ``*/SKILL.md`` of the user and project skill folders, read by descriptor
    (``read_definition``): a folder or file swapped for a link meanwhile is refused."""
    catalog = SkillCatalog()
    anchors = {"user": config_dir, "project": project_dir or config_dir}
    for source, folder in skill_folders(config_dir, project_dir):
        if not folder.is_dir():
            continue
        seen: dict[str, Path] = {}
        for path in sorted(folder.glob(f"*/{SKILL_FILE}")):
            try:
                definition = read_definition(path, anchors[source])
                name = definition.name()
                description = definition.text("description", required=True) or ""
            except DefinitionError as exc:
                catalog.problems.append(exc)
                continue
            if name in seen:
                catalog.problems.append(
                    DefinitionError(
                        path,
                        definition.lines.get("name", 1),
                        f"skill name {name!r} is also used by {seen[name]}; this one is ignored",
                    )
                )
                continue
            seen[name] = path
            skill = Skill(name, description, path, source)
            previous = catalog.skills.get(name)
            if previous is not None:
                catalog.shadowed.append(previous)
            catalog.skills[name] = skill
    return catalog


def session_skills(deps: CoDeps) -> SkillCatalog:
    """The skills the session's agent sees."""
    from ..config import paths

    return discover_skills(paths().config_dir, deps.project)


def prompt_entries(deps: CoDeps) -> list[tuple[str, str]]:
    """(name, description) of each skill, for the system prompt's list."""
    return [(s.name, s.description) for s in session_skills(deps).skills.values()]


def _find(ctx: RunContext[CoDeps], name: str) -> Skill:
    skills = session_skills(ctx.deps).skills
    skill = skills.get(name.strip())
    if skill is None:
        available = ", ".join(f"`{n}`" for n in sorted(skills)) or "none"
        raise ModelRetry(f"There is no skill named {name!r}. Available skills: {available}.")
    return skill


async def load_skill(ctx: RunContext[CoDeps], name: str) -> str:
    """Load a skill's full instructions (and the list of its resource files) by name.

    Args:
        name: The skill's name, as listed under Skills in the instructions.
    """
    skill = _find(ctx, name)
    scope = skill.scope(Protection.of(ctx.deps.settings, ctx.deps.workspace))
    try:
        body = skill.instructions(scope.protection)
    except DefinitionError as exc:
        raise ModelRetry(f"The skill {name!r} cannot be read now: {exc}") from None
    parts = [f"# Skill: {skill.name}\n\n{body or '(no instructions)'}"]
    resources = skill.resources(scope)
    if resources:
        listed = "\n".join(f"- {r}" for r in resources)
        parts.append(
            f"## Resource files\nRead one with `read_skill_resource(name={skill.name!r}, "
            f"path=...)`:\n{listed}"
        )
    return "\n\n".join(parts)


async def read_skill_resource(ctx: RunContext[CoDeps], name: str, path: str) -> str:
    """Read one resource file of a skill (a path relative to the skill's folder).

    Args:
        name: The skill's name.
        path: The file, as listed by `load_skill`, e.g. `templates/report.md`.
    """
    skill = _find(ctx, name)
    scope = skill.scope(Protection.of(ctx.deps.settings, ctx.deps.workspace))
    root = scope.roots[0]
    # realpath resolves `..` and symlinks, so nothing outside the skill's folder is named;
    # the file is then opened by descriptor, so nothing swapped in meanwhile is reached.
    try:
        target = Path(settled_realpath(root.path / path)) if path.strip() else root.path
    except TextFileError as exc:
        raise ModelRetry(f"Refused: {exc}.") from None
    if Path(path).is_absolute() or not target.is_relative_to(root.path) or target == root.path:
        raise ModelRetry(
            f"{path!r} is not a file of the skill {skill.name!r}; use a relative path that "
            "`load_skill` listed."
        )
    rel = target.relative_to(root.path).as_posix()
    reason = in_scope(scope, root, rel, "read")
    if reason is not None:
        raise ModelRetry(f"Refused: {reason}.")
    try:
        return read_text(scope, root, rel, ctx.deps.settings.file_max_bytes, shown=path)
    except (FileNotFoundError, IsADirectoryError):
        listed = ", ".join(skill.resources(scope)[:20]) or "none"
        raise ModelRetry(
            f"The skill {skill.name!r} has no file {path!r}. Its files: {listed}."
        ) from None
    except TextFileError as exc:
        raise ModelRetry(f"Refused: {exc}.") from None


async def _only_with_skills(
    ctx: RunContext[CoDeps], tool_def: ToolDefinition
) -> ToolDefinition | None:
    """Offer the skill tools only when there is a skill to load."""
    return tool_def if session_skills(ctx.deps).skills else None


def build(settings: Settings) -> ToolsetBuild:
    """The skills toolset; always registered, offered when a skill exists. Read-only."""
    toolset: FunctionToolset[CoDeps] = FunctionToolset()
    toolset.add_function(load_skill, prepare=_only_with_skills)
    toolset.add_function(read_skill_resource, prepare=_only_with_skills)
    return ToolsetBuild(
        "skills", toolset, approval={"load_skill": False, "read_skill_resource": False}
    )
