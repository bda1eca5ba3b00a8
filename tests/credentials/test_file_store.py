"""The encrypted-file backend: with CO_SECRET_KEY and with a key file, a wrong key, what the
kernel sends and shows, and that no plaintext is left on disk after a session."""

from __future__ import annotations

import json
import stat
import tempfile
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from co_kernel.config._credentials import CredentialStore
from co_kernel.exceptions import CredentialError

from .conftest import HeaderProxy, all_bytes, clean_env, co_kernel_cli, secrets_cli

KEY = "sk-file-stored-0123456789abcdef"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_with_co_secret_key_the_file_is_fernet_under_that_key_and_no_key_file(
    tmp_path: Path,
) -> None:
    co_home = tmp_path / "co"
    secret_key = Fernet.generate_key().decode()
    env = clean_env(co_home, CO_CREDENTIAL_STORE="file", CO_SECRET_KEY=secret_key)
    out = secrets_cli(env, "set", "openai_api_key", value=KEY)
    assert out.returncode == 0, out.stderr
    assert "key from CO_SECRET_KEY" in out.stdout and KEY not in out.stdout
    stored = co_home / "data" / "credentials.fernet"
    assert _mode(stored) == 0o600
    assert not (co_home / "config" / "credentials.key").exists()
    assert json.loads(Fernet(secret_key.encode()).decrypt(stored.read_bytes())) == {
        "openai_api_key": KEY
    }
    assert KEY.encode() not in all_bytes(co_home)
    # Without the key the values cannot be read, and Co says which variable to set.
    without = {**env, "CO_SECRET_KEY": ""}
    assert secrets_cli(without, "list").stdout.splitlines() == ["openai_api_key\tfile"]
    status = co_kernel_cli(without, "status").stdout
    assert "secrets.openai_api_key" in status
    assert "has no key: the key file" in status
    assert "set CO_SECRET_KEY to the key it was written with" in status
    assert KEY not in status


def test_without_co_secret_key_a_0600_key_file_apart_from_the_data(tmp_path: Path) -> None:
    co_home = tmp_path / "co"
    env = clean_env(co_home, CO_CREDENTIAL_STORE="file")
    assert (
        secrets_cli(env, "set", "slack_bot_token", value="xoxb-file-token-0123456789").returncode
        == 0
    )
    key_file = co_home / "config" / "credentials.key"
    stored = co_home / "data" / "credentials.fernet"
    assert _mode(key_file) == 0o600 and _mode(stored) == 0o600
    assert key_file.parent != stored.parent
    plain = Fernet(key_file.read_bytes().strip()).decrypt(stored.read_bytes())
    assert json.loads(plain) == {"slack_bot_token": "xoxb-file-token-0123456789"}
    assert b"xoxb-file-token-0123456789" not in all_bytes(co_home)
    # A second secret keeps the first, under the same key.
    assert secrets_cli(env, "set", "gemini_api_key", value="AIza-second-value-000").returncode == 0
    assert set(json.loads(Fernet(key_file.read_bytes().strip()).decrypt(stored.read_bytes()))) == {
        "slack_bot_token",
        "gemini_api_key",
    }
    assert secrets_cli(env, "delete", "slack_bot_token").returncode == 0
    assert secrets_cli(env, "list").stdout.splitlines() == ["gemini_api_key\tfile"]
    assert json.loads(Fernet(key_file.read_bytes().strip()).decrypt(stored.read_bytes())) == {
        "gemini_api_key": "AIza-second-value-000"
    }


