"""The system prompt: who Co is in a notebook, plus personality, project instructions
and knowledge files, assembled in that order."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["build_system_prompt", "skills_section", "subagents_section"]

_BASE = """\
You are Co, an assistant in the user's Jupyter notebook. Each notebook cell the user runs \
is one message to you; your answer is rendered as Markdown in the cell below it, and the \
conversation continues across cells.

## Response style
- Be concise and direct; use Markdown (headings, lists, fenced code with a language).
- When the user says "shorter", "again" or "more", they mean your previous answer.
- Say plainly when you do not know, and never invent tool results.

## Tools
- Use a tool only when it helps answer; read-only tools run at once, side-effectful ones \
wait for the user's approval in the cell. If a call is denied, do not retry it as is: \
say what you wanted to do and propose an alternative.
- When a tool result has a `display` field, show it to the user verbatim.
- When a result says `has_more`, tell the user more results exist and offer the next page.
"""

# For tiny local models: a CPU evaluates every prompt token of every turn's first request
# (about 17 tokens/s measured on 2 busy cores), and a 135M model cannot follow the rules
# above anyway.
_COMPACT = """\
You are Co, a helpful assistant in a Jupyter notebook. Answer the user's message \
concisely in Markdown."""

_PERSONALITIES = {
    "friendly": "Tone: warm and encouraging, but never padded.",
    "terse": "Tone: minimal. Answer in as few words as correctness allows.",
    "formal": "Tone: precise and formal.",
}


_SKILLS = """\
## Skills
Skills are instructions for particular kinds of task. When a task matches a skill's \
description, call `load_skill` with its name first and follow what it says."""

_SUBAGENTS = """\
## Subagents
For a self-contained piece of work, call `delegate_task` with a complete task description \
and one of these subagents. It does not see this conversation; it works with its own tools \
and returns a summary."""

_LISTED_CHARS = 200
"""A listed description is cut here: the prompt carries one line per skill or subagent."""


def _listing(heading: str, entries: Sequence[tuple[str, str]]) -> str:
    lines = [heading]
    for name, description in sorted(entries):
        if len(description) > _LISTED_CHARS:
            description = description[: _LISTED_CHARS - 1] + "…"
        lines.append(f"- `{name}`: {description}")
    return "\n".join(lines)


def skills_section(entries: Sequence[tuple[str, str]]) -> str:
    """The list of skills (name, description); empty without any."""
    return _listing(_SKILLS, entries) if entries else ""


def subagents_section(entries: Sequence[tuple[str, str]]) -> str:
    """The list of subagents (name, description); empty without any."""
    return _listing(_SUBAGENTS, entries) if entries else ""


def _read_markdown_files(folder: Path) -> list[tuple[str, str]]:
    if not folder.is_dir():
        return []
    out: list[tuple[str, str]] = []
    for path in sorted(folder.glob("*.md")):
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text:
            out.append((path.stem, text))
    return out


def build_system_prompt(
    *,
    personality: str,
    project_dir: Path | None,
    config_dir: Path,
    extra_sections: Sequence[str] = (),
    compact: bool = False,
    skills: Sequence[tuple[str, str]] = (),
    subagents: Sequence[tuple[str, str]] = (),
) -> str:
    """Assemble the system prompt; later sections take precedence over earlier ones.

    ``compact`` swaps Co's long base section for two sentences (tiny local models).
    ``skills`` and ``subagents`` are (name, one-line description) pairs to list.
    """
    sections = [_COMPACT if compact else _BASE]
    sections.append(_PERSONALITIES.get(personality, f"Tone: {personality}."))
    knowledge = _read_markdown_files(config_dir / "knowledge")
    if project_dir is not None:  # None: the folder is not trusted
        knowledge += _read_markdown_files(project_dir / ".co" / "knowledge")
    if knowledge:
        body = "\n\n".join(f"### {name}\n{text}" for name, text in knowledge)
        sections.append(f"## What you know about the user and the project\n{body}")
    sections.extend(s for s in extra_sections if s)
    sections.append(skills_section(skills))
    sections.append(subagents_section(subagents))
    sections = [s for s in sections if s]
    instructions = project_dir / ".co" / "instructions.md" if project_dir is not None else None
    if instructions is not None and instructions.is_file():
        try:
            text = instructions.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            text = ""
        if text:
            sections.append(f"## Project instructions (take precedence)\n{text}")
    return "\n\n".join(sections)
