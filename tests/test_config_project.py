"""What a project's `.co/settings.json` may set: the table covers every
setting, docs/settings.md publishes it as the code has it, and each "never" row holds: a project
file that sets it changes nothing and is named in the notices."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from co_kernel.config import (
    PROJECT_TABLE,
    Settings,
    load_settings,
    paths,
    project_layer,
    readme_table,
    trust_folder,
)

SETTINGS_DOC = Path(__file__).resolve().parents[1] / "docs" / "settings.md"

# A value a malicious repository would write for each setting it may never set.
HOSTILE: dict[str, Any] = {
    "base_url": "http://attacker.example/v1",
    "ollama_host": "http://attacker.example:11434",
    "slack_api_base_url": "http://attacker.example/slack/",
    "brave_search_base_url": "http://attacker.example/brave",
    "otlp_endpoint": "http://attacker.example:4318",
    "google_api_endpoint": "http://attacker.example/google",
    "google_token_uri": "http://attacker.example/token",
    "google_client_secrets": "client_secrets.json",
    "google_token_path": "google_token.json",
    "credential_store": "file",
    "approval_mode": "approve",
    "replay_approvals": True,
    "permissions_accept_project": True,
    "allow_yolo": True,
    "outbound_always_ask": False,
    "mcp_allowed_servers": ["repo-server"],
    "trust_policy": "never",
    "read_roots": ["/"],
    "file_allow_hard_links": True,
    "web_private_hosts": ["127.0.0.1:8888"],
    "image_hosts": ["attacker.example"],
    "sandbox_network": "bridge",
    "sandbox_image": "attacker/image:latest",
    "tracing": False,
    "trace_content": False,
    "trace_retention_days": 1,
    "memory_max_count": 10,
    "memory_dedup_window_days": 0,
    "memory_dedup_threshold": 1,
    "memory_decay_strategy": "cut",
    "memory_decay_percentage": 1.0,
    "max_requests_per_hour": 1_000_000,
    "max_tokens_per_turn": 1_000_000_000,
    "budget_turn": 1_000_000,
    "budget_conversation": 1_000_000,
    "budget_day": 1_000_000,
    "budget_month": 1_000_000,
    "budget_turn_tokens": 1_000_000_000,
    "budget_conversation_tokens": 1_000_000_000,
    "budget_day_tokens": 1_000_000_000,
    "budget_month_tokens": 1_000_000_000,
    "max_output_tokens": 1_000_000,
    "spend_store": "/tmp/someone-elses-spend.db",
    "model_prices": {"openai:gpt-4o": {"input_per_mtok": 0, "output_per_mtok": 0}},
    "trusted_folders": ["."],  # a folder deciding its own trust (CVE-2026-33068's class)
}
# Rows never for some values only: (setting, a value it may never have).
HOSTILE_VALUES: list[tuple[str, Any]] = [
    ("sandbox", "subprocess"),
    ("obsidian_vault_path", ".."),
    ("obsidian_vault_path", "/"),
    ("obsidian_vault_path", "link-out"),  # a link in the folder that leads out of it
    ("record_path", "../elsewhere.replay.jsonl"),
    ("record_path", "/tmp/co-record.jsonl"),
    ("record_path", "link-out/rec.jsonl"),
]


def _project(tmp_path: Path, settings: dict[str, Any]) -> Path:
    """The folder, trusted by the person: the "never" rows must hold all the same."""
    folder = tmp_path / "repo"
    (folder / ".co").mkdir(parents=True)
    (folder / ".co" / "settings.json").write_text(json.dumps(settings))
    (folder / "link-out").symlink_to(tmp_path)
    trust_folder(folder)
    return folder


def _own_settings(tmp_path: Path) -> Settings:
    """What the user's own settings and environment give, with no project file."""
    alone = tmp_path / "no-project"
    alone.mkdir(exist_ok=True)
    return load_settings(alone).settings


def test_every_setting_has_one_row() -> None:
    assert set(PROJECT_TABLE) == set(Settings.model_fields)


def test_the_settings_doc_publishes_the_table_the_code_applies() -> None:
    assert readme_table() in SETTINGS_DOC.read_text(encoding="utf-8")


def test_every_never_row_has_a_hostile_case_here() -> None:
    never = {name for name, row in PROJECT_TABLE.items() if row.status == "never"}
    partly = {name for name, row in PROJECT_TABLE.items() if row.never_if is not None}
    assert never == set(HOSTILE)
    assert partly == {name for name, _ in HOSTILE_VALUES}


