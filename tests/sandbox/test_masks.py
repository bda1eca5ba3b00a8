"""Co's secret files in the workspace are not visible in the container (issue 22, class 4)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from co_kernel.sandbox import DockerSandbox


@pytest.mark.docker
def test_secret_files_are_empty_and_read_only_in_the_container(
    make_sandbox: Callable[..., DockerSandbox], workspace
) -> None:
    (workspace / ".co").mkdir()
    (workspace / "sub").mkdir()
    for name in (".env", ".env.local", "sub/.ENV", ".co/settings.json"):
        (workspace / name).write_text("KEY=secret-value\n")
    (workspace / "notes.txt").write_text("visible\n")
    sandbox = make_sandbox()

    result = asyncio.run(
        sandbox.run(
            "cat .env .env.local sub/.ENV .co/settings.json notes.txt; grep -r secret . ; "
            "echo x > .env || echo refused",
            timeout=30,
        )
    )

    assert "secret-value" not in result.output
    assert "visible\n" in result.output  # writes go to /dev/null, not the file
    assert (workspace / ".env").read_text() == "KEY=secret-value\n"
