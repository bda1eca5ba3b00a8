"""The agent's checklist as a MIME bundle: Markdown task list, plain text, JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..inert import inert_text
from ..turn import TodoView

__all__ = ["MIME_TODOS", "todos_bundle", "todos_text"]

MIME_TODOS = "application/vnd.co.todos+json"
_PLAIN = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


def _count(todos: Sequence[TodoView]) -> str:
    done = sum(1 for t in todos if t.status == "completed")
    return f"{done} of {len(todos)} done"


def todos_text(todos: Sequence[TodoView]) -> str:
    """Plain text for consoles and ``text/plain``: one ``[x]``/``[~]``/``[ ]`` line per item."""
    if not todos:
        return "Todos: (empty)"
    lines = [f"Todos · {_count(todos)}"]
    for todo in todos:
        suffix = " (in progress)" if todo.status == "in_progress" else ""
        lines.append(f"  {_PLAIN[todo.status]} {todo.content}{suffix}")
    return "\n".join(lines)


def todos_bundle(todos: Sequence[TodoView]) -> dict[str, Any]:
    """The checklist output: a GFM task list (the item in progress in bold)."""
    if todos:
        lines = [f"**Todos** · {_count(todos)}", ""]
        for todo in todos:
            content = inert_text(todo.content)
            if todo.status == "completed":
                lines.append(f"- [x] ~~{content}~~")
            elif todo.status == "in_progress":
                lines.append(f"- [ ] **{content}** ⏳")
            else:
                lines.append(f"- [ ] {content}")
        markdown = "\n".join(lines)
    else:
        markdown = "**Todos** · the list is empty"
    return {
        MIME_TODOS: {"todos": [{"content": t.content, "status": t.status} for t in todos]},
        "text/markdown": markdown,
        "text/plain": todos_text(todos),
    }
