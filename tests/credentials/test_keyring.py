"""The OS keyring backend for real: gnome-keyring's Secret Service on a private D-Bus session,
driven through `co-kernel secrets` and a real kernel."""

from __future__ import annotations

from pathlib import Path

from .conftest import HeaderProxy, SecretService, all_bytes, clean_env, secrets_cli

KEY = "sk-keyring-stored-0123456789abcdef"


def test_set_list_delete_through_the_secret_service_and_the_kernel_sends_it(
    secret_service: SecretService,
    start_kernel,
    model_server,
    header_proxy: HeaderProxy,
    co_home: Path,
    workspace: Path,
) -> None:
    env = {**secret_service.env, "CO_HOME": str(co_home)}
    stored = secrets_cli(env, "set", "api_key", value=KEY + "\n")
    assert stored.returncode == 0, stored.stderr
    assert "Stored api_key in the keyring (SecretService Keyring)" in stored.stdout
    assert KEY not in stored.stdout + stored.stderr
    # It is in the Secret Service itself (asked directly, not through Co), without the newline.
    assert secret_service.lookup("api_key") == [KEY]
    listed = secrets_cli(env, "list")
    assert listed.returncode == 0 and listed.stdout.splitlines() == ["api_key\tkeyring"]
    assert KEY not in listed.stdout + listed.stderr

    # A kernel that reaches the same Secret Service sends the stored key to the model.
    model_server.extend([{"text": "Hello from the model."}])
    kernel = start_kernel({**secret_service.env, "CO_BASE_URL": header_proxy.base_url})
    result = kernel.execute("Say hello", mode="headless", timeout=120)
    assert result.status == "ok" and "Hello from the model." in result.text()
    assert header_proxy.authorizations
    assert set(header_proxy.authorizations) == {f"Bearer {KEY}"}
    status = kernel.execute("%status", timeout=120).text()
    assert "| secrets | api_key | set (keyring) |" in status
    assert "| secrets | openai_api_key | not set |" in status
    assert KEY not in status
    kernel.shutdown()
    # Neither Co's files nor gnome-keyring's hold the value in plain text.
    on_disk = all_bytes(co_home, workspace, secret_service.keyrings)
    assert KEY.encode() not in on_disk
    assert b"api_key" in all_bytes(co_home / "data")  # the index names it

    deleted = secrets_cli(env, "delete", "api_key")
    assert deleted.returncode == 0 and "Deleted api_key from the keyring" in deleted.stdout
    assert secret_service.lookup("api_key") == []
    assert "No secrets stored" in secrets_cli(env, "list").stdout
    again = secrets_cli(env, "delete", "api_key")
    assert again.returncode == 1 and "no secret named api_key" in again.stderr


def test_keyring_mode_without_a_usable_keyring_names_the_setting(tmp_path: Path) -> None:
    # No D-Bus session: keyring falls back to its `fail` backend, which does not count.
    env = clean_env(tmp_path / "co", HOME=str(tmp_path / "home"), CO_CREDENTIAL_STORE="keyring")
    out = secrets_cli(env, "set", "api_key", value=KEY)
    assert out.returncode == 2
    assert "`credential_store` is 'keyring' but no usable OS keyring" in out.stderr
    assert KEY not in out.stdout + out.stderr
    assert not (tmp_path / "co" / "data" / "credentials.fernet").exists()
    # auto falls back to the encrypted file instead.
    auto = secrets_cli({**env, "CO_CREDENTIAL_STORE": "auto"}, "set", "api_key", value=KEY)
    assert auto.returncode == 0, auto.stderr
    assert secrets_cli(env, "list").stdout.splitlines() == ["api_key\tfile"]
