"""Managed settings: a deployer's file whose keys the user's file, a
project file and the environment cannot override, its floors (permission rules, MCP
servers), which layer set each value, and a broken managed file that Co survives."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from co_kernel.config import (
    MANAGED,
    MANAGED_ENV,
    LoadedSettings,
    load_settings,
    managed_settings_file,
    paths,
)
from co_kernel.permissions._rules import decide

from .support.files import write_json

LOCKED = "set by your administrator in {}; your value ignored"


@pytest.fixture
def managed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The managed settings file this test's CO_MANAGED_SETTINGS names (written by the test),
    in an environment with no other CO_ variable."""
    for name in [k for k in os.environ if k.startswith("CO_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "etc-co" / "settings.json"
    path.parent.mkdir()
    monkeypatch.setenv(MANAGED_ENV, str(path))
    monkeypatch.setenv("CO_HOME", str(tmp_path / "home"))
    return path


def _project(tmp_path: Path, data: dict[str, Any]) -> Path:
    folder = tmp_path / "repo"
    write_json(folder / ".co" / "settings.json", data)
    return folder


def _notices(loaded: LoadedSettings, name: str) -> list[str]:
    return [p for p in loaded.problems if f": {name}: " in p or f": {name}." in p]


def test_the_file_is_etc_co_unless_the_variable_names_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(MANAGED_ENV)
    assert managed_settings_file() == Path("/etc/co/settings.json")
    monkeypatch.setenv(MANAGED_ENV, str(tmp_path / "m.json"))
    assert managed_settings_file() == tmp_path / "m.json"


@pytest.mark.parametrize("layer", ["user", "project", "environment"])
def test_a_locked_key_keeps_the_managed_value_against_each_layer(
    managed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layer: str
) -> None:
    # tool_retries: a setting every layer may set, a project file too (trusted or not).
    write_json(managed, {"model": "openai:class-model", "tool_retries": 0})
    folder = tmp_path / "repo"
    folder.mkdir()
    own = {"model": "gemini:mine", "tool_retries": 5, "verbose": True}
    if layer == "user":
        where = str(write_json(paths().settings_file, own))
    elif layer == "project":
        own.pop("model")  # waits for trust in a project file, whatever the lock says
        folder = _project(tmp_path, own)
        where = str(folder / ".co" / "settings.json")
    else:
        monkeypatch.setenv("CO_MODEL", "gemini:mine")
        monkeypatch.setenv("CO_TOOL_RETRIES", "5")
        monkeypatch.setenv("CO_VERBOSE", "true")
        where = "environment (CO_TOOL_RETRIES)"
    loaded = load_settings(folder)
    assert loaded.settings.model == "openai:class-model"
    assert loaded.settings.tool_retries == 0
    assert loaded.settings.verbose is True, "what the managed file leaves alone still applies"
    assert _notices(loaded, "tool_retries") == [f"{where}: tool_retries: {LOCKED.format(managed)}"]
    assert len(_notices(loaded, "model")) == (0 if layer == "project" else 1)
    assert loaded.origins["tool_retries"] == f"managed ({managed})"
    assert loaded.managed_file == managed


def test_the_same_value_below_is_no_attempt_worth_a_notice(managed: Path) -> None:
    write_json(managed, {"approval_mode": "deny"})
    write_json(paths().settings_file, {"approval_mode": "deny"})
    loaded = load_settings(None)
    assert loaded.settings.approval_mode == "deny"
    assert _notices(loaded, "approval_mode") == []
    assert loaded.origins["approval_mode"] == f"managed ({managed})"


def test_origins_name_each_layer_and_defaults_have_none(
    managed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(managed, {"approval_timeout": 30})
    user_file = write_json(paths().settings_file, {"personality": "terse"})
    folder = _project(tmp_path, {"verbose": True})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CO_MAX_REQUEST_LIMIT", "7")
    loaded = load_settings(folder)
    assert loaded.origins == {
        "approval_timeout": f"managed ({managed})",
        "personality": f"user ({user_file})",
        "verbose": f"project ({folder / '.co' / 'settings.json'})",
        "max_request_limit": "environment (CO_MAX_REQUEST_LIMIT)",
        "openai_api_key": "environment (OPENAI_API_KEY)",
    }


def test_no_managed_file_locks_nothing(managed: Path) -> None:
    write_json(paths().settings_file, {"model": "gemini:mine"})
    loaded = load_settings(None)
    assert loaded.settings.model == "gemini:mine" and loaded.problems == []
    assert loaded.managed_file is None and managed not in loaded.files


def test_a_managed_deny_rule_beats_the_allow_rules_of_the_other_layers(
    managed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(managed, {"permissions": {"deny": ["run_shell_command(rm*)"], "ask": ["web_fetch"]}})
    write_json(
        paths().settings_file, {"permissions": {"allow": ["web_fetch", "run_shell_command"]}}
    )
    folder = tmp_path / "repo"
    folder.mkdir()
    monkeypatch.setenv("CO_PERMISSIONS", json.dumps({"allow": ["run_shell_command(rm -f *)"]}))
    loaded = load_settings(folder)
    rules = loaded.settings.permissions
    assert [(r.kind, r.source) for r in rules[:2]] == [("deny", MANAGED), ("ask", MANAGED)]
    assert len(rules) == 5, "the other layers' rules still apply beside the floor"
    rule = decide(rules, "run_shell_command", {"cmd": "rm -f notes.txt"}, folder)
    assert rule is not None and (rule.kind, rule.source) == ("deny", MANAGED)
    rule = decide(rules, "web_fetch", {"url": "https://example.org/"}, folder)
    assert rule is not None and (rule.kind, rule.source) == ("ask", MANAGED)
    assert "permissions" not in "".join(loaded.problems)
    assert loaded.origins["permissions"].startswith(f"managed ({managed}) + user (")


def test_only_the_managed_file_sets_the_allowed_mcp_servers(
    managed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_file = write_json(paths().settings_file, {"mcp_allowed_servers": ["anything"]})
    monkeypatch.setenv("CO_MCP_ALLOWED_SERVERS", '["anything"]')
    loaded = load_settings(None)
    assert loaded.settings.mcp_allowed_servers is None
    only = f"only managed settings ({managed}) can set this; your value ignored"
    assert _notices(loaded, "mcp_allowed_servers") == [
        f"{user_file}: mcp_allowed_servers: {only}",
        f"environment (CO_MCP_ALLOWED_SERVERS): mcp_allowed_servers: {only}",
    ]


def test_mcp_allowed_servers_drops_every_other_server(
    managed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(
        managed,
        {
            "mcp_servers": {"hub-docs": {"command": "hub-docs-server"}},
            "mcp_allowed_servers": ["notes", "uvx", "https://mcp.hub.example/mcp"],
        },
    )
    user_file = write_json(
        paths().settings_file,
        {
            "mcp_servers": {
                "notes": {"command": "anything-named-notes"},  # allowed by name
                "fetch": {"command": "/usr/local/bin/uvx", "args": ["mcp-fetch"]},  # by command
                "remote": {"url": "https://mcp.hub.example/mcp"},  # by URL
                "shell": {"command": "bash", "args": ["-c", "evil"]},
                "hub-docs": {"command": "my-own-docs"},  # would replace the managed one
            }
        },
    )
    monkeypatch.setenv("CO_MCP_SERVERS", json.dumps({"other": {"url": "http://127.0.0.1:9/"}}))
    loaded = load_settings(None)
    servers = loaded.settings.mcp_servers
    assert sorted(servers) == ["fetch", "hub-docs", "notes", "remote"]
    assert servers["hub-docs"].command == "hub-docs-server"
    dropped = "not among the MCP servers your administrator allows"
    assert [p.split(": ")[0:2] for p in loaded.problems if dropped in p] == [
        [str(user_file), "mcp_servers.shell"],
        ["environment (CO_MCP_SERVERS)", "mcp_servers.other"],
    ]
    assert f"{user_file}: mcp_servers.hub-docs: {LOCKED.format(managed)}" in loaded.problems


def test_an_unreadable_allowed_list_allows_only_the_managed_servers(managed: Path) -> None:
    write_json(
        managed,
        {"mcp_servers": {"hub": {"command": "hub-server"}}, "mcp_allowed_servers": "notes"},
    )
    write_json(paths().settings_file, {"mcp_servers": {"notes": {"command": "notes-server"}}})
    loaded = load_settings(None)
    assert list(loaded.settings.mcp_servers) == ["hub"]
    assert loaded.settings.mcp_allowed_servers == []
    assert f"{managed}: mcp_allowed_servers: expected a list" in "\n".join(loaded.problems)


def test_allow_yolo_and_trust_policy_lock_like_any_key(
    managed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(managed, {"allow_yolo": False, "trust_policy": "never"})
    write_json(paths().settings_file, {"allow_yolo": True, "trust_policy": "ask"})
    monkeypatch.setenv("CO_ALLOW_YOLO", "true")
    loaded = load_settings(None)
    assert loaded.settings.allow_yolo is False and loaded.settings.trust_policy == "never"
    assert len(_notices(loaded, "allow_yolo")) == 2 and len(_notices(loaded, "trust_policy")) == 1


def test_trust_policy_takes_ask_or_never(managed: Path) -> None:
    write_json(managed, {"trust_policy": "always"})
    loaded = load_settings(None)
    assert loaded.settings.trust_policy == "ask"
    [notice] = _notices(loaded, "trust_policy")
    assert notice.startswith(f"{managed}: trust_policy: Input should be 'ask' or 'never'")


def test_a_broken_managed_file_is_reported_and_the_rest_applies(managed: Path) -> None:
    user_file = write_json(paths().settings_file, {"model": "gemini:mine"})
    managed.write_text('{"model": "openai:x",')
    loaded = load_settings(None)
    assert loaded.settings.model == "gemini:mine"
    assert [p for p in loaded.problems if str(managed) in p] == [
        f"{managed}: line 1: invalid JSON (Expecting property name enclosed in double "
        "quotes); file ignored"
    ]
    assert loaded.origins["model"] == f"user ({user_file})"

    write_json(managed, {"modle": "openai:x", "approval_mode": "deny"})
    loaded = load_settings(None)
    assert f"{managed}: unknown setting 'modle' (did you mean 'model'?); ignored" in (
        loaded.problems
    )
    assert loaded.settings.model == "gemini:mine"
    assert loaded.origins["approval_mode"] == f"managed ({managed})"


def test_a_managed_budget_is_a_ceiling_a_lower_layer_may_lower_not_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from co_kernel.config import load_settings, paths

    managed = tmp_path / "managed.json"
    managed.write_text(json.dumps({"budget_day": 2.0, "budget_month_tokens": 1000}))
    monkeypatch.setenv("CO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CO_MANAGED_SETTINGS", str(managed))
    user = paths().settings_file
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"budget_day": 0.5, "budget_month_tokens": None}))
    monkeypatch.setenv("CO_BUDGET_MONTH_TOKENS", "5000")
    loaded = load_settings()
    assert loaded.settings.budget_day == 0.5, "lowered by the user"
    assert loaded.origins["budget_day"].startswith("user")
    assert loaded.settings.budget_month_tokens == 1000, "neither off nor higher"
    assert loaded.origins["budget_month_tokens"].startswith("managed")
    assert loaded.ceilings == {"budget_day": 2.0, "budget_month_tokens": 1000}
    assert any(
        p.startswith(f"{user}: budget_month_tokens: your administrator sets at most 1000")
        for p in loaded.problems
    )
    assert any(
        p.startswith("environment (CO_BUDGET_MONTH_TOKENS): budget_month_tokens: your admin")
        for p in loaded.problems
    )