def test_a_session_sends_the_stored_key_and_leaves_no_plaintext(
    start_kernel, model_server, header_proxy: HeaderProxy, co_home: Path, workspace: Path
) -> None:
    # Values of no known key format: only the store can tell the redactor about them.
    key, unused = "compat-key-from-file-0123456789", "stored-but-unused-9876543210"
    secret_key = Fernet.generate_key().decode()
    env = clean_env(co_home, CO_CREDENTIAL_STORE="file", CO_SECRET_KEY=secret_key)
    assert secrets_cli(env, "set", "api_key", value=key).returncode == 0
    assert secrets_cli(env, "set", "github_token", value=unused).returncode == 0
    # The model repeats both: the cell, the session store and the traces must not.
    model_server.extend([{"text": f"Your key is {key}, the other {unused}."}])
    kernel = start_kernel(
        {
            "CO_CREDENTIAL_STORE": "file",
            "CO_SECRET_KEY": secret_key,
            "CO_BASE_URL": header_proxy.base_url,
        }
    )
    result = kernel.execute("What is my key?", timeout=120)
    assert result.status == "ok", result.text()
    assert "Your key is [REDACTED], the other [REDACTED]." in result.text()
    assert header_proxy.authorizations
    assert set(header_proxy.authorizations) == {f"Bearer {key}"}
    status = kernel.execute("%status", timeout=120).text()
    assert "| secrets | api_key | set (file) |" in status
    assert "| secrets | credential store | file; 2 stored (file 2) |" in status
    kernel.shutdown()
    assert (co_home / "data" / "telemetry.db").exists()
    assert (co_home / "data" / "sessions.db").exists()
    on_disk = all_bytes(co_home, workspace)
    assert key.encode() not in on_disk and unused.encode() not in on_disk


def test_a_wrong_key_is_one_clear_error_and_the_kernel_still_works(
    start_kernel, model_server, co_home: Path
) -> None:
    env = clean_env(
        co_home, CO_CREDENTIAL_STORE="file", CO_SECRET_KEY=Fernet.generate_key().decode()
    )
    assert secrets_cli(env, "set", "api_key", value=KEY).returncode == 0
    model_server.extend([{"text": "Still here."}])
    kernel = start_kernel({"CO_SECRET_KEY": Fernet.generate_key().decode()})
    first = kernel.execute("Hello", timeout=120)
    assert first.status == "ok" and "Still here." in first.text()
    problem = "cannot be decrypted with the key from CO_SECRET_KEY: set CO_SECRET_KEY"
    assert first.text().count(problem) == 1 and KEY not in first.text()
    status = kernel.execute("%status", timeout=120).text()
    assert "| secrets | api_key | not set |" in status and problem in status
    assert problem not in kernel.execute("%help", timeout=60).text()  # reported once

    # A key that is no Fernet key at all is named too.
    not_fernet = clean_env(co_home, CO_SECRET_KEY="my-passphrase")
    refused = secrets_cli(not_fernet, "set", "other", value="value-0123456789")
    assert refused.returncode == 2
    assert "CO_SECRET_KEY is not a Fernet key" in refused.stderr


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    entries=st.dictionaries(
        st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,20}", fullmatch=True),
        st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=12, max_size=60),
        min_size=1,
        max_size=4,
    )
)
def test_any_names_and_values_round_trip_and_never_lie_on_disk_in_plaintext(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: dict[str, str]
) -> None:
    home = Path(tempfile.mkdtemp(dir=tmp_path))
    monkeypatch.setenv("CO_HOME", str(home))
    store = CredentialStore("file", environ={})
    for name, value in entries.items():
        assert store.set(name, value) == "file"
    reread = CredentialStore("file", environ={})  # a new process would read the files anew
    assert reread.values() == entries
    assert set(reread.names()) == set(entries)
    on_disk = all_bytes(home)
    for value in entries.values():
        assert value.encode() not in on_disk
    name = next(iter(entries))
    # Another key reads nothing and names the variable to set.
    other = CredentialStore("file", environ={"CO_SECRET_KEY": Fernet.generate_key().decode()})
    with pytest.raises(CredentialError, match="set CO_SECRET_KEY"):
        other.get(name)
    assert reread.delete(name) == "file" and reread.get(name) is None
    assert CredentialStore("file", environ={}).values() == {
        k: v for k, v in entries.items() if k != name
    }


def test_the_key_file_and_import_backups_are_out_of_reach_of_cos_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from co_kernel.config import Settings, is_protected, paths

    co_home = tmp_path / "co"
    monkeypatch.setenv("CO_HOME", str(co_home))
    env = clean_env(co_home, CO_CREDENTIAL_STORE="file")
    settings_file = co_home / "config" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text(json.dumps({"api_key": KEY}))
    assert secrets_cli(env, "import").returncode == 0
    config_dir = paths().config_dir
    written = sorted(p.name for p in config_dir.iterdir())
    assert "credentials.key" in written and any(".backup-" in n for n in written)
    # With the home folder as the workspace, the files tools still refuse them.
    for name in written:
        assert is_protected(config_dir / name, Settings(), tmp_path), name
