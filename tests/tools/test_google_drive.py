"""Drive tools against a local Drive v3 through the real googleapiclient."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from google.oauth2.credentials import Credentials
from pydantic_ai import ModelRetry

from co_kernel.tools._paging import pages
from co_kernel.tools.google._auth import CredentialSource
from co_kernel.tools.google.drive import PAGE_SIZE, read_drive_file, search_drive_files

from ..support.google import set_session_credentials
from ._google_server import (
    BACKEND_ERROR,
    GOOGLE_DOC,
    GOOGLE_FOLDER,
    GOOGLE_SHEET,
    GOOGLE_SLIDES,
    RATE_LIMITED,
    DriveFile,
    FakeGoogle,
    api_disabled_error,
    google_error,
)
from .conftest import ToolContext

MakeCtx = Callable[..., ToolContext]


def _reports(google: FakeGoogle, n: int) -> None:
    for i in range(n):
        fid = f"file{i:02d}"
        google.files[fid] = DriveFile(fid, f"Report {i:02d}", "text/plain", b"quarterly numbers")


def test_search_pages_through_results_with_the_kept_page_token(
    google: FakeGoogle, google_ctx: MakeCtx
) -> None:
    _reports(google, PAGE_SIZE + 3)
    google.files["other"] = DriveFile("other", "Holiday photos", "image/jpeg", b"\xff\xd8")
    ctx = google_ctx()

    first = search_drive_files(ctx, "report")
    assert first["count"] == PAGE_SIZE and first["has_more"] is True
    assert (
        "[Report 00](https://drive.google.com/file/d/file00/view?usp=drivesdk)" in first["display"]
    )
    assert "id: `file00`" in first["display"]

    second = search_drive_files(ctx, "report", page=2)
    assert second["count"] == 3 and second["has_more"] is False
    assert "Report 12" in second["display"] and "Report 00" not in second["display"]

    calls = google.requests_to("GET", "/drive/v3/files")
    assert calls[0].param("pageToken") is None
    # The second request carries exactly the token the first answer handed out.
    assert calls[1].param("pageToken") == pages(ctx.deps, "drive:report").tokens[2]
    assert calls[1].param("q") == "fullText contains 'report' and trashed = false"

    with pytest.raises(ModelRetry, match="page 2 was the last"):
        search_drive_files(ctx, "report", page=3)


def test_pages_are_kept_per_query(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    _reports(google, PAGE_SIZE + 1)
    ctx = google_ctx()
    with pytest.raises(ModelRetry, match=r"pages are fetched in order.*page=1\."):
        search_drive_files(ctx, "report", page=2)
    search_drive_files(ctx, "report")
    other = search_drive_files(ctx, "numbers")  # a second listing does not disturb the first
    assert other["has_more"] is True
    assert search_drive_files(ctx, "report", page=2)["count"] == 1


def test_query_quotes_are_escaped(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    google.files["q"] = DriveFile("q", "Bob's notes", "text/plain", b"")
    result = search_drive_files(google_ctx(), "Bob's")
    assert result["count"] == 1
    sent = google.requests_to("GET", "/drive/v3/files")[0].param("q")
    assert sent == "fullText contains 'Bob\\'s' and trashed = false"


@pytest.mark.parametrize(
    ("mime", "export_as", "kind"),
    [
        (GOOGLE_DOC, "text/plain", "Google Doc"),
        (GOOGLE_SHEET, "text/csv", "Google Sheet"),
        (GOOGLE_SLIDES, "text/plain", "Google Slides"),
    ],
)
def test_docs_editors_files_are_exported_to_text(
    google: FakeGoogle, google_ctx: MakeCtx, mime: str, export_as: str, kind: str
) -> None:
    text = "a,b\n1,2\n" if export_as == "text/csv" else "Plan for Q3\n\nShip it."
    google.files["d1"] = DriveFile("d1", "Plan", mime, exports={export_as: text.encode()})
    result = read_drive_file(google_ctx(), "d1")
    assert text in result["display"]
    assert kind in result["display"]
    assert result["link"].startswith("https://docs.google.com/")
    export = google.requests_to("GET", "/drive/v3/files/d1/export")
    assert [r.param("mimeType") for r in export] == [export_as]
    assert not google.requests_to("GET", "/drive/v3/files/d1") or all(
        r.param("alt") != "media" for r in google.requests_to("GET", "/drive/v3/files/d1")
    )


def test_plain_files_are_downloaded(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    google.files["t1"] = DriveFile("t1", "notes.md", "text/markdown", "# Notes\nCafé".encode())
    result = read_drive_file(google_ctx(), "t1")
    assert "# Notes\nCafé" in result["display"]
    media = [
        r for r in google.requests_to("GET", "/drive/v3/files/t1") if r.param("alt") == "media"
    ]
    assert len(media) == 1


def test_binary_and_folder_are_refused_readably(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    google.files["b"] = DriveFile("b", "photo.jpg", "image/jpeg", b"\xff\xd8\xff\xe0\x00")
    google.files["f"] = DriveFile("f", "Projects", GOOGLE_FOLDER)
    ctx = google_ctx()
    binary = read_drive_file(ctx, "b")
    assert binary["error"] is True and "binary" in binary["display"]
    folder = read_drive_file(ctx, "f")
    assert folder["error"] is True and "folder" in folder["display"]


def test_long_files_are_truncated(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    google.files["big"] = DriveFile("big", "big.txt", "text/plain", b"x" * 50_000)
    result = read_drive_file(google_ctx(), "big")
    assert result["truncated"] is True
    assert "truncated at 40,000 characters" in result["display"]


# -- failures -------------------------------------------------------------------------------


def test_unknown_file_id_is_a_hint_to_the_model(google_ctx: MakeCtx) -> None:
    with pytest.raises(ModelRetry) as info:
        read_drive_file(google_ctx(), "nope")
    message = str(info.value)
    assert "404" in message and "File not found: nope." in message
    assert "search_drive_files" in message


@pytest.mark.parametrize("body", [RATE_LIMITED, BACKEND_ERROR])
def test_rate_limits_and_server_errors_are_retried(
    google: FakeGoogle, google_ctx: MakeCtx, body: dict
) -> None:
    _reports(google, 2)
    status = body["error"]["code"]
    google.fail_next("GET", "/drive/v3/files", status, body)
    ctx = google_ctx()
    with pytest.raises(ModelRetry, match="temporary: try the same call again"):
        search_drive_files(ctx, "report")
    # The model's retry goes through.
    assert search_drive_files(ctx, "report")["count"] == 2


def test_403_rate_limit_reason_is_transient(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    body = google_error(403, "User Rate Limit Exceeded", "userRateLimitExceeded")
    google.fail_next("GET", "/drive/v3/files", 403, body)
    with pytest.raises(ModelRetry, match="temporary"):
        search_drive_files(google_ctx(), "report")


def test_api_not_enabled_is_terminal_and_names_the_link(
    google: FakeGoogle, google_ctx: MakeCtx
) -> None:
    google.fail_next("GET", "/drive/v3/files", 403, api_disabled_error())
    result = search_drive_files(google_ctx(), "report")
    assert result["error"] is True
    assert "Drive API is not enabled" in result["display"]
    assert (
        "https://console.developers.google.com/apis/api/drive.googleapis.com/overview?project=123456"
        in result["display"]
    )


def test_missing_scope_is_terminal_and_says_sign_in_again(
    google: FakeGoogle, google_ctx: MakeCtx
) -> None:
    body = google_error(
        403, "Request had insufficient authentication scopes.", "insufficientPermissions"
    )
    google.fail_next("GET", "/drive/v3/files", 403, body)
    result = search_drive_files(google_ctx(), "report")
    assert result["error"] is True
    assert "co-kernel google auth" in result["display"]


def test_forbidden_file_is_terminal(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    body = google_error(
        403, "The user does not have sufficient permissions for this file.", "forbidden"
    )
    google.fail_next("GET", "/drive/v3/files/x", 403, body)
    result = read_drive_file(google_ctx(), "x")
    assert result["error"] is True and "not allowed" in result["display"]


def test_401_when_the_token_cannot_be_refreshed_is_terminal(
    google: FakeGoogle, google_ctx: MakeCtx
) -> None:
    # Google rejects the access token; google-auth tries to refresh it, which these
    # credentials cannot: the person has to sign in again.
    result = search_drive_files(google_ctx(token="revoked-token"), "report")
    assert result["error"] is True
    assert "refused Co's saved sign-in" in result["display"]
    assert "run `co-kernel google auth`" in result["display"]
    assert google.requests_to("GET", "/drive/v3/files")[0].bearer == "revoked-token"


def test_401_that_a_refresh_does_not_cure_is_terminal(
    google: FakeGoogle, google_ctx: MakeCtx
) -> None:
    ctx = google_ctx(token="stale-token")
    refreshed: list[str] = []

    def refresh_handler(request: object, scopes: object) -> tuple[str, datetime]:
        # A refresh that succeeds but yields a token Google still rejects (e.g. revoked access).
        refreshed.append("x")
        return f"fresh-{len(refreshed)}", datetime.now(UTC).replace(tzinfo=None) + timedelta(
            hours=1
        )

    creds = Credentials(token="stale-token", refresh_handler=refresh_handler)
    set_session_credentials(ctx.deps, creds, CredentialSource("token", Path("google_token.json")))
    result = search_drive_files(ctx, "report")
    assert refreshed, "google-auth refreshes once on a 401 before giving up"
    assert result["error"] is True
    assert "answered 401" in result["display"] and "co-kernel google auth" in result["display"]
