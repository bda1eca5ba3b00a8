"""The Google OAuth token kept in the credential store: found without reading it, used by the
real google-auth against a local token endpoint, and a refreshed token written back there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from co_kernel.config import Settings
from co_kernel.config._credentials import CredentialStore
from co_kernel.tools import google as google_tools
from co_kernel.tools.google._auth import SCOPES, CredentialSource, find_credentials
from co_kernel.tools.google.drive import search_drive_files
from tests.tools._google_server import DriveFile, FakeGoogle
from tests.tools.conftest import tool_context, write_token

from .conftest import all_bytes


@pytest.fixture
def google() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


def test_a_stored_token_is_used_and_its_refresh_is_written_back_to_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, google: FakeGoogle
) -> None:
    home = tmp_path / "co"
    monkeypatch.setenv("CO_HOME", str(home))
    monkeypatch.setenv("CO_SECRET_KEY", Fernet.generate_key().decode())
    google.files["f1"] = DriveFile("f1", "Report", "text/plain", b"numbers")
    google.refresh_grants["refresh-stored-1"] = ("access-stored-2", SCOPES[0])
    token_file = write_token(
        tmp_path / "token.json",
        token="expired-stored-token",
        expires_in=-timedelta(minutes=5),
        refresh_token="refresh-stored-1",
    )
    assert CredentialStore("file").set("google_token", token_file.read_text()) == "file"
    token_file.unlink()
    settings = Settings(
        credential_store="file",
        google_api_endpoint=google.api_endpoint,
        google_token_uri=google.token_uri,
    )
    # Registration sees the entry in the store's index; no file is involved.
    assert find_credentials(settings, {}) == CredentialSource("stored", None)
    assert google_tools.build(settings, {}).toolset is not None

    first = search_drive_files(tool_context(settings, tmp_path), "report")
    assert first.get("error") is not True, first
    (refresh,) = google.requests_to("POST", "/token")
    assert refresh.param("refresh_token") == "refresh-stored-1"
    assert google.requests_to("GET", "/drive/v3/files")[-1].bearer == "access-stored-2"
    entry = CredentialStore("file").get("google_token")
    assert entry is not None
    saved = json.loads(entry[0])
    assert (saved["token"], saved["refresh_token"]) == ("access-stored-2", "refresh-stored-1")
    assert not (home / "config" / "google_token.json").exists()
    on_disk = all_bytes(home)
    assert b"access-stored-2" not in on_disk and b"refresh-stored-1" not in on_disk

    # The next session starts with the refreshed token and does not refresh again.
    second = search_drive_files(tool_context(settings, tmp_path), "report")
    assert second.get("error") is not True, second
    assert len(google.requests_to("POST", "/token")) == 1


def test_a_stored_token_signed_in_again_meanwhile_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, google: FakeGoogle
) -> None:
    monkeypatch.setenv("CO_HOME", str(tmp_path / "co"))
    monkeypatch.setenv("CO_SECRET_KEY", Fernet.generate_key().decode())
    google.refresh_grants["refresh-a"] = ("access-a2", SCOPES[0])
    store = CredentialStore("file")
    expired = write_token(
        tmp_path / "a.json",
        token="old",
        expires_in=-timedelta(minutes=5),
        refresh_token="refresh-a",
    )
    store.set("google_token", expired.read_text())
    settings = Settings(
        credential_store="file",
        google_api_endpoint=google.api_endpoint,
        google_token_uri=google.token_uri,
    )
    ctx = tool_context(settings, tmp_path)
    assert search_drive_files(ctx, "report").get("error") is not True
    newer = write_token(tmp_path / "b.json", token="newer-token", refresh_token="refresh-new")
    store.set("google_token", newer.read_text())  # `co-kernel google auth` in a terminal
    google.access_tokens.discard("access-a2")
    google.refresh_grants["refresh-a"] = ("access-a3", SCOPES[0])
    search_drive_files(ctx, "report")  # 401, refresh, retry with access-a3
    assert google.requests_to("GET", "/drive/v3/files")[-1].bearer == "access-a3"
    entry = CredentialStore("file").get("google_token")
    assert entry is not None
    assert json.loads(entry[0])["refresh_token"] == "refresh-new"
