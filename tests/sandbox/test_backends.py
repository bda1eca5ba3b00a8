"""What every sandbox backend promises, each test run against both: real shells on the host
(subprocess) and real containers (Docker). What only one backend does is tested in
``test_subprocess_sandbox.py`` and ``test_docker_sandbox.py``."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from co_kernel.sandbox import CommandResult

from .conftest import Backend, run


def test_output_streams_as_it_arrives_on_the_loop_thread(backend: Backend) -> None:
    sandbox = backend.make()
    run(sandbox, "true")  # creating a container is not what this test times
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
    assert result.output == f"{backend.root}\n1\n2\n3\noops\n"
    stdout = "".join(text for _, _, stream, text in seen if stream == "stdout")
    assert stdout == f"{backend.root}\n1\n2\n3\n"
    assert [text for _, _, stream, text in seen if stream == "stderr"] == ["oops\n"]
    assert finished - seen[0][0] > 0.4, "the first line only arrived at the end"
    assert {thread for _, thread, _, _ in seen} == {threading.get_ident()}


def test_stdout_stderr_exit_codes_and_the_workspace(backend: Backend) -> None:
    sandbox = backend.make()
    streams: dict[str, str] = {"stdout": "", "stderr": ""}

    def on_output(stream: str, text: str) -> None:
        streams[stream] += text

    result = run(sandbox, "echo out; echo err >&2; echo out2; exit 7", on_output=on_output)

    assert result.exit_code == 7
    assert streams == {"stdout": "out\nout2\n", "stderr": "err\n"}
    assert sorted(result.output.splitlines()) == ["err", "out", "out2"]
    assert run(sandbox, "true").exit_code == 0
    assert run(sandbox, "false").exit_code == 1
    missing = run(sandbox, "no-such-command-here")
    assert missing.exit_code == 127
    assert "not found" in missing.output
    assert not (missing.timed_out or missing.truncated or missing.interrupted)
    assert run(sandbox, "echo made > made.txt").exit_code == 0
    assert run(sandbox, f"cat {backend.root}/made.txt").output == "made\n"


def test_multibyte_characters_split_across_chunks_survive(backend: Backend) -> None:
    result = run(backend.make(), "printf '\\303'; sleep 0.2; printf '\\251\\n'")
    assert result.output == "é\n"


def test_timeout_kills_the_command_and_its_background_job(backend: Backend, tag: str) -> None:
    sandbox = backend.make()
    run(sandbox, "true")
    started = time.monotonic()
    result = run(sandbox, f"sleep {tag} & echo started; sleep {tag}; echo never", timeout=1)

    # Not a measure of speed: far below the tag's 1,000 s or more the sleeps would take.
    assert time.monotonic() - started < 60
    assert result.timed_out
    assert result.exit_code is None
    assert result.output == "started\n[timed out after 1 s; the command was killed]\n"
    assert backend.processes_with(sandbox, f"sleep {tag}") == []


def test_max_timeout_caps_the_timeout(backend: Backend, tag: str) -> None:
    sandbox = backend.make(max_timeout=0.5)
    result = run(sandbox, f"sleep {tag}", timeout=60)
    assert result.timed_out
    assert "timed out after 0.5 s" in result.output
    assert backend.processes_with(sandbox, f"sleep {tag}") == []


def test_cancellation_kills_the_command(backend: Backend, tag: str) -> None:
    sandbox = backend.make()
    run(sandbox, "true")

    async def scenario() -> None:
        task = asyncio.create_task(sandbox.run(f"sleep {tag} & sleep {tag}", timeout=600))
        while len(await asyncio.to_thread(backend.processes_with, sandbox, f"sleep {tag}")) < 2:
            await asyncio.sleep(0.05)
        task.cancel()
        # The cancelled run ends without waiting for its command (a deadline far below
        # the sleeps and the 600 s timeout, not a measure of speed).
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 60)

    asyncio.run(scenario())
    assert backend.processes_with(sandbox, f"sleep {tag}") == []


def test_output_over_max_output_is_cut_but_the_command_completes(backend: Backend) -> None:
    sandbox = backend.make()
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
    assert run(sandbox, f"cat {backend.root}/done.txt").output == "done\n"


def test_close_interrupts_running_commands_and_is_idempotent(backend: Backend, tag: str) -> None:
    sandbox = backend.make()
    run(sandbox, "true")

    async def scenario() -> CommandResult:
        task = asyncio.create_task(sandbox.run(f"sleep {tag}", timeout=60))
        while not await asyncio.to_thread(backend.processes_with, sandbox, f"sleep {tag}"):
            await asyncio.sleep(0.05)
        await sandbox.close()
        await sandbox.close()
        return await asyncio.wait_for(task, 10)

    result = asyncio.run(scenario())
    assert result.interrupted
    assert result.exit_code is None
    assert result.output.endswith("[interrupted: the sandbox was closed]\n")
    assert backend.processes_with(sandbox, f"sleep {tag}") == []
