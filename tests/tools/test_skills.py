"""Skills through a real kernel: listed in the system prompt, loaded on demand, resources
read without escaping the skill's folder, broken files reported once, `%skills`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from co_kernel.frontend import MIME_TOOL_CALL

from ..support.scripted import call_step


def write_skill(folder: Path, name: str, text: str) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


CLEANING = """---
name: data-cleaning
description: Clean tabular data before any analysis.
---
# Data cleaning
1. Drop duplicate rows.
2. Report the null counts per column.
"""


@pytest.fixture
def skills(co_home: Path, workspace: Path, tmp_path: Path) -> dict[str, Path]:
    user = co_home / "config" / "skills"
    project = workspace / ".co" / "skills"
    write_skill(user, "greet", "---\nname: greet\ndescription: User greeting\n---\nSay hi.\n")
    write_skill(user, "haiku", "---\nname: haiku\ndescription: Answer in a haiku.\n---\n5-7-5.\n")
    write_skill(project, "greet", "---\nname: greet\ndescription: Project greeting\n---\nHey.\n")
    cleaning = write_skill(project, "data-cleaning", CLEANING)
    (cleaning.parent / "templates").mkdir()
    (cleaning.parent / "templates" / "checklist.md").write_text("- [ ] nulls checked\n")
    broken = write_skill(project, "broken", "---\nname: broken\ndescription: [oops\n---\nbody\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    return {"broken": broken, "cleaning": cleaning}


def test_skills_are_listed_loaded_and_their_resources_read(kernel, model_server, skills):
    model_server.extend(
        [
            {
                "expect": {
                    "system_contains": "- `data-cleaning`: Clean tabular data before any analysis.",
                    "tools_include": ["load_skill", "read_skill_resource"],
                },
                **call_step("load_skill", name="data-cleaning"),
            },
            {
                "expect": {"tool_result_contains": "2. Report the null counts per column."},
                **call_step(
                    "read_skill_resource", name="data-cleaning", path="templates/checklist.md"
                ),
            },
            {
                "expect": {"tool_result_contains": "- [ ] nulls checked"},
                **call_step(
                    "read_skill_resource", name="data-cleaning", path="../../../../secret.txt"
                ),
            },
            {
                "expect": {"tool_result_contains": "is not a file of the skill 'data-cleaning'"},
                **call_step("load_skill", name="nope"),
            },
            {
                "expect": {
                    "tool_result_contains": "Available skills: `data-cleaning`, `greet`, `haiku`."
                },
                "text": "Cleaned.",
            },
        ]
    )
    result = kernel.execute("Clean data.csv")
    assert result.status == "ok" and model_server.errors == []
    system = json.dumps(model_server.requests[0]["messages"][0])
    assert "Project greeting" in system and "User greeting" not in system
    assert "broken" not in system
    results = [
        m["content"] for r in model_server.requests for m in r["messages"] if m["role"] == "tool"
    ]
    assert "- templates/checklist.md" in results[0]  # load_skill lists the resources
    assert not any("TOP SECRET" in str(r) for r in results)
    cards = [d[MIME_TOOL_CALL] for d in result.final_displays().values() if MIME_TOOL_CALL in d]
    assert [(c["tool"], c["status"]) for c in cards] == [
        ("load_skill", "ok"),
        ("read_skill_resource", "ok"),
        ("read_skill_resource", "error"),
        ("load_skill", "error"),
    ]
    # The broken file is reported in the cell, with its file and line, once.
    assert f"{skills['broken']}:3: invalid YAML front-matter" in result.markdown()
    model_server.extend([{"text": "Again."}])
    again = kernel.execute("Hello")
    assert again.status == "ok" and "broken" not in again.markdown()


def test_no_skills_no_tools_and_no_prompt_section(kernel, model_server):
    model_server.extend(
        [{"expect": {"tools_exclude": ["load_skill", "read_skill_resource"]}, "text": "Hi."}]
    )
    assert kernel.execute("Hello").status == "ok"
    assert model_server.errors == []
    assert "## Skills" not in json.dumps(model_server.requests[0]["messages"][0])


def test_percent_skills_lists_name_description_source_and_problems(kernel, skills, co_home):
    result = kernel.execute("%skills")
    assert result.status == "ok"
    text = result.markdown()
    assert "**Skills** (3)" in text
    assert (
        "| `data-cleaning` | Clean tabular data before any analysis. | project | "
        "`data-cleaning/SKILL.md` |" in text
    )
    assert f"Folders: user `{co_home / 'config' / 'skills'}`, project `" in text
    assert "| `greet` | Project greeting | project |" in text
    assert "| `haiku` | Answer in a haiku. | user |" in text
    assert "Hidden by a project skill of the same name: `greet`" in text
    assert f"`{skills['broken']}:3`: invalid YAML front-matter" in text
    help_text = kernel.execute("%help").markdown()
    assert "| `%skills` |" in help_text
    tools = kernel.execute("%tools").markdown()
    for name in ("load_skill", "read_skill_resource", "write_todos", "read_todos"):
        assert f"| `{name}` |" in tools
    # Offered only when a subagent is defined, and %tools lists what the model is offered.
    assert "| `delegate_task` |" not in tools