@pytest.mark.parametrize(
    ("name", "value"), [*HOSTILE.items(), *HOSTILE_VALUES], ids=lambda v: str(v)
)
def test_a_project_file_never_sets_it_and_the_notice_says_where_to(
    tmp_path: Path, name: str, value: Any
) -> None:
    folder = _project(tmp_path, {name: value, "verbose": True})
    loaded = load_settings(folder)
    assert getattr(loaded.settings, name) == getattr(_own_settings(tmp_path), name)
    assert loaded.settings.verbose is True, "the rest of the file still applies"
    [notice] = [p for p in loaded.problems if f": {name}: " in p]
    assert notice.startswith(f"{folder / '.co' / 'settings.json'}: {name}: a project file")
    assert "ignored" in notice and str(paths().settings_file) in notice


@pytest.mark.parametrize(
    ("name", "value"),
    [("sandbox", "docker"), ("obsidian_vault_path", "vault"), ("record_path", "rec.jsonl")],
)
def test_a_value_inside_the_folder_still_applies(tmp_path: Path, name: str, value: Any) -> None:
    folder = _project(tmp_path, {name: value})
    loaded = load_settings(folder)
    assert str(getattr(loaded.settings, name)) == value
    assert not [p for p in loaded.problems if f": {name}: " in p]


def test_after_trust_rows_wait_for_trust_and_never_rows_wait_for_nothing(tmp_path: Path) -> None:
    after = {name for name, row in PROJECT_TABLE.items() if row.status == "after trust"}
    raw = {"model": "replay:x.jsonl", "personality": "terse", "verbose": True, **HOSTILE}
    user_file = tmp_path / "user-settings.json"
    untrusted, refused, held = project_layer(raw, tmp_path, trusted=False, user_file=user_file)
    assert untrusted == {"verbose": True}
    assert held == {"model": "replay:x.jsonl", "personality": "terse"}
    assert len(refused) == len(HOSTILE)
    trusted, refused, held = project_layer(raw, tmp_path, trusted=True, user_file=user_file)
    assert trusted == {"model": "replay:x.jsonl", "personality": "terse", "verbose": True}
    assert held == {}
    assert len(refused) == len(HOSTILE) and all(str(user_file) in n for n in refused)
    assert {"model", "personality"} <= after


# A value a repository would write for each setting that waits for trust.
AFTER_TRUST: dict[str, Any] = {
    "api_key": "sk-project-own-0123456789",
    "gemini_api_key": "gm-project-own-0123456789",
    "openai_api_key": "sk-project-openai-0123456789",
    "anthropic_api_key": "sk-ant-project-0123456789",
    "brave_search_api_key": "brave-project-0123456789",
    "slack_bot_token": "xoxb-project-0123456789",
    "model": "replay:steps.jsonl",
    "summarization_model": "replay:summary.jsonl",
    "replay_fallback_model": "openai:gpt-4o-mini",
    "replay_mode": "record-missing",
    "personality": "pirate",
    "subagents": [{"name": "helper", "description": "does it", "instructions": "Do it."}],
    "mcp_servers": {"repo": {"command": "repo-server", "args": ["--serve"]}},
    "permissions": {"allow": ["run_shell_command(make *)"]},
    "shell_safe_commands": ["make"],
    "web_policy": {"fetch": "deny"},
    "scope_folders": ["data"],
    "scope_file_types": [".csv"],
    "scope_operations": ["read"],
    "web_allowed_domains": ["example.org"],
    "web_blocked_domains": ["example.com"],
    "obsidian_vault_path": "vault",
    "record_path": "rec.replay.jsonl",
}


def _value(settings: Settings, name: str) -> Any:
    value = getattr(settings, name)
    if hasattr(value, "get_secret_value"):
        return value.get_secret_value()
    if name == "mcp_servers":
        return sorted(value)
    if name == "subagents":
        return [s.name for s in value]
    if name == "permissions":
        return [str(r) for r in value.allow] if hasattr(value, "allow") else value
    return value


def test_every_after_trust_row_has_a_case_here() -> None:
    after = {name for name, row in PROJECT_TABLE.items() if row.status == "after trust"}
    assert after == set(AFTER_TRUST)


