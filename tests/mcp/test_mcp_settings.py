"""The `mcp_servers` setting: layers, per-server problems, and secrets that never show."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from co_kernel.config import load_settings, trust_folder
from co_kernel.mcp import McpServerSpec, expand_vars
from co_kernel.status import collect_status, format_status
from co_kernel.telemetry import REDACTED, Redactor


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    monkeypatch.setenv("CO_HOME", str(home))
    monkeypatch.delenv("CO_MCP_SERVERS", raising=False)
    return home


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_layers_merge_by_server_name_and_null_removes_one(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        home / "config" / "settings.json",
        {
            "mcp_servers": {
                "files": {"command": "npx", "args": ["-y", "server-filesystem"]},
                "search": {"url": "https://search.example/mcp"},
                "old": {"command": "old-server"},
            }
        },
    )
    project = tmp_path / "project"
    write(
        project / ".co" / "settings.json",
        {"mcp_servers": {"search": {"url": "https://other.example/mcp", "approval": "trust"}}},
    )
    monkeypatch.setenv("CO_MCP_SERVERS", json.dumps({"old": None, "extra": {"command": "x"}}))
    trust_folder(project)  # the person trusts it: its servers apply only then
    loaded = load_settings(project)
    servers = loaded.settings.mcp_servers
    assert loaded.problems == []
    assert list(servers) == ["files", "search", "extra"]
    assert servers["files"].transport == "stdio" and servers["files"].approval == "ask"
    assert servers["search"].url == "https://other.example/mcp"
    assert servers["search"].approval == "trust"
    assert servers["files"].tool_prefix("files") == "files"
    assert servers["files"].start_timeout == 10.0


def test_each_bad_server_is_reported_with_its_source_and_the_rest_load(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_file = write(
        home / "config" / "settings.json",
        {
            "model": "ollama:llama3.2",
            "mcp_servers": {
                "good": {"command": "good-server", "prefix": "g", "start_timeout": 3},
                "both": {"command": "x", "url": "https://x.example/mcp"},
                "neither": {"args": ["a"]},
                "bad name": {"command": "x"},
                "ftp": {"url": "ftp://x.example"},
                "typo": {"command": "x", "aproval": "trust"},
                "policy": {"command": "x", "approval": "sometimes", "start_timeout": 0},
                "mixed": {"url": "https://x.example/mcp", "env": {"A": "b"}},
                "prefix": {"command": "x", "prefix": "9lives"},
                "string": "npx server",
            },
        },
    )
    loaded = load_settings(tmp_path)
    assert list(loaded.settings.mcp_servers) == ["good"]
    assert loaded.settings.model == "ollama:llama3.2"
    assert loaded.settings.mcp_servers["good"].tool_prefix("good") == "g"
    where = f"{user_file}: mcp_servers"
    assert loaded.problems == [
        f"{where}.both: give either `command` (a stdio server) or `url` (an HTTP server); "
        "server ignored",
        f"{where}.neither: give either `command` (a stdio server) or `url` (an HTTP server); "
        "server ignored",
        f"{where}.bad name: the name must start with a letter and hold only letters, digits, "
        "'_' and '-' (at most 40); server ignored",
        f"{where}.ftp: `url` must start with http:// or https:// (got 'ftp://x.example'); "
        "server ignored",
        f"{where}.typo: aproval: unknown key; server ignored",
        f"{where}.policy: approval: Input should be 'ask', 'trust' or 'annotations'; start_timeout: Input "
        "should be greater than 0; server ignored",
        f"{where}.mixed: `args`, `env` and `cwd` only apply to a stdio server (`command`); "
        "server ignored",
        f"{where}.prefix: `prefix` '9lives' must start with a letter and hold only letters, "
        "digits, '_' and '-' (at most 40); server ignored",
        f"{where}.string: expected an object with `command` or `url`; server ignored",
    ]


def test_the_environment_variable_and_its_broken_json(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CO_MCP_SERVERS", '{"files": {"command": "npx"')
    monkeypatch.setenv("CO_PERSONALITY", "terse")
    loaded = load_settings(tmp_path)
    assert loaded.settings.mcp_servers == {}
    assert loaded.settings.personality == "terse"
    assert loaded.problems == [
        "environment (CO_MCP_SERVERS): mcp_servers: not valid JSON; using the default"
    ]
    monkeypatch.setenv("CO_MCP_SERVERS", '["npx"]')
    loaded = load_settings(tmp_path)
    assert loaded.settings.mcp_servers == {}
    assert loaded.problems[0].startswith(
        "environment (CO_MCP_SERVERS): mcp_servers: expected an object of name -> server"
    )
    monkeypatch.setenv(
        "CO_MCP_SERVERS", '{"x": {"url": "http://127.0.0.1:1/mcp", "type": "stdio"}}'
    )
    assert load_settings(tmp_path).problems == [
        "environment (CO_MCP_SERVERS): mcp_servers.x: `type` is 'stdio' but `url` makes an "
        "HTTP server; server ignored"
    ]


def test_env_and_header_values_are_never_described_and_always_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CO_TEST_MCP_PAT", "pat-value-from-the-environment")
    stdio = McpServerSpec(
        command="server", args=["--verbose"], env={"DB_PASSWORD": "hunter2-hunter2"}
    )
    http = McpServerSpec(
        url="https://mcp.example/mcp",
        headers={"Authorization": "Bearer ${CO_TEST_MCP_PAT}", "X-Tenant": "tenant-42-abc"},
    )
    assert (stdio.describe(), stdio.secret_names()) == ("server --verbose", "env: DB_PASSWORD")
    assert http.describe() == "https://mcp.example/mcp"
    assert http.secret_names() == "headers: Authorization, X-Tenant"
    assert "hunter2" not in repr(stdio) and "tenant-42" not in repr(http)
    redactor = Redactor.from_settings(_settings_with({"s": stdio, "h": http}), environ={})
    leak = "hunter2-hunter2 tenant-42-abc pat-value-from-the-environment"
    assert redactor.redact(leak) == f"{REDACTED} {REDACTED} {REDACTED}"


def _settings_with(servers: dict[str, McpServerSpec]) -> object:
    from co_kernel.config import Settings

    return Settings(mcp_servers=servers)


def test_variables_expand_from_the_environment_and_co_python_is_the_kernel() -> None:
    env = {"TOKEN": "abc"}
    assert expand_vars("Bearer ${TOKEN}", env) == "Bearer abc"
    assert expand_vars("${CO_PYTHON}", env) == sys.executable
    assert expand_vars("$TOKEN and ${ not a var", env) == "$TOKEN and ${ not a var"
    with pytest.raises(KeyError, match="MISSING"):
        expand_vars("${MISSING}", env)


def test_status_without_a_session_lists_the_configured_servers(home: Path, tmp_path: Path) -> None:
    write(
        tmp_path / ".co" / "settings.json",
        {"mcp_servers": {"files": {"command": "npx", "approval": "trust"}}},
    )
    untrusted = format_status(collect_status(tmp_path, check_provider=False), markdown=True)
    assert "| mcp | files |" not in untrusted and "not trusted" in untrusted
    trust_folder(tmp_path)
    text = format_status(collect_status(tmp_path, check_provider=False), markdown=True)
    assert "| mcp | files | connects when a kernel session starts (stdio, trust) |" in text
    (tmp_path / ".co" / "settings.json").unlink()
    text = format_status(collect_status(tmp_path, check_provider=False), markdown=True)
    # Status values are plain text (they quote outside names), escaped in the source.
    assert "| mcp | servers | none configured (setting \\`mcp_servers\\`) |" in text
