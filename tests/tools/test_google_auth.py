"""Google sign-in: which credentials a session uses, the saved token, `co-kernel google auth`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from cryptography.fernet import Fernet
from google.oauth2.credentials import Credentials

from co_kernel.config import Settings
from co_kernel.tools import google as google_tools
from co_kernel.tools.google._auth import SCOPES, find_credentials, save_token
from co_kernel.tools.google.drive import search_drive_files

from ._google_server import DriveFile, FakeGoogle
from .conftest import tool_context, write_token

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A process environment with no Google or Co configuration but what the test gives."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CO_")
        and k not in ("GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG")
    }
    env.update(
        CO_HOME=str(tmp_path / "home"),
        CLOUDSDK_CONFIG=str(tmp_path / "gcloud"),  # an empty gcloud config: no ADC file
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


# -- registration: file checks only --------------------------------------------------------


def test_nothing_configured_is_not_registered_and_says_how(tmp_path: Path) -> None:
    settings = Settings(google_token_path=tmp_path / "none.json")
    environ = {"CLOUDSDK_CONFIG": str(tmp_path / "gcloud")}
    build = google_tools.build(settings, environ)
    assert build.toolset is None
    assert "co-kernel google auth" in build.reason
    assert (
        "google_client_secrets" in build.reason and "GOOGLE_APPLICATION_CREDENTIALS" in build.reason
    )


def test_token_file_comes_before_adc(tmp_path: Path) -> None:
    token = write_token(tmp_path / "token.json")
    adc = write_token(tmp_path / "adc.json")
    settings = Settings(google_token_path=token)
    found = find_credentials(settings, {"GOOGLE_APPLICATION_CREDENTIALS": str(adc)})
    assert found is not None and (found.kind, found.path) == ("token", token)
    build = google_tools.build(settings, {})
    assert build.toolset is not None and build.approval["create_email_draft"] is True


def test_adc_files_are_found_by_env_var_or_gcloud_config(tmp_path: Path) -> None:
    settings = Settings(google_token_path=tmp_path / "none.json")
    adc = write_token(tmp_path / "adc.json")
    found = find_credentials(settings, {"GOOGLE_APPLICATION_CREDENTIALS": str(adc)})
    assert found is not None and (found.kind, found.path) == ("adc", adc)
    gcloud = tmp_path / "gcloud"
    well_known = write_token(gcloud / "application_default_credentials.json")
    found = find_credentials(settings, {"CLOUDSDK_CONFIG": str(gcloud)})
    assert found is not None and found.path == well_known
    missing = {"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "missing.json")}
    assert find_credentials(settings, missing) is None


# -- resolution in a real process environment ------------------------------------------------

_RESOLVE = """
import json
from co_kernel.config import load_settings
from co_kernel.exceptions import GoogleAuthUnavailable
from co_kernel.tools.google._auth import resolve_credentials
try:
    creds, source = resolve_credentials(load_settings().settings)
except GoogleAuthUnavailable as exc:
    print(json.dumps({"error": str(exc)}))
else:
    print(json.dumps({"kind": source.kind, "path": str(source.path),
                      "client_id": creds.client_id, "token": creds.token}))
