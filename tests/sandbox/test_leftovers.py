"""Nothing a command started outlives it.

Background jobs, `nohup`, processes that left the group with `setsid`: when the command
ends (normally, by timeout or by interrupt) they are gone within a second, on the host
(subprocess backend) and in the container. A container whose pids limit is used up by
processes that escaped even that is recreated, and the command says so.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Callable
from typing import Any

import pytest

from co_kernel.sandbox import DockerSandbox, SubprocessSandbox

from .conftest import Backend, run

MakeSandbox = Callable[..., DockerSandbox]


def leftovers(command: str, tag: str) -> str:
    """A command that leaves three kinds of processes behind, each sleeping `tag` seconds."""
    return (
        f"nohup sleep {tag} >/dev/null 2>&1 & sleep {tag} >/dev/null 2>&1 & "
        f"(setsid sleep {tag} >/dev/null 2>&1 &); {command}"
    )


def gone_within_a_second(find: Callable[[], list[str]]) -> list[str]:
    deadline = time.monotonic() + 1.0
    left = find()
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = find()
    return left


@pytest.mark.parametrize("how", ["normal", "timeout", "interrupt"])
def test_commands_leave_nothing_behind(backend: Backend, tag: str, how: str) -> None:
    sandbox = backend.make()
    run(sandbox, "true")
    if how == "normal":
        result = run(sandbox, leftovers("echo done", tag))
        assert result.exit_code == 0 and result.output == "done\n"
    elif how == "timeout":
        result = run(sandbox, leftovers(f"sleep {tag}", tag), timeout=1)
        assert result.timed_out
    else:

        async def interrupt() -> None:
            task = asyncio.create_task(sandbox.run(leftovers(f"sleep {tag}", tag), timeout=60))
            while len(await asyncio.to_thread(backend.processes_with, sandbox, f"sleep {tag}")) < 4:
                await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(interrupt())
    assert gone_within_a_second(lambda: backend.processes_with(sandbox, f"sleep {tag}")) == []
    if isinstance(sandbox, SubprocessSandbox):
        assert sandbox.describe()["process_groups"] == 0


@pytest.mark.docker
def test_a_fork_bomb_leaves_the_sandbox_usable(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(pids_limit=64)
    bomb = "b() { b & b & wait; }; b"
    result = run(sandbox, bomb, timeout=3)
    assert "Cannot fork" in result.output
    after = run(sandbox, "echo alive; ps -eo pid= | wc -l")
    assert after.output.startswith("alive\n"), after.output
    assert int(after.output.split()[1]) < 10, after.output


@pytest.mark.docker
def test_a_sandbox_that_cannot_fork_is_recreated(
    make_sandbox: MakeSandbox, docker_client: Any
) -> None:
    sandbox = make_sandbox(pids_limit=32)
    run(sandbox, "true")
    first = docker_client.containers.get(sandbox.container_name).id
    # A forker that left the group and dropped the marker: nothing can tell it was ours,
    # and it takes every pid that comes free.
    forker = (
        "import os\nwhile True:\n try:\n  os.fork() or os.execv('/bin/sleep', ['sleep', '999'])"
        "\n except OSError: pass"
    )
    # Until a fork fails (not a fixed second: a loaded machine's forker took longer).
    wait = "i=0; while [ $i -lt 600 ] && sh -c true; do i=$((i+1)); sleep 0.1; done"
    filled = run(
        sandbox, f"setsid env -i python3 -c {shlex.quote(forker)} >/dev/null 2>&1 & {wait}"
    )
    result = run(sandbox, "echo alive")

    notes = filled.output + result.output
    assert "[the sandbox could no longer start processes; it was recreated]" in notes, notes
    assert result.output.startswith("alive\n"), result.output
    assert docker_client.containers.get(sandbox.container_name).id != first
    assert "sleep 999" not in run(sandbox, "ps -eo args").output
