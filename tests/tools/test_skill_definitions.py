"""Skill and subagent definition files: front-matter parsing, discovery, precedence, errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from co_kernel.config import Settings, SubagentSetting
from co_kernel.exceptions import DefinitionError
from co_kernel.tools._frontmatter import parse_definition
from co_kernel.tools.skills import discover_skills
from co_kernel.tools.subagents import discover_subagents


def skill(folder: Path, name: str, text: str) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


GOOD = "---\nname: data-cleaning\ndescription: Clean tabular\n  data files.\n---\n# Steps\nDrop duplicates.\n"


def test_front_matter_and_body_are_split_with_key_lines() -> None:
    parsed = parse_definition(Path("SKILL.md"), GOOD)
    assert parsed.name() == "data-cleaning"
    assert parsed.text("description", required=True) == "Clean tabular data files."
    assert parsed.body == "# Steps\nDrop duplicates."
    assert parsed.lines == {"name": 2, "description": 3}


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("# Just a heading\n", 1, "no front-matter"),
        ("---\nname: x\ndescription: y\n", 1, "never closed"),
        ("---\nname: x\ndescription: [unclosed\n---\n", 3, "invalid YAML front-matter"),
        ("---\nname: x\n  bad: indent: here\n---\n", 3, "invalid YAML front-matter"),
        ("---\n- a\n- b\n---\n", 2, "must be `key: value` lines"),
        ("---\ndescription: y\n---\nbody\n", 1, "has no `name:`"),
        ("---\nname: x\n---\nbody\n", 1, "has no `description:`"),
        ("---\ndescription: y\nname: has spaces\n---\n", 3, "`name` 'has spaces' must be"),
        ("---\nname: x\ndescription:\n  key: value\n---\n", 3, "`description` must be text"),
    ],
)
def test_malformed_front_matter_names_the_line(text: str, line: int, message: str) -> None:
    path = Path("/skills/x/SKILL.md")
    with pytest.raises(DefinitionError) as caught:
        parsed = parse_definition(path, text)
        parsed.name()
        parsed.text("description", required=True)
    assert caught.value.line == line
    assert message in caught.value.message
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_discovery_project_wins_and_a_broken_skill_does_not_stop_the_rest(tmp_path: Path) -> None:
    config, project = tmp_path / "config", tmp_path / "project"
    user_skills, project_skills = config / "skills", project / ".co" / "skills"
    skill(user_skills, "greet", "---\nname: greet\ndescription: User greeting\n---\nHi.\n")
    skill(user_skills, "solo", "---\nname: solo\ndescription: Only the user's\n---\n")
    skill(project_skills, "greet", "---\nname: greet\ndescription: Project greeting\n---\nHey.\n")
    broken = skill(project_skills, "broken", "---\nname: broken\ndescription: 'unterminated\n---\n")
    skill(project_skills, "data-cleaning", GOOD)
    (project_skills / "data-cleaning" / "templates").mkdir()
    (project_skills / "data-cleaning" / "templates" / "checklist.md").write_text("- [ ] nulls\n")
    (project_skills / "not-a-skill").mkdir()  # no SKILL.md: not a skill, not a problem

    catalog = discover_skills(config, project)

    assert sorted(catalog.skills) == ["data-cleaning", "greet", "solo"]
    assert catalog.skills["greet"].description == "Project greeting"
    assert catalog.skills["greet"].source == "project"
    assert catalog.skills["solo"].source == "user"
    assert [s.description for s in catalog.shadowed] == ["User greeting"]
    [problem] = catalog.problems
    assert problem.path == broken and problem.line == 3
    assert "invalid YAML" in problem.message
    cleaning = catalog.skills["data-cleaning"]
    assert cleaning.instructions() == "# Steps\nDrop duplicates."
    assert cleaning.resources() == ["templates/checklist.md"]


def test_two_skills_of_one_name_in_one_folder_keep_the_first(tmp_path: Path) -> None:
    folder = tmp_path / "project" / ".co" / "skills"
    skill(folder, "a", "---\nname: same\ndescription: first\n---\n")
    second = skill(folder, "b", "---\nname: same\ndescription: second\n---\n")
    catalog = discover_skills(tmp_path / "config", tmp_path / "project")
    assert catalog.skills["same"].description == "first"
    [problem] = catalog.problems
    assert (problem.path, problem.line) == (second, 2)
    assert "also used by" in problem.message


def test_subagents_from_settings_and_files_the_file_wins(tmp_path: Path) -> None:
    agents = tmp_path / ".co" / "agents"
    agents.mkdir(parents=True)
    (agents / "researcher.md").write_text(
        "---\nname: researcher\ndescription: Looks things up\nmodel: compat:other\n"
        "tools: [run_shell_command, read_file]\n---\nBe precise.\n"
    )
    (agents / "bad.md").write_text("---\nname: bad\ndescription: x\nmodel: nosuch:model\n---\n")
    (agents / "tools.md").write_text("---\nname: tools\ndescription: x\ntools: {a: 1}\n---\n")
    settings = Settings(
        subagents=[
            SubagentSetting(name="researcher", description="from settings"),
            SubagentSetting(name="writer", description="Writes prose", tools=[]),
        ]
    )
    catalog = discover_subagents(settings, tmp_path)
    assert sorted(catalog.agents) == ["researcher", "writer"]
    researcher = catalog.agents["researcher"]
    assert researcher.description == "Looks things up"
    assert researcher.model == "compat:other"
    assert researcher.tools == ("run_shell_command", "read_file")
    assert researcher.instructions == "Be precise."
    assert researcher.source == str(agents / "researcher.md")
    assert catalog.agents["writer"].tools == ()
    problems = {p.path.name: p for p in catalog.problems}
    assert problems["bad.md"].line == 4 and "`model` 'nosuch:model'" in problems["bad.md"].message
    assert problems["tools.md"].line == 4 and "list of names" in problems["tools.md"].message


def test_definitions_that_are_links_or_hard_links_to_outside_files_are_refused(
    tmp_path: Path,
) -> None:
    """Discovery reads by descriptor: a SKILL.md or agent file that is a link (hard or
    symbolic) to a file elsewhere is reported, never read into the prompt."""
    project, config = tmp_path / "project", tmp_path / "config"
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: leaked\ndescription: OUTSIDE-TEXT\n---\nOUTSIDE-TEXT\n")
    hard = project / ".co" / "skills" / "hard" / "SKILL.md"
    soft = project / ".co" / "skills" / "soft" / "SKILL.md"
    agent = project / ".co" / "agents" / "agent.md"
    for path in (hard, soft, agent):
        path.parent.mkdir(parents=True)
    os.link(outside, hard)
    soft.symlink_to(outside)
    os.link(outside, agent)
    skill(project / ".co" / "skills", "fine", GOOD)

    skills = discover_skills(config, project)
    agents = discover_subagents(Settings(), project)

    assert list(skills.skills) == ["data-cleaning"]
    assert agents.agents == {}
    problems = {e.path.parent.name: e.message for e in skills.problems + agents.problems}
    assert "hard links" in problems["hard"] and "hard links" in problems["agents"]
    assert "link" in problems["soft"]
    assert "OUTSIDE" not in str(problems)
