"""`!cmd` cells: a shell command in the sandbox, no model involved."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .dispatch import CellDispatcher, Outcome

__all__ = ["run_shell_cell"]


async def run_shell_cell(dispatcher: CellDispatcher, command: str) -> Outcome:
    from .dispatch import Outcome

    message = "The sandbox is not available yet in this version of Co: `!` cells cannot run."
    dispatcher.show_error_line(message)
    return Outcome("error", "SandboxUnavailable", message)
