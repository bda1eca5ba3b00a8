"""The shell tool: one command line in the session's sandbox, run only once approved.

Every call needs approval: the turn asks the person (or applies session yolo or the
safe-prefix rule) before the command runs. Arguments the model can fix are checked before
anyone is asked, so a person never approves an empty command. Without a sandbox, the card
and the result say the command runs on the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# pydantic-ai reads the tool's type hints at registration, so these are real imports.
from pydantic_ai import RunContext

from ..session_state import CoDeps
from . import ToolsetBuild

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["build", "run_shell_command"]

_DISPLAY_CAP = 4000


def _check_args(ctx: RunContext[CoDeps], cmd: str, timeout: int = 120) -> None:
    from pydantic_ai import ModelRetry

    if not cmd.strip():
        raise ModelRetry("The command is empty. Send the shell command line to run in `cmd`.")
    ceiling = ctx.deps.settings.sandbox_max_timeout
    if timeout < 1:
        raise ModelRetry("`timeout` is in seconds and must be at least 1.")
    if timeout > ceiling:
        raise ModelRetry(
            f"`timeout` {timeout} s is over the ceiling of {ceiling:g} s "
            f"(setting `sandbox_max_timeout`); use at most {int(ceiling)}."
        )


async def run_shell_command(
    ctx: RunContext[CoDeps], cmd: str, timeout: int = 120
) -> dict[str, Any]:
    """Run a shell command with /bin/sh in the sandbox; the notebook's folder is the working directory.

    Args:
        cmd: The command line to run.
        timeout: Seconds after which the command is killed.
    """
    from pydantic_ai import ApprovalRequired

    from ..sandbox import SandboxUnavailable, SubprocessSandbox

    settings = ctx.deps.settings
    sandbox = ctx.deps.ensure_sandbox()  # cheap: nothing touches Docker yet
    on_host = isinstance(sandbox, SubprocessSandbox)
    if not ctx.tool_call_approved:
        raise ApprovalRequired(metadata={"detail": sandbox.warning()} if on_host else None)
    try:
        result = await sandbox.run(cmd, timeout=timeout, max_output=settings.sandbox_max_output)
    except SandboxUnavailable as exc:
        message = f"The sandbox is unavailable, so the command did not run: {exc}"
        return {"display": message, "exit_code": None, "output": "", "error": True}
    if result.timed_out:
        status = f"killed after {timeout} s (timeout)"
    elif result.interrupted:
        status = "interrupted"
    else:
        status = f"exit code {result.exit_code}"
    if on_host:
        status += " · ran on the host, not in a sandbox"
    shown = result.output
    if len(shown) > _DISPLAY_CAP:
        shown = (
            shown[:_DISPLAY_CAP] + f"\n… ({len(result.output) - _DISPLAY_CAP:,} more characters)"
        )
    body = shown if not shown or shown.endswith("\n") else shown + "\n"
    return {
        "display": f"$ {cmd}\n{body}[{status}]",
        "exit_code": result.exit_code,
        "output": result.output,
        "timed_out": result.timed_out,
        "truncated": result.truncated,
    }


def build(settings: Settings) -> ToolsetBuild:
    """The shell toolset; always available (the sandbox reports its own problems)."""
    from pydantic_ai.toolsets import FunctionToolset

    toolset: FunctionToolset[CoDeps] = FunctionToolset()
    # pyright binds add_function's ParamSpec through the plain-function half of its union,
    # which puts ctx among the validator's parameters too.
    toolset.add_function(run_shell_command, args_validator=_check_args)  # pyright: ignore[reportArgumentType]
    return ToolsetBuild("shell", toolset, approval={"run_shell_command": True})
