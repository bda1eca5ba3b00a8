"""`!cmd` cells: a shell command in the sandbox, no model involved.

Output streams into the cell as it arrives (the first cell of a session without a sandbox
says that commands run on the host); a non-zero exit status, a timeout or an
interrupt is said in one line. An interrupt cancels the run, which kills the process
inside the container, and the kernel stays usable.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from ..sandbox import DockerSandbox, SandboxUnavailable, SubprocessSandbox

if TYPE_CHECKING:
    from ..frontend import Publisher
    from ..session_state import CoDeps

__all__ = ["run_shell_cell"]

USAGE = "Usage: !<command>  (runs in the sandbox; e.g. !ls -la)"


async def run_shell_cell(deps: CoDeps, pub: Publisher, command: str) -> tuple[str, str] | None:
    """Run ``command`` in the session's sandbox; ``(ename, message)`` when the cell failed.

    The caller shows that failure as the cell's error output; lines printed here are notes
    of a cell that goes on (a non-zero exit status is the command's answer, not a failure).
    """

    def error_line(text: str) -> None:
        pub.stream("stderr", text + "\n")
        pub.flush()

    if not command:
        return "UsageError", USAGE
    settings = deps.settings
    sandbox = deps.ensure_sandbox()
    status_id = uuid.uuid4().hex
    shown = False

    def on_status(message: str) -> None:
        nonlocal shown
        pub.display({"text/plain": message}, display_id=status_id, update=shown)
        shown = True

    def on_output(stream: str, text: str) -> None:
        pub.stream(stream, text)
        pub.flush()

    if isinstance(sandbox, SubprocessSandbox) and not sandbox.warned:
        sandbox.warned = True
        error_line(f"Note: {sandbox.warning()} (sandbox = docker isolates them.)")
    if isinstance(sandbox, DockerSandbox):  # the one backend that reports progress
        sandbox.on_status = on_status
    try:
        result = await sandbox.run(
            command,
            timeout=min(settings.sandbox_timeout, settings.sandbox_max_timeout),
            on_output=on_output,
            max_output=settings.sandbox_max_output,
        )
    except SandboxUnavailable as exc:
        return "SandboxUnavailable", str(exc)
    finally:
        if shown:
            pub.display({"text/plain": ""}, display_id=status_id, update=True)
    if result.timed_out:
        limit = min(settings.sandbox_timeout, settings.sandbox_max_timeout)
        message = (
            f"Killed after {limit:g} s (setting sandbox_timeout; ceiling sandbox_max_timeout)."
        )
        return "Timeout", message
    if result.exit_code not in (0, None):
        error_line(f"exit status {result.exit_code}")
    return None