"""


def _resolve(env: dict[str, str]) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", _RESOLVE], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_resolution_order_token_then_adc_then_none(tmp_path: Path) -> None:
    adc = write_token(tmp_path / "adc.json", token="adc-token", client_id="adc-client")
    token = tmp_path / "home" / "config" / "google_token.json"
    write_token(token, token="file-token", client_id="co-client")
    both = _resolve(_env(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(adc)))
    assert (both["kind"], both["token"]) == ("token", "file-token")
    assert both["client_id"] == "co-client.apps.googleusercontent.com"

    token.unlink()
    only_adc = _resolve(_env(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(adc)))
    assert (only_adc["kind"], only_adc["path"], only_adc["token"]) == ("adc", str(adc), "adc-token")

    nothing = _resolve(_env(tmp_path))
    assert "co-kernel google auth" in nothing["error"]


def test_unreadable_token_file_names_the_fix(tmp_path: Path) -> None:
    token = tmp_path / "home" / "config" / "google_token.json"
    token.parent.mkdir(parents=True)
    token.write_text('{"token": "x"}')  # no refresh token: not an authorized-user file
    result = _resolve(_env(tmp_path))
    assert "cannot be used" in result["error"] and "co-kernel google auth" in result["error"]


# -- the saved token --------------------------------------------------------------------------


def test_token_is_saved_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "config" / "google_token.json"
    path.parent.mkdir()
    path.write_text("old")
    path.chmod(0o644)
    creds = Credentials(
        token="t",
        refresh_token="r",
        client_id="c",
        client_secret="s",
        token_uri="https://oauth2.googleapis.com/token",
        scopes=list(SCOPES),
    )
    save_token(creds, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = Credentials.from_authorized_user_file(str(path))
    assert (loaded.refresh_token, loaded.scopes) == ("r", list(SCOPES))
    assert [p.name for p in path.parent.iterdir()] == ["google_token.json"]  # no temp file left

    fresh = tmp_path / "new-dir" / "token.json"
    save_token(creds, fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert stat.S_IMODE(fresh.parent.stat().st_mode) == 0o700


def _expired_token(path: Path) -> Path:
    write_token(
        path, token="expired-token", expires_in=-timedelta(minutes=5), refresh_token="refresh-1"
    )
    path.chmod(0o644)
    return path


def test_a_refreshed_token_is_written_back_so_the_next_kernel_does_not_refresh(
    tmp_path: Path, google: FakeGoogle
) -> None:
    google.files["f1"] = DriveFile("f1", "Report", "text/plain", b"numbers")
    google.refresh_grants["refresh-1"] = ("access-2", SCOPES[0])
    token = _expired_token(tmp_path / "google_token.json")
    settings = Settings(
        google_token_path=token,
        google_api_endpoint=google.api_endpoint,
        google_token_uri=google.token_uri,
    )

    # The real google-auth sees the expired token and refreshes it at Google's token endpoint.
    first = search_drive_files(tool_context(settings, tmp_path), "report")
    assert first.get("error") is not True, first
    (refresh,) = google.requests_to("POST", "/token")
    assert (refresh.param("grant_type"), refresh.param("refresh_token")) == (
        "refresh_token",
        "refresh-1",
    )
    assert google.requests_to("GET", "/drive/v3/files")[-1].bearer == "access-2"
    saved = json.loads(token.read_text())
    assert (saved["token"], saved["refresh_token"]) == ("access-2", "refresh-1")
    expiry = datetime.fromisoformat(saved["expiry"].removesuffix("Z")).replace(tzinfo=UTC)
    assert expiry > datetime.now(UTC) + timedelta(minutes=30)
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["google_token.json"], "no temp file"

    # A new session (the next kernel) reads the saved token and does not refresh again.
    second = search_drive_files(tool_context(settings, tmp_path), "report")
    assert second.get("error") is not True, second
    assert len(google.requests_to("POST", "/token")) == 1
    assert google.requests_to("GET", "/drive/v3/files")[-1].bearer == "access-2"


def test_a_token_file_signed_in_again_meanwhile_is_not_overwritten(
    tmp_path: Path, google: FakeGoogle
) -> None:
    google.refresh_grants["refresh-1"] = ("access-2", SCOPES[0])
    token = _expired_token(tmp_path / "google_token.json")
    settings = Settings(
        google_token_path=token,
        google_api_endpoint=google.api_endpoint,
        google_token_uri=google.token_uri,
    )
    ctx = tool_context(settings, tmp_path)
    assert search_drive_files(ctx, "report").get("error") is not True
    # The person signs in again from a terminal; this session's later refresh must not undo it.
    write_token(token, token="newer-token", refresh_token="refresh-new")
    google.access_tokens.discard("access-2")
    google.refresh_grants["refresh-1"] = ("access-3", SCOPES[0])
    search_drive_files(ctx, "report")  # 401, refresh, retry with access-3
    assert google.requests_to("GET", "/drive/v3/files")[-1].bearer == "access-3"
    saved = json.loads(token.read_text())
    assert (saved["token"], saved["refresh_token"]) == ("newer-token", "refresh-new")


# -- `co-kernel google auth` ------------------------------------------------------------------


def test_auth_without_client_file_says_where_to_get_it(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "co_kernel.cli", "google", "auth", "--no-browser"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "Desktop app" in out.stderr
    assert str(tmp_path / "home" / "config" / "google_client_secrets.json") in out.stderr


def test_auth_flow_saves_the_token_in_the_credential_store(
    tmp_path: Path, google: FakeGoogle
) -> None:
    secrets = tmp_path / "client.json"
    secrets.write_text(
        json.dumps(
            {
                "installed": {
                    "client_id": "co-test.apps.googleusercontent.com",
                    "client_secret": "co-test-secret",
                    "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                    "token_uri": google.token_uri,
                    "redirect_uris": ["http://localhost"],
                }
            }
        )
    )
    # The token endpoint here is plain http on 127.0.0.1; oauthlib allows that only when told.
    env = _env(
        tmp_path,
        CO_GOOGLE_CLIENT_SECRETS=str(secrets),
        OAUTHLIB_INSECURE_TRANSPORT="1",
        CO_CREDENTIAL_STORE="file",
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "co_kernel.cli", "google", "auth", "--no-browser"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = ""
        for line in proc.stdout:
            if line.startswith("https://accounts.google.com/"):
                url = line.strip()
                break
        assert url, proc.stderr.read() if proc.stderr else ""
        query = parse_qs(urlsplit(url).query)
        assert set(query["scope"][0].split()) == set(SCOPES)
        assert query["access_type"] == ["offline"] and query["prompt"] == ["consent"]
        # Play the browser: Google redirects to the local server with a code.
        google.auth_codes["code-1"] = ("access-1", "refresh-1", query["scope"][0])
        redirect = (
            query["redirect_uri"][0]
            + "?"
            + urlencode({"state": query["state"][0], "code": "code-1", "scope": query["scope"][0]})
        )
        with urllib.request.urlopen(redirect, timeout=30) as page:
            assert b"signed in" in page.read()
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Signed in" in rest
    exchange = google.requests_to("POST", "/token")[0]
    assert exchange.param("grant_type") == "authorization_code"
    assert exchange.param("code") == "code-1" and exchange.param("code_verifier")
    # The token is kept in the credential store (here its encrypted file), not in a file.
    home = tmp_path / "home"
    assert not (home / "config" / "google_token.json").exists()
    stored = home / "data" / "credentials.fernet"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and b"refresh-1" not in stored.read_bytes()
    key = (home / "config" / "credentials.key").read_bytes().strip()
    saved = json.loads(json.loads(Fernet(key).decrypt(stored.read_bytes()))["google_token"])
    assert (saved["token"], saved["refresh_token"]) == ("access-1", "refresh-1")
    assert set(saved["scopes"]) == set(SCOPES)


@pytest.mark.parametrize("content", ["{}", "not json"])
def test_auth_with_a_bad_client_file_says_so(tmp_path: Path, content: str) -> None:
    secrets = tmp_path / "client.json"
    secrets.write_text(content)
    out = subprocess.run(
        [sys.executable, "-m", "co_kernel.cli", "google", "auth", "--no-browser"],
        env=_env(tmp_path, CO_GOOGLE_CLIENT_SECRETS=str(secrets)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "Desktop app" in out.stderr and "Traceback" not in out.stderr
