"""`!cmd` cells: a shell command in the sandbox, no model involved.

Output streams into the cell as it arrives; a non-zero exit status, a timeout or an
interrupt is said in one line. An interrupt cancels the run, which kills the process
inside the container, and the kernel stays usable.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

from .sandbox import SandboxUnavailable
from .sandbox._session import ensure_sandbox

if TYPE_CHECKING:
    from .dispatch import CellDispatcher, Outcome

__all__ = ["run_shell_cell"]

USAGE = "Usage: !<command>  (runs in the sandbox; e.g. !ls -la)"


async def run_shell_cell(dispatcher: CellDispatcher, command: str) -> Outcome:
    from .dispatch import Outcome

    if not command:
        dispatcher.show_error_line(USAGE)
        return Outcome("error", "UsageError", USAGE)
    deps = dispatcher.session.deps
    settings = deps.settings
    pub = dispatcher.publisher
    sandbox = ensure_sandbox(deps)
    status_id = uuid.uuid4().hex
    shown = False

    def on_status(message: str) -> None:
        nonlocal shown
        pub.display({"text/plain": message}, display_id=status_id, update=shown)
        shown = True

    def on_output(stream: str, text: str) -> None:
        pub.stream(stream, text)
        pub.flush()

    if hasattr(sandbox, "on_status"):
        sandbox.on_status = on_status
    try:
        result = await sandbox.run(
            command,
            timeout=min(settings.sandbox_timeout, settings.sandbox_max_timeout),
            on_output=on_output,
            max_output=settings.sandbox_max_output,
        )
    except SandboxUnavailable as exc:
        dispatcher.show_error_line(str(exc))
        return Outcome("error", "SandboxUnavailable", str(exc))
    except asyncio.CancelledError:
        dispatcher.show_error_line("Interrupted: the command was killed.")
        raise
    finally:
        if shown:
            pub.display({"text/plain": ""}, display_id=status_id, update=True)
    if result.timed_out:
        limit = min(settings.sandbox_timeout, settings.sandbox_max_timeout)
        message = (
            f"Killed after {limit:g} s (setting sandbox_timeout; ceiling sandbox_max_timeout)."
        )
        dispatcher.show_error_line(message)
        return Outcome("error", "Timeout", message)
    if result.exit_code not in (0, None):
        dispatcher.show_error_line(f"exit status {result.exit_code}")
    return Outcome()
