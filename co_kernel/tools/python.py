"""Python in the notebook: run code in the kernel's namespace, inspect variables,
and see what recently happened in the notebook.

`run_python` runs on the host, in this kernel's own process, not in the sandbox: it
asks for approval every time unless the session is in yolo mode, and the card says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Tool signatures are read at run time by pydantic-ai, so these imports are real ones;
# tool modules are imported only when the first turn builds the agent.
from pydantic_ai import RunContext

from ..session_state import CoDeps
from . import ToolsetBuild

if TYPE_CHECKING:
    from ..config import Settings
    from ..notebook import NotebookContext

__all__ = ["build"]

HOST_WARNING = "Runs on the host, in this kernel's Python namespace (not in the sandbox)."


def _notebook(ctx: RunContext[CoDeps]) -> NotebookContext:
    notebook = ctx.deps.notebook
    if notebook is None:
        from pydantic_ai import ModelRetry

        raise ModelRetry(
            "No notebook Python namespace is available here; do not call Python tools."
        )
    return notebook


async def run_python(ctx: RunContext[CoDeps], code: str) -> Any:
    """Run Python code in the notebook's namespace (variables persist across calls and
    with the user's `%%python` cells). Returns what it printed, the value of the last
    expression and any error; what it displays (a matplotlib figure, also one left open,
    a DataFrame, an image) is drawn in the cell, and figures come back as images.
    Needs the user's approval."""
    from pydantic_ai.exceptions import ApprovalRequired

    if not ctx.tool_call_approved:
        raise ApprovalRequired(metadata={"detail": f"{HOST_WARNING}\n\n{code}"})
    run = await _notebook(ctx).run_tool_code(code)
    if run.outputs and ctx.tool_call_id:
        ctx.deps.displays[ctx.tool_call_id] = run.outputs
    return run.for_model(ctx.model, ctx.deps.settings.model_accepts_images)


async def inspect_variable(ctx: RunContext[CoDeps], name: str) -> dict[str, Any]:
    """Describe one variable of the notebook's namespace: type, size, head or repr."""
    from pydantic_ai import ModelRetry

    from ..notebook import describe_object

    namespace = _notebook(ctx).namespace
    if name not in namespace:
        known = ", ".join(_user_names(namespace)[:30]) or "none"
        raise ModelRetry(f"No variable named {name!r}. Defined: {known}.")
    return {"display": describe_object(namespace[name]), "name": name}


async def list_variables(ctx: RunContext[CoDeps]) -> dict[str, Any]:
    """List the user's variables in the notebook namespace with their types."""
    namespace = _notebook(ctx).namespace
    rows = [f"- `{n}`: {type(namespace[n]).__name__}" for n in _user_names(namespace)]
    return {"display": "\n".join(rows) or "No variables defined.", "count": len(rows)}


async def notebook_context(ctx: RunContext[CoDeps]) -> dict[str, Any]:
    """What happened recently in the notebook: the last Python error with its traceback
    and the recent cells (inputs and a short text of their outputs)."""
    notebook = _notebook(ctx)
    lines: list[str] = []
    if notebook.last_error is not None:
        lines.append(f"Last Python error:\n{notebook.last_error.error}")
    for i, cell in enumerate(notebook.cells, 1):
        entry = f"[{i}] {cell.kind}: {cell.source}"
        if cell.output:
            entry += f"\n    -> {cell.output}"
        if cell.error:
            entry += f"\n    !! {cell.error}"
        lines.append(entry)
    return {
        "display": "\n".join(lines) or "Nothing has run in this notebook yet.",
        "last_error": notebook.last_error.error if notebook.last_error else None,
        "cells": len(notebook.cells),
    }


def _user_names(namespace: dict[str, Any]) -> list[str]:
    hidden = {"In", "Out", "get_ipython", "exit", "quit", "open"}
    return sorted(
        n
        for n, v in namespace.items()
        if not n.startswith("_") and n not in hidden and type(v).__name__ != "module"
    )


def build(settings: Settings) -> ToolsetBuild:
    from pydantic_ai import FunctionToolset

    toolset: FunctionToolset[CoDeps] = FunctionToolset(
        [run_python, inspect_variable, list_variables, notebook_context]
    )
    return ToolsetBuild(
        "python",
        toolset,
        approval={
            "run_python": True,
            "inspect_variable": False,
            "list_variables": False,
            "notebook_context": False,
        },
    )