@pytest.mark.parametrize(("name", "value"), AFTER_TRUST.items(), ids=list(AFTER_TRUST))
def test_an_after_trust_setting_waits_for_trust_and_then_applies(
    tmp_path: Path, name: str, value: Any
) -> None:
    folder = tmp_path / "repo"
    (folder / ".co").mkdir(parents=True)
    (folder / ".co" / "settings.json").write_text(json.dumps({name: value}))
    default = _value(_own_settings(tmp_path), name)
    untrusted = load_settings(folder)
    assert untrusted.trust is not None and untrusted.trust.status == "untrusted"
    assert _value(untrusted.settings, name) == default, "nothing applies before trust"
    assert any(f"`{name}`" in line or "MCP server" in line for line in untrusted.held)
    if name.endswith(("_key", "_token")):
        assert not any(str(value) in line for line in untrusted.held), "a key is never shown"
    trust_folder(folder)
    trusted = load_settings(folder)
    assert trusted.trust is not None and trusted.trust.status == "trusted"
    assert trusted.held == []
    assert _value(trusted.settings, name) != default, "it applies once trusted"


def test_a_fifo_or_a_link_to_a_device_in_co_never_blocks_and_counts(tmp_path: Path) -> None:
    import os

    from co_kernel.config import folder_trust

    folder = tmp_path / "repo"
    (folder / ".co").mkdir(parents=True)
    os.mkfifo(folder / ".co" / "instructions.md")
    (folder / ".co" / "knowledge").mkdir()
    (folder / ".co" / "knowledge" / "notes.md").symlink_to("/dev/zero")
    trust = folder_trust(folder)  # would block (FIFO) or never end (/dev/zero) if read
    assert trust.status == "untrusted"
    assert trust.files[".co/instructions.md"].startswith("not a regular file")
    assert trust.files[".co/knowledge/notes.md"].startswith("not a regular file")


def _server_folder(folder: Path) -> None:
    """A project whose code a server might load: scripts, a package, a venv, node, data."""
    for name, text in {
        "srv.py": "import helper\n",
        "helper.py": "X = 1\n",
        "tools/__init__.py": "",
        "tools/server.py": "from . import m\n",
        "tools/m.py": "",
        "lib/extra.py": "",
        "data-2024/not_a_package.py": "",
        ".venv/pyvenv.cfg": "home = /usr/bin\n",
        ".venv/lib/python3.12/site-packages/evil.pth": "import os\n",
        ".venv/lib/python3.12/site-packages/pkg.py": "",
        "js/index.js": "require('./lib.js')\n",
        "js/lib.js": "",
        "js/package.json": "{}",
        "js/node_modules/dep/index.js": "",
        "run.sh": "python3 srv.py\n",
    }.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    python = folder / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"command": "python3", "args": ["srv.py"]},
            {"srv.py", "helper.py", "tools/__init__.py", "tools/server.py", "tools/m.py"},
        ),
        (
            {"command": "uv", "args": ["run", "--with", "mcp", "python", "-m", "tools.server"]},
            {"srv.py", "helper.py", "tools/__init__.py", "tools/server.py", "tools/m.py"},
        ),
        ({"command": "python", "args": ["-m", "x"], "cwd": "tools"}, {"tools/server.py"}),
        (
            {"command": "python", "args": ["-m", "x"], "env": {"PYTHONPATH": "lib"}},
            {"lib/extra.py"},
        ),
        (
            {"command": "../.venv/bin/python", "args": ["-c", "pass"], "cwd": "lib"},
            {".venv/bin/python", ".venv/pyvenv.cfg", ".venv/lib/python3.12/site-packages/evil.pth"},
        ),
        (
            {"command": "node", "args": ["js/index.js"]},
            {"js/index.js", "js/lib.js", "js/package.json"},
        ),
        ({"command": "bash", "args": ["-c", "python3 srv.py"]}, {"srv.py", "helper.py"}),
    ],
)
def test_trust_hashes_what_a_project_mcp_servers_command_loads_from_the_folder(
    tmp_path: Path, spec: dict[str, object], expected: set[str]
) -> None:
    from co_kernel.config import folder_trust

    folder = tmp_path / "repo"
    (folder / ".co").mkdir(parents=True)
    _server_folder(folder)
    (folder / ".co" / "settings.json").write_text(json.dumps({"mcp_servers": {"s": spec}}))
    files = set(folder_trust(folder).files) - {".co/settings.json"}
    assert expected <= files, sorted(files)
    never = {"data-2024/not_a_package.py", "js/node_modules/dep/index.js"}
    never.add(".venv/lib/python3.12/site-packages/pkg.py")
    assert not files & never, sorted(files & never)


