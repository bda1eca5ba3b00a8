"""List the skills Co can load (and the subagents it can delegate to), with their files.

Skills are folders with a `SKILL.md` in `<config dir>/skills/` (yours) and in
`.co/skills/` beside the notebook (the project's, which win on a name clash). Co sees
each skill's one-line description and loads the instructions when a task needs them.
Subagents come from the `subagents` setting and `.co/agents/*.md`. Files that could not
be read are listed with the file and line of the problem.
"""

from __future__ import annotations

from ..inert import inert_text
from . import MagicContext, MagicError
from ._render import code, table

USAGE = "%skills"


def _where(path: str, home: str) -> str:
    return path.replace(home, "~", 1) if home and path.startswith(home) else path


async def run(ctx: MagicContext, args: str) -> str:
    from pathlib import Path

    from ..config import paths
    from ..tools.skills import discover_skills, skill_folders
    from ..tools.subagents import discover_subagents

    if args:
        raise MagicError(f"%skills takes no arguments (got '{args}').")
    session = ctx.session
    config_dir = paths().config_dir
    home = str(Path.home())
    catalog = discover_skills(config_dir, session.project)
    folders = dict(skill_folders(config_dir, session.project))
    parts = []
    if catalog.skills:
        # Each file relative to its skills folder keeps the table narrow; the folders are
        # spelled out below it.
        rows = [
            (
                code(s.name),
                s.description,
                s.source,
                code(s.path.relative_to(folders[s.source]).as_posix()),
            )
            for s in sorted(catalog.skills.values(), key=lambda s: s.name)
        ]
        where = ", ".join(f"{source} {code(_where(str(f), home))}" for source, f in folders.items())
        parts.append(
            f"**Skills** ({len(rows)})\n\n"
            + table(["skill", "description", "from", "file"], rows)
            + f"\n\nFolders: {where}."
        )
    else:
        looked = " and ".join(
            code(f"{_where(str(folder), home)}/<name>/SKILL.md") for folder in folders.values()
        )
        parts.append(f"No skills yet. Co looks for {looked}.")
    if catalog.shadowed:
        hidden = ", ".join(
            f"{code(s.name)} ({code(_where(str(s.path), home))})" for s in catalog.shadowed
        )
        parts.append(f"Hidden by a project skill of the same name: {hidden}.")
    agents = discover_subagents(session.settings, session.project)
    if agents.agents:
        agent_rows = [
            (
                code(a.name),
                a.description,
                a.model or "session model",
                ", ".join(a.tools) if a.tools is not None else "all of Co's",
                _where(a.source, home),
            )
            for a in sorted(agents.agents.values(), key=lambda a: a.name)
        ]
        note = (
            ""
            if session.can_delegate
            else "\n\n*Delegation is off: setting `subagent_max_depth` is 0.*"
        )
        parts.append(
            f"**Subagents** ({len(agent_rows)})\n\n"
            + table(["subagent", "description", "model", "tools", "from"], agent_rows)
            + note
        )
    problems = [*catalog.problems, *agents.problems]
    if problems:
        lines = "\n".join(
            f"- {code(f'{_where(str(p.path), home)}:{p.line}')}: {inert_text(p.message)}"
            for p in problems
        )
        parts.append(f"**Skipped files** ({len(problems)})\n\n{lines}")
    return "\n\n".join(parts)
