"""Co's secret files in the workspace are not visible in the container."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import pytest

from co_kernel.config import Settings
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


def _cat(sandbox: DockerSandbox, command: str) -> str:
    return asyncio.run(sandbox.run(command, timeout=60)).output


@pytest.mark.docker
def test_every_protected_path_in_the_workspace_is_hidden_folders_too(
    make_sandbox: Callable[..., DockerSandbox], workspace
) -> None:
    """A token file and a credential folder named by settings are hidden, wherever in the
    workspace the settings put them; files beside them stay visible."""
    (workspace / "creds").mkdir()
    (workspace / "creds" / "service.json").write_text("FOLDER-SECRET\n")
    (workspace / "tok.json").write_text("TOKEN-SECRET\n")
    (workspace / "plain.txt").write_text("visible\n")
    settings = Settings(google_token_path=workspace / "tok.json",
                        google_client_secrets=workspace / "creds")  # fmt: skip
    sandbox = make_sandbox(settings=settings)

    out = _cat(sandbox, "cat tok.json creds/service.json plain.txt; ls -A creds; grep -r SECRET .")

    assert "SECRET" not in out
    assert "visible\n" in out


@pytest.mark.docker
def test_a_secret_file_replaced_or_created_later_stays_hidden(
    make_sandbox: Callable[..., DockerSandbox], workspace
) -> None:
    """A mask covers an inode: a token rewritten by rename (as the Google token is), or a
    secret file that appears after the container was made, must not become readable."""
    token = workspace / "tok.json"
    token.write_text("OLD-SECRET\n")
    statuses: list[str] = []
    settings = Settings(google_token_path=token, google_client_secrets=workspace / "cs.json")
    sandbox = make_sandbox(settings=settings, on_status=statuses.append)
    assert "SECRET" not in _cat(sandbox, "cat tok.json")

    fresh = workspace / "tok.json.new"
    fresh.write_text("NEW-SECRET\n")
    os.replace(fresh, token)
    (workspace / "cs.json").write_text("CLIENT-SECRET\n")

    out = _cat(sandbox, "cat tok.json cs.json; grep -r SECRET .")
    assert "SECRET" not in out
    assert token.read_text() == "NEW-SECRET\n"
    assert any("recreating the sandbox" in s for s in statuses), statuses
