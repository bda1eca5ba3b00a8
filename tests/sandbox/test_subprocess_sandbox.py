"""SubprocessSandbox: real shells on the host."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path

import pytest

from co_kernel.sandbox import (
    CommandResult,
    SandboxProtocol,
    SubprocessSandbox,
    create_sandbox,
)


def run(
    sandbox: SubprocessSandbox, command: str, timeout: float = 30, **kwargs: object
) -> CommandResult:
    return asyncio.run(sandbox.run(command, timeout=timeout, **kwargs))  # type: ignore[arg-type]


def host_processes_with(needle: str) -> list[str]:
    """Command lines of live host processes that contain `needle`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state != "Z":
            found.append(cmdline)
    return found


@pytest.fixture
def sandbox(tmp_path: Path) -> SubprocessSandbox:
    return SubprocessSandbox(workspace=tmp_path)


@pytest.fixture
def tag() -> str:
    """A unique sleep duration, so the test can find its own processes on the host."""
    return f"{1000 + uuid.uuid4().int % 9000}.{uuid.uuid4().int % 1000:03d}"


def test_factory_makes_it_only_when_asked(tmp_path: Path) -> None:
    sandbox = create_sandbox(
        mode=" Subprocess ", image="ignored", workspace=tmp_path, session_id="s", kernel_id="k"
    )
    assert isinstance(sandbox, SubprocessSandbox)
    assert isinstance(sandbox, SandboxProtocol)
    info = sandbox.describe()
    assert info["backend"] == "subprocess"
    assert info["sandboxed"] is False
    assert "ON THE HOST, unsandboxed" in str(info["warning"])


def test_output_streams_in_the_workspace(sandbox: SubprocessSandbox, tmp_path: Path) -> None:
    seen: list[tuple[float, int, str, str]] = []

    def on_output(stream: str, text: str) -> None:
        seen.append((time.monotonic(), threading.get_ident(), stream, text))

    result = run(
        sandbox,
        "pwd; for i in 1 2 3; do echo $i; sleep 0.3; done; echo oops >&2; exit 4",
        on_output=on_output,
    )
    finished = time.monotonic()

    assert result.exit_code == 4
    assert result.output == f"{tmp_path}\n1\n2\n3\noops\n"
    stdout = "".join(text for _, _, stream, text in seen if stream == "stdout")
    assert stdout == f"{tmp_path}\n1\n2\n3\n"
    assert [text for _, _, stream, text in seen if stream == "stderr"] == ["oops\n"]
    assert finished - seen[0][0] > 0.5, "output only arrived at the end"
    assert {thread for _, thread, _, _ in seen} == {threading.get_ident()}
    assert run(sandbox, "echo made > made.txt").exit_code == 0
    assert (tmp_path / "made.txt").read_text() == "made\n"


def test_timeout_kills_the_process_group(sandbox: SubprocessSandbox, tag: str) -> None:
    started = time.monotonic()
    result = run(sandbox, f"sleep {tag} & echo started; sleep {tag}", timeout=1)

    # Not a measure of speed: far below the tag's 1,000 s or more the sleeps would take.
    assert time.monotonic() - started < 60
    assert result.timed_out
    assert result.exit_code is None
    assert result.output == "started\n[timed out after 1 s; the command was killed]\n"
    assert host_processes_with(f"sleep {tag}") == []


def test_cancellation_kills_the_process_group(sandbox: SubprocessSandbox, tag: str) -> None:
    async def scenario() -> None:
        task = asyncio.create_task(sandbox.run(f"sleep {tag} & sleep {tag}", timeout=600))
        while len(host_processes_with(f"sleep {tag}")) < 2:
            await asyncio.sleep(0.05)
        task.cancel()
        # The cancelled run ends without waiting for its command (a deadline far below
        # the sleeps and the 600 s timeout, not a measure of speed).
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 60)

    asyncio.run(scenario())
    assert host_processes_with(f"sleep {tag}") == []


def test_background_job_holding_the_output_does_not_hang_the_call(
    sandbox: SubprocessSandbox, tag: str
) -> None:
    started = time.monotonic()
    result = run(sandbox, f"sleep {tag} & echo done", timeout=60)

    # The job holding the output would keep the call until the 60 s timeout.
    assert time.monotonic() - started < 30
    assert result.exit_code == 0
    assert result.output == "done\n"
    # The job ended with its command (tests/sandbox/test_leftovers.py has the rest).
    assert host_processes_with(f"sleep {tag}") == []
    assert sandbox.describe()["process_groups"] == 0


def test_output_over_max_output_is_cut_but_the_command_completes(
    sandbox: SubprocessSandbox, tmp_path: Path
) -> None:
    shown: list[str] = []
    result = run(
        sandbox,
        "head -c 5000 /dev/zero | tr '\\0' x; echo; echo done > done.txt",
        max_output=1000,
        on_output=lambda stream, text: shown.append(text),
    )

    assert result.truncated
    assert result.exit_code == 0
    assert (
        result.output
        == "x" * 1000
        + "\n[output truncated at 1 kB; the command kept running, the rest was discarded]\n"
    )
    assert "".join(shown) == result.output
    assert (tmp_path / "done.txt").read_text() == "done\n"


def test_multibyte_characters_split_across_chunks_survive(sandbox: SubprocessSandbox) -> None:
    result = run(sandbox, "printf '\\303'; sleep 0.2; printf '\\251\\n'")
    assert result.output == "é\n"


def test_close_interrupts_running_commands(sandbox: SubprocessSandbox, tag: str) -> None:
    async def scenario() -> CommandResult:
        task = asyncio.create_task(sandbox.run(f"sleep {tag}", timeout=60))
        while not host_processes_with(f"sleep {tag}"):
            await asyncio.sleep(0.05)
        await sandbox.close()
        await sandbox.close()
        return await asyncio.wait_for(task, 5)

    result = asyncio.run(scenario())
    assert result.interrupted
    assert result.exit_code is None
    assert result.output == "[interrupted: the sandbox was closed]\n"
    assert host_processes_with(f"sleep {tag}") == []


def test_max_timeout_caps_the_timeout(tmp_path: Path, tag: str) -> None:
    sandbox = SubprocessSandbox(workspace=tmp_path, max_timeout=0.5)
    result = run(sandbox, f"sleep {tag}", timeout=60)
    assert result.timed_out
    assert "timed out after 0.5 s" in result.output
    assert host_processes_with(f"sleep {tag}") == []
