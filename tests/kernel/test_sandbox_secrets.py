"""With the home folder as the workspace, Co's own secret files in it (the user settings
file, the Google token and client files) are not readable from a `!` cell or the shell
tool in the Docker sandbox."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from co_kernel.replay import ScriptedModelServer
from tests.sandbox.conftest import SANDBOX_UID, TEST_IMAGE, docker_client  # noqa: F401 - fixture

pytestmark = pytest.mark.docker

KEY = "sk-home-settings-7f3a"
TOKEN = "ya29.home-token-91c2"
CLIENT = "client-secret-c04e"
# Patterns that match the secrets but not themselves: the command lines are kept in Co's
# data folder, which is inside this home too.
FIND = "grep -rlE -e 'sk-hom[e]-settings' -e 'ya29[.]home' -e 'client-secre[t]-c04e' ."


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fake home folder laid out as a person's: Co's config under .config/co."""
    home = tmp_path / "home"
    config = home / ".config" / "co"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"api_key": KEY}))
    (config / "google_token.json").write_text(json.dumps({"token": TOKEN}))
    (config / "google_client_secrets.json").write_text(json.dumps({"secret": CLIENT}))
    (home / "notes.txt").write_text("an ordinary file\n")
    if os.getuid() == 0:
        # The person's files are theirs, the uid cells run as: only the mask hides them
        # (Co's start makes what it owns private, which would hide a root-owned copy anyway).
        for path in (home, *home.rglob("*")):
            os.chown(path, SANDBOX_UID, SANDBOX_UID)
    return home


def test_home_secrets_are_hidden_from_cells_and_the_shell_tool(
    start_kernel,
    model_server: ScriptedModelServer,
    home: Path,
    docker_client,  # noqa: F811 - fixture use
):
    env = {
        "CO_HOME": "",  # Co's folders where platformdirs puts them: inside the home
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "CO_SANDBOX": "docker",
        "CO_SANDBOX_IMAGE": TEST_IMAGE,
        "CO_APPROVAL_MODE": "approve",
    }
    kernel = start_kernel(env, cwd=home)
    files = ".config/co/settings.json .config/co/google_token.json .config/co/google_client_secrets.json"

    cell = kernel.execute(f"!cat {files} notes.txt; {FIND}", timeout=180)
    assert "an ordinary file" in cell.stdout, cell.text()
    assert ".config/co" not in cell.stdout, "grep found a secret"

    command = f"cat {files}; {FIND}"
    model_server.extend(
        [
            {"tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": command}}]},
            {"expect": {"tool_result_contains": "exit"}, "text": "done"},
        ]
    )
    turn = kernel.execute("show me the settings", mode="headless", timeout=180)
    assert turn.status == "ok" and not model_server.errors, turn.text()
    seen = json.dumps(model_server.requests)
    [result] = [
        json.loads(m["content"])
        for m in model_server.requests[-1]["messages"]
        if m["role"] == "tool"
    ]
    # grep -l names the files holding a secret (names are not redacted): none does.
    assert result["exit_code"] is not None and ".config/co" not in result["output"], result

    for secret in (KEY, TOKEN, CLIENT):
        assert secret not in cell.text()
        assert secret not in turn.text()
        assert secret not in seen