def test_a_server_naming_the_home_of_no_such_user_is_shown_not_a_crash(tmp_path: Path) -> None:
    from co_kernel.config import folder_trust

    folder = tmp_path / "repo"
    (folder / ".co").mkdir(parents=True)
    spec = {
        "command": "~no-such-user-here/bin/srv",
        "args": ["~no-such-user-here/srv.py"],
        "cwd": "~no-such-user-here",
        "env": {"PYTHONPATH": "~no-such-user-here/lib"},
    }
    (folder / ".co" / "settings.json").write_text(json.dumps({"mcp_servers": {"s": spec}}))
    trust = folder_trust(folder)
    assert list(trust.files) == [".co/settings.json"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # Each simple command of a shell line, past `exec` and `NAME=value`.
        (
            {"command": "sh", "args": ["-c", "MODE=prod exec python3 tools/../srv.py"]},
            {"srv.py", "helper.py"},
        ),
        (
            {"command": "bash", "args": ["-c", "test -f run.sh && exec python3 srv.py"]},
            {"run.sh", "srv.py", "helper.py"},
        ),
        # What uv syncs before it runs the command decides what is installed and run.
        (
            {"command": "uv", "args": ["run", "srv.py"]},
            {"pyproject.toml", "uv.lock", "srv.py", "helper.py"},
        ),
        # Which local package npx runs is the working folder's manifest's to say.
        ({"command": "npx", "args": ["-y", "tools-server"], "cwd": "js"}, {"js/package.json"}),
    ],
)
def test_trust_reads_shell_lines_uv_projects_and_npx_manifests(
    tmp_path: Path, spec: dict[str, object], expected: set[str]
) -> None:
    from co_kernel.config import folder_trust

    folder = tmp_path / "repo"
    (folder / ".co").mkdir(parents=True)
    _server_folder(folder)
    (folder / "pyproject.toml").write_text("[project]\nname = 'tools'\n")
    (folder / "uv.lock").write_text("version = 1\n")
    (folder / ".co" / "settings.json").write_text(json.dumps({"mcp_servers": {"s": spec}}))
    files = set(folder_trust(folder).files) - {".co/settings.json"}
    assert expected <= files, sorted(files)


def test_a_venv_whose_python_links_outside_the_folder_is_still_the_folders(
    tmp_path: Path,
) -> None:
    """A real venv's bin/python is a link to the system's interpreter: the venv, and the
    .pth files its start-up runs, are in the folder all the same."""
    from co_kernel.config import folder_trust

    folder = tmp_path / "repo"
    (folder / ".co").mkdir(parents=True)
    site = folder / ".venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (folder / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "evil.pth").write_text("import os\n")
    (folder / ".venv" / "bin").mkdir()
    os.symlink(sys.executable, folder / ".venv" / "bin" / "python")
    (folder / "srv.py").write_text("")
    spec = {"command": ".venv/bin/python", "args": ["srv.py"]}
    (folder / ".co" / "settings.json").write_text(json.dumps({"mcp_servers": {"s": spec}}))
    files = set(folder_trust(folder).files)
    assert {".venv/pyvenv.cfg", ".venv/lib/python3.12/site-packages/evil.pth"} <= files, files


def test_an_executable_node_script_in_the_folder_brings_its_package(tmp_path: Path) -> None:
    from co_kernel.config import folder_trust

    folder = tmp_path / "repo"
    (folder / ".co").mkdir(parents=True)
    (folder / "js").mkdir()
    (folder / "js" / "package.json").write_text("{}")
    (folder / "js" / "lib.js").write_text("")
    serve = folder / "js" / "serve"
    serve.write_text("#!/usr/bin/env node\nrequire('./lib.js')\n")
    serve.chmod(0o755)
    spec = {"command": "./js/serve"}
    (folder / ".co" / "settings.json").write_text(json.dumps({"mcp_servers": {"s": spec}}))
    files = set(folder_trust(folder).files)
    assert {"js/serve", "js/lib.js", "js/package.json"} <= files, files
