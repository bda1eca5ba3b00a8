"""SubprocessSandbox: real shells on the host (what both backends do is in test_backends.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from co_kernel.sandbox import (
    SandboxProtocol,
    SubprocessSandbox,
    create_sandbox,
)

from .conftest import host_processes_with, run


@pytest.fixture
def sandbox(tmp_path: Path) -> SubprocessSandbox:
    return SubprocessSandbox(workspace=tmp_path)


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
