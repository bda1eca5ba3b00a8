"""Moving off plain text: `co-kernel secrets import`, `secret:NAME` references, the
environment winning over the store, and the first cell's warning about a settings file that
still holds a secret."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

from co_kernel.config import project_secret_name

from .conftest import all_bytes, clean_env, co_kernel_cli, secrets_cli

USER_KEY = "sk-user-file-key-0123456789abcdef"
PROJECT_KEY = "sk-project-file-key-0123456789abcd"
COMPAT_KEY = "compat-project-key-0123456789"
HEADER = "Bearer mcp-header-token-0123456789"

_PRINT_SETTINGS = """
import json, sys
from pathlib import Path
from co_kernel.config import load_settings
loaded = load_settings(Path(sys.argv[1]))
s = loaded.settings
print(json.dumps({
    "openai_api_key": s.openai_api_key and s.openai_api_key.get_secret_value(),
    "api_key": s.api_key and s.api_key.get_secret_value(),
    "header": s.mcp_servers["search"].headers["Authorization"].get_secret_value(),
    "sources": loaded.secret_sources,
    "problems": loaded.problems,
}))
"""


def _effective(env: dict[str, str], project: Path) -> dict[str, object]:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _PRINT_SETTINGS, str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_import_moves_every_secret_value_keeps_what_each_file_means_and_backs_up(
    tmp_path: Path,
) -> None:
    co_home, project = tmp_path / "co", tmp_path / "project"
    user_file = co_home / "config" / "settings.json"
    project_file = project / ".co" / "settings.json"
    user_file.parent.mkdir(parents=True)
    project_file.parent.mkdir(parents=True)
    user = {
        "OPENAI_API_KEY": USER_KEY,
        "model": "openai:gpt-4o-mini",
        "mcp_servers": {
            "search": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": HEADER}},
            "files": {"command": "npx", "env": {"HOME": "/home/me", "API_TOKEN": "${TOKEN}"}},
        },
    }
    shared = {"openai_api_key": PROJECT_KEY, "api_key": COMPAT_KEY, "verbose": True}
    user_file.write_text(json.dumps(user))
    project_file.write_text(json.dumps(shared))
    # The person trusts the project (its keys and MCP servers apply only then).
    env = clean_env(
        co_home, CO_CREDENTIAL_STORE="file", CO_TRUSTED_FOLDERS=json.dumps([str(project)])
    )
    before = _effective(env, project)
    assert before["openai_api_key"] == PROJECT_KEY
    warnings = [p for p in before["problems"] if "holds a secret in plain text" in p]
    assert sorted(warnings) == sorted(
        [
            f"{user_file}: OPENAI_API_KEY holds a secret in plain text; move it into the "
            "credential store with `co-kernel secrets import`",
            f"{user_file}: mcp_servers.search.headers.Authorization holds a secret in plain "
            "text; move it into the credential store with `co-kernel secrets import`",
            f"{project_file}: openai_api_key holds a secret in plain text; move it into the "
            "credential store with `co-kernel secrets import`",
            f"{project_file}: api_key holds a secret in plain text; move it into the "
            "credential store with `co-kernel secrets import`",
        ]
    )
    originals = {user_file: user_file.read_bytes(), project_file: project_file.read_bytes()}
    # The Google token an older `co-kernel google auth` wrote moves too.
    token = co_home / "config" / "google_token.json"
    token.write_text(json.dumps({"token": "ya29.old-file-token-0123", "refresh_token": "1//r"}))

    out = secrets_cli(env, "import", "--project", str(project))
    assert out.returncode == 0, out.stderr
    for secret in (USER_KEY, PROJECT_KEY, COMPAT_KEY, HEADER):
        assert secret not in out.stdout + out.stderr
    backups = dict(
        re.findall(r"^(\S+): backup \(readable by you only\) at (\S+)$", out.stdout, re.M)
    )
    assert set(backups) == {str(user_file), str(project_file)}
    for path, backup in backups.items():
        saved = Path(backup)
        assert saved.parent == co_home / "config" and "settings" in saved.name
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600
        assert saved.read_bytes() == originals[Path(path)]

    # The files hold no secret value any more; the rest of each file is as it was.
    after_user = json.loads(user_file.read_text())
    after_project = json.loads(project_file.read_text())
    assert after_user == {
        "model": "openai:gpt-4o-mini",
        "mcp_servers": {
            "search": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": ""}},
            "files": {"command": "npx", "env": {"HOME": "/home/me", "API_TOKEN": "${TOKEN}"}},
        },
    }
    # The project's keys go to the project's own namespace, which the file names.
    assert after_project == {
        "openai_api_key": "secret:openai_api_key",
        "api_key": "secret:api_key",
        "verbose": True,
    }
    assert not token.exists()
    assert f"{token}: the Google token -> google_token (file); the file is removed" in out.stdout
    listed = secrets_cli(env, "list").stdout.splitlines()
    own = project_secret_name(project, "")
    assert sorted(listed) == [
        "google_token\tfile",
        "mcp_servers.search.Authorization\tfile",
        "openai_api_key\tfile",
        f"{own}api_key\tfile",
        f"{own}openai_api_key\tfile",
    ]
    # Every file means what it meant, and nothing warns.
    after = _effective(env, project)
    assert (after["openai_api_key"], after["api_key"], after["header"]) == (
        PROJECT_KEY,
        COMPAT_KEY,
        HEADER,
    )
    assert after["sources"] == {
        "api_key": "file",
        "openai_api_key": "file",
        "mcp_servers.search.Authorization": "file",
    }
    assert after["problems"] == []
    user_only = _effective(env, tmp_path / "elsewhere")
    assert user_only["openai_api_key"] == USER_KEY
    # Outside the backups, no file holds a value in plain text.
    outside = all_bytes(co_home / "data", project) + user_file.read_bytes()
    for secret in (USER_KEY, PROJECT_KEY, COMPAT_KEY, HEADER, "ya29.old-file-token-0123"):
        assert secret.encode() not in outside
    # A second import finds nothing to move.
    again = secrets_cli(env, "import", "--project", str(project))
    assert "nothing to import" in again.stdout


def test_the_environment_wins_and_a_missing_reference_is_named(tmp_path: Path) -> None:
    co_home, project = tmp_path / "co", tmp_path / "project"
    (project / ".co").mkdir(parents=True)
    (project / ".co" / "settings.json").write_text(
        json.dumps(
            {
                "api_key": "secret:nowhere",
                "mcp_servers": {
                    "search": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": ""}}
                },
            }
        )
    )
    # The person trusts the project (its keys and MCP servers apply only then).
    env = clean_env(
        co_home, CO_CREDENTIAL_STORE="file", CO_TRUSTED_FOLDERS=json.dumps([str(project)])
    )
    assert secrets_cli(env, "set", "openai_api_key", value=USER_KEY).returncode == 0
    # The user's general entries: a project file's server or reference never reads them.
    assert (
        secrets_cli(env, "set", "mcp_servers.search.Authorization", value="general").returncode == 0
    )
    assert secrets_cli(env, "set", "nowhere", value="general").returncode == 0
    assert (
        secrets_cli(
            env, "set", "--for-project", "--project", str(project),
            "mcp_servers.search.Authorization", value=HEADER,
        ).returncode
        == 0
    )  # fmt: skip
    stored = _effective(env, project)
    assert stored["openai_api_key"] == USER_KEY and stored["header"] == HEADER
    assert stored["api_key"] is None
    assert any(
        "api_key: this folder has no secret 'nowhere' of its own "
        "(`co-kernel secrets set --for-project nowhere` in this folder" in p
        for p in stored["problems"]
    )
    from_env = _effective({**env, "OPENAI_API_KEY": PROJECT_KEY}, project)
    assert from_env["openai_api_key"] == PROJECT_KEY
    assert from_env["sources"]["openai_api_key"] == "environment"
    status = co_kernel_cli(
        {**env, "OPENAI_API_KEY": PROJECT_KEY}, "status", "--project", str(project)
    )
    assert re.search(r"secrets\.openai_api_key\s+set \(environment\)", status.stdout)
    assert re.search(r"secrets\.mcp_servers\.search\.Authorization\s+set \(file\)", status.stdout)
    assert PROJECT_KEY not in status.stdout and USER_KEY not in status.stdout


def test_the_first_cell_warns_once_about_a_secret_in_a_settings_file(
    start_kernel, model_server, co_home: Path, workspace: Path
) -> None:
    settings = workspace / ".co" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"brave_search_api_key": "BSAplaintext0123456789"}))
    model_server.extend([{"text": "One."}, {"text": "Two."}])
    kernel = start_kernel({"CO_CREDENTIAL_STORE": "file"})
    first = kernel.execute("First", timeout=120).text()
    warning = (
        f"{settings}: brave_search_api_key holds a secret in plain text; move it into the "
        "credential store with `co-kernel secrets import`"
    )
    # A settings problem is shown as inert text (it quotes the folder's names): its own
    # backticks come escaped in the Markdown source and read as backticks.
    assert warning in first.replace("\\`", "`") and "BSAplaintext0123456789" not in first
    second = kernel.execute("Second", timeout=120).text()
    assert "Two." in second and "plain text" not in second
