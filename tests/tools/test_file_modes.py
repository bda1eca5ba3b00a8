"""write_file and edit_file in a real kernel under a real umask: a new file gets the mode
the umask gives, a replaced file keeps its own."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from ..support.scripted import call_step


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(
    start_kernel, model_server, workspace: Path, umask: int
) -> None:
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\necho one\n")
    script.chmod(0o750)
    model_server.extend(
        [
            call_step("write_file", path="notes/new.md", content="# New\n"),
            call_step("write_file", path="run.sh", content="#!/bin/sh\necho two\n"),
            {"expect": {"tool_result_contains": "run.sh"}, "text": "Both written."},
        ]
    )
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    # The kernel process's own umask, set the way a person's shell or service would.
    assert kernel.execute(f"%%python\nimport os\nos.umask({umask:#o})").status == "ok"
    result = kernel.execute("Write the files", mode="headless")
    assert result.status == "ok" and model_server.errors == [], result.text()
    created = workspace / "notes" / "new.md"
    assert created.read_text() == "# New\n"
    assert stat.S_IMODE(created.stat().st_mode) == 0o666 & ~umask
    assert script.read_text().endswith("echo two\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
