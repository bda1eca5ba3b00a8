"""Tools for the fault tests, installed into real kernels as a ``co_kernel.toolsets`` plugin.

``install_plugin(directory)`` writes a ``.dist-info`` whose entry point names ``build``
below; a kernel started with that directory on ``PYTHONPATH`` offers these tools to the
model exactly as it would a third-party package's. Each call appends a line to
``tool-calls.log`` in the workspace, so a test can count how often a tool really ran.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from co_kernel.exceptions import ToolError, ToolErrorKind
from co_kernel.session_state import CoDeps, ExtrasKey
from co_kernel.tools import ToolsetBuild

PLUGIN_NAME = "faults"
LOG_NAME = "tool-calls.log"
NOTES_NAME = "notes.txt"

_FLAKY = ExtrasKey[dict[str, int]]("flaky")
"""Attempts of the `flaky` tool, by key."""


def install_plugin(directory: Path) -> dict[str, str]:
    """Make ``directory`` an importable plugin location; returns the kernel's env additions."""
    dist = directory / "co_fault_tools-1.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: co-fault-tools\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[co_kernel.toolsets]\n{PLUGIN_NAME} = tests.turn._fault_tools:build\n"
    )
    path = os.pathsep.join(p for p in (str(directory), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


def calls(workspace: Path) -> list[str]:
    """The tool calls that ran in a kernel whose workspace is ``workspace``, in order."""
    log = workspace / LOG_NAME
    return log.read_text().splitlines() if log.exists() else []


def build(settings: Any) -> ToolsetBuild:
    """The plugin's toolset (runs inside the kernel)."""
    toolset: FunctionToolset[CoDeps] = FunctionToolset()

    def record(ctx: RunContext[CoDeps], line: str) -> None:
        with open(ctx.deps.workspace / LOG_NAME, "a", encoding="utf-8") as log:
            log.write(line + "\n")

    @toolset.tool
    async def echo(ctx: RunContext[CoDeps], text: str) -> str:
        """Repeat the text back."""
        record(ctx, f"echo {text}")
        return f"echo: {text}"

    @toolset.tool(requires_approval=True)
    async def write_note(ctx: RunContext[CoDeps], text: str) -> str:
        """Append a line to notes.txt in the workspace (needs approval)."""
        record(ctx, f"write_note {text}")
        with open(ctx.deps.workspace / NOTES_NAME, "a", encoding="utf-8") as notes:
            notes.write(text + "\n")
        return f"noted: {text}"

    @toolset.tool
    async def fail(ctx: RunContext[CoDeps], kind: str, message: str) -> str:
        """Fail the way `kind` says: terminal, transient, misuse, retry or crash."""
        record(ctx, f"fail {kind}")
        if kind == "crash":
            raise RuntimeError(message)
        if kind == "retry":
            raise ModelRetry(message)
        hint = "Use an id from the list tool." if kind == "misuse" else None
        raise ToolError(ToolErrorKind(kind), message, hint=hint)

    @toolset.tool
    async def flaky(ctx: RunContext[CoDeps], key: str, failures: int) -> str:
        """Fail transiently `failures` times for `key`, then succeed."""
        seen = ctx.deps.extras.get_or_create(_FLAKY, dict[str, int])
        seen[key] = seen.get(key, 0) + 1
        record(ctx, f"flaky {key} {seen[key]}")
        if seen[key] <= failures:
            raise ToolError(ToolErrorKind.TRANSIENT, f"upstream busy (attempt {seen[key]})")
        return f"flaky {key} worked on attempt {seen[key]}"

    @toolset.tool
    async def wait(ctx: RunContext[CoDeps], seconds: int) -> str:
        """Sleep, to have something to interrupt."""
        record(ctx, f"wait {seconds}")
        await asyncio.sleep(seconds)
        record(ctx, "wait done")
        return "waited"

    @toolset.tool(requires_approval=True)
    async def approved_wait(ctx: RunContext[CoDeps], seconds: int) -> str:
        """Sleep after approval, to interrupt an approved tool (needs approval)."""
        record(ctx, f"approved_wait {seconds}")
        await asyncio.sleep(seconds)
        record(ctx, "approved_wait done")
        return "waited"

    approval = {
        "echo": False,
        "write_note": True,
        "fail": False,
        "flaky": False,
        "wait": False,
        "approved_wait": True,
    }
    return ToolsetBuild(PLUGIN_NAME, toolset, approval=approval)
