"""Todos: the agent's checklist for multi-step work, shown to the person as it changes.

``write_todos`` replaces the whole list (the model sends every item with its status each
time), ``read_todos`` reads it back. The list lives in ``CoDeps.todos``, so it survives
across the turns of a session; `%clear` empties it. The turn notices the change and the
frontend shows the checklist, updated in place in a notebook.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from ..session_state import CoDeps, Todo  # at run time: pydantic-ai reads the tools' annotations
from . import ToolsetBuild

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from ..config import Settings

__all__ = [
    "TodoItem",
    "build",
    "format_todos",
    "read_todos",
    "todos_from_history",
    "write_todos",
]

MAX_ITEMS = 50
MAX_CONTENT = 500
_MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


class TodoItem(BaseModel):
    """One step of the plan."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="What is to be done, as a short imperative sentence.")
    status: Literal["pending", "in_progress", "completed"] = Field(
        "pending", description="pending, in_progress (at most one at a time) or completed."
    )


def format_todos(todos: Sequence[Todo]) -> str:
    """The checklist as text: a ``[x]``/``[~]``/``[ ]`` line per item and a count."""
    if not todos:
        return "The todo list is empty."
    done = sum(1 for t in todos if t["status"] == "completed")
    lines = [f"Todos: {done} of {len(todos)} completed"]
    for number, todo in enumerate(todos, 1):
        lines.append(f"{number}. {_MARKS[todo['status']]} {todo['content']}")
    return "\n".join(lines)


def _check(items: list[TodoItem]) -> list[Todo]:
    if len(items) > MAX_ITEMS:
        raise ModelRetry(f"{len(items)} items is too many; keep the plan to {MAX_ITEMS} steps.")
    todos: list[Todo] = []
    for number, item in enumerate(items, 1):
        content = " ".join(item.content.split())
        if not content:
            raise ModelRetry(f"Item {number} has no `content`; say what the step is.")
        if len(content) > MAX_CONTENT:
            raise ModelRetry(f"Item {number} is over {MAX_CONTENT} characters; shorten it.")
        todos.append(Todo(content=content, status=item.status))
    active = [n for n, t in enumerate(todos, 1) if t["status"] == "in_progress"]
    if len(active) > 1:
        raise ModelRetry(
            f"Items {', '.join(map(str, active))} are all `in_progress`; mark only the step "
            "you are working on now as in_progress, the others pending or completed."
        )
    return todos


async def write_todos(ctx: RunContext[CoDeps], items: list[TodoItem]) -> str:
    """Replace the todo list that tracks a multi-step task; send every item each time.

    Use it for work of three or more steps: write the plan first, mark one step
    `in_progress` when you start it and `completed` as soon as it is done. An empty list
    clears the checklist.

    Args:
        items: The whole list, in order, each with `content` and `status`.
    """
    todos = _check(items)
    # In place: the deps object is shared with everything holding the session's list.
    ctx.deps.todos[:] = todos
    return format_todos(todos)


def todos_from_history(messages: Sequence[ModelMessage]) -> list[Todo]:
    """The checklist a conversation left: the last ``write_todos`` call that ran (it got a
    return that is no retry prompt), read again; empty when there is none (or it was
    compacted away). ``%resume`` restores the list with it."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolReturnPart

    returned = {
        part.tool_call_id
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "write_todos"
    }
    for message in reversed(messages):
        if not isinstance(message, ModelResponse):
            continue
        for part in reversed(message.tool_calls):
            if part.tool_name != "write_todos" or part.tool_call_id not in returned:
                continue
            try:
                items = [TodoItem.model_validate(i) for i in part.args_as_dict().get("items", [])]
                return _check(items)
            except (ValueError, TypeError, ModelRetry):
                continue  # a call that was refused: look further back
    return []


async def read_todos(ctx: RunContext[CoDeps]) -> str:
    """Read the current todo list with each item's status."""
    return format_todos(ctx.deps.todos)


def build(settings: Settings) -> ToolsetBuild:
    """The todo toolset; always available, nothing to approve (it only changes the checklist)."""
    toolset: FunctionToolset[CoDeps] = FunctionToolset()
    toolset.add_function(write_todos)
    toolset.add_function(read_todos)
    return ToolsetBuild("todos", toolset, approval={"write_todos": False, "read_todos": False})
