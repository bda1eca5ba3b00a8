"""Which files are Co's own secrets (co_kernel/config/_protected.py): the one list the file
tools refuse, the sandbox masks and the auto-approval classifier asks about."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from co_kernel.config import (
    McpServerSpec,
    Settings,
    is_protected,
    is_protected_name,
    paths,
    protected_paths,
)


@pytest.fixture
def own_home(tmp_path_factory, monkeypatch):
    """A Co home of this test's own: the tests write settings and token files into it."""
    monkeypatch.setenv("CO_HOME", str(tmp_path_factory.mktemp("co-home")))


def _flip_case(text: str, flips: list[bool]) -> str:
    flips = (flips + [False] * len(text))[: len(text)]
    return "".join(c.upper() if f else c for c, f in zip(text, flips, strict=True))


@given(
    suffix=st.one_of(st.just(""), st.text(min_size=0, max_size=12).map(lambda s: "." + s)),
    flips=st.lists(st.booleans(), max_size=4),
)
def test_env_files_are_protected_names_in_any_case(suffix, flips):
    assert is_protected_name(_flip_case(".env", flips) + suffix)


@given(name=st.text(min_size=1, max_size=20))
def test_other_names_are_not_protected(name):
    folded = name.casefold()
    expected = folded == ".env" or folded.startswith(".env.")
    assert is_protected_name(name) is expected


@pytest.mark.parametrize("name", ["x.env", "env", ".envrc", "my.env.local", "_env", ".environment"])
def test_near_misses_are_not_protected(name):
    assert not is_protected_name(name)


def test_settings_credentials_and_secret_paths_are_protected(own_home, tmp_path):
    workspace = tmp_path / "ws"
    (workspace / ".co").mkdir(parents=True)
    config = paths().config_dir
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json.bak").write_text("{}")
    (config / "skills").mkdir(exist_ok=True)
    token = tmp_path / "elsewhere" / "token.json"
    account = tmp_path / "sa.json"
    settings = Settings(
        google_token_path=token,
        mcp_servers={
            "db": McpServerSpec(
                command="x",
                env={"GOOGLE_APPLICATION_CREDENTIALS": str(account), "HOME": str(workspace)},
            )
        },
    )
    found = set(protected_paths(settings, workspace))
    assert {
        paths().settings_file,
        workspace / ".co" / "settings.json",
        token,
        config / "google_client_secrets.json",
        config / "settings.json.bak",
        account,
    } <= found
    assert all(p.is_absolute() for p in found)
    assert config / "skills" not in found
    assert workspace not in found, "a folder in a secret setting is no secret file"
    for path in found:
        assert is_protected(path, settings, workspace)
    assert is_protected(workspace / "sub" / ".ENV.local", settings, workspace)
    assert not is_protected(workspace / "notes.md", settings, workspace)
    assert not is_protected(config / "skills" / "x" / "SKILL.md", settings, workspace)
    # Case does not matter (case-insensitive file systems), nor a relative spelling.
    assert is_protected(Path(str(paths().settings_file).upper()), settings, workspace)
    assert is_protected(Path(".co/settings.json"), settings, workspace)


def test_a_link_to_a_protected_file_is_protected(own_home, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings_file = paths().settings_file
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    settings_file.write_text('{"gemini_api_key": "AIza-not-a-real-key"}')
    link = workspace / "innocent.json"
    os.symlink(settings_file, link)
    assert is_protected(link, Settings(), workspace)


@settings(max_examples=30)
@given(name=st.from_regex(r"[a-z]{1,8}_(token|secret|credentials?)\.json", fullmatch=True))
def test_credential_files_in_the_config_dir_are_protected_even_before_they_exist(name):
    config = paths().config_dir
    assert is_protected(config / name, Settings(), config.parent)
    assert not is_protected(config / "knowledge" / name.replace("_", ""), Settings(), config.parent)
