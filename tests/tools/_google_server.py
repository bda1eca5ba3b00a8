"""A local stand-in for Drive v3, Gmail v1, Calendar v3 and Google's OAuth token endpoint.

Paths, parameters, JSON shapes, error bodies and status codes are those of the public API
references, so the real ``googleapiclient`` built from its shipped discovery documents talks
to it unchanged once ``client_options.api_endpoint`` points here. Every API call needs a
bearer token the server issued (or was given); others get Google's 401.
"""

from __future__ import annotations

import base64
import email
import email.policy
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ._fake_api import FakeApiServer, Paginator, Request, Response

GOOGLE_DOC = "application/vnd.google-apps.document"
GOOGLE_SHEET = "application/vnd.google-apps.spreadsheet"
GOOGLE_SLIDES = "application/vnd.google-apps.presentation"
GOOGLE_FOLDER = "application/vnd.google-apps.folder"


def google_error(
    status: int,
    message: str,
    reason: str,
    *,
    domain: str = "global",
    status_name: str | None = None,
    details: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An error body of the shape Google APIs document."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "errors": [{"message": message, "domain": domain, "reason": reason}],
    }
    if status_name:
        error["status"] = status_name
    if details:
        error["details"] = details
    return {"error": error}


def api_disabled_error(service: str = "drive.googleapis.com", project: str = "123456") -> Any:
    """The 403 an API that the OAuth client's project has not enabled answers with."""
    url = f"https://console.developers.google.com/apis/api/{service}/overview?project={project}"
    return google_error(
        403,
        f"Google API has not been used in project {project} before or it is disabled. "
        f"Enable it by visiting {url} then retry.",
        "accessNotConfigured",
        domain="usageLimits",
        status_name="PERMISSION_DENIED",
        details=[
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "SERVICE_DISABLED",
                "domain": "googleapis.com",
                "metadata": {
                    "service": service,
                    "consumer": f"projects/{project}",
                    "activationUrl": url,
                },
            }
        ],
    )


UNAUTHENTICATED = google_error(
    401,
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
    "cookie or other valid authentication credential.",
    "authError",
    status_name="UNAUTHENTICATED",
)
RATE_LIMITED = google_error(429, "Rate Limit Exceeded", "rateLimitExceeded", domain="usageLimits")
BACKEND_ERROR = google_error(500, "Internal Error", "backendError")


@dataclass
class DriveFile:
    """A file in the fake Drive."""

    id: str
    """File id."""
    name: str
    """File name."""
    mime_type: str
    """Drive MIME type (google-apps types for Docs editors files)."""
    content: bytes = b""
    """Bytes of a binary or text file (alt=media)."""
    exports: dict[str, bytes] = field(default_factory=dict)
    """Export MIME type -> bytes, for Docs editors files."""
    modified: str = "2024-05-01T10:00:00.000Z"
    """modifiedTime."""

    @property
    def link(self) -> str:
        kind = {GOOGLE_DOC: "document", GOOGLE_SHEET: "spreadsheets", GOOGLE_SLIDES: "presentation"}
        if self.mime_type in kind:
            return f"https://docs.google.com/{kind[self.mime_type]}/d/{self.id}/edit?usp=drivesdk"
        return f"https://drive.google.com/file/d/{self.id}/view?usp=drivesdk"

    def resource(self) -> dict[str, Any]:
        res = {
            "kind": "drive#file",
            "id": self.id,
            "name": self.name,
            "mimeType": self.mime_type,
            "modifiedTime": self.modified,
            "webViewLink": self.link,
        }
        if not self.mime_type.startswith("application/vnd.google-apps."):
            res["size"] = str(len(self.content))
        return res


@dataclass
class Mail:
    """A message in the fake mailbox."""

    id: str
    """Message id."""
    sender: str
    """From header."""
    subject: str
    """Subject header."""
    snippet: str = ""
    """Gmail's snippet."""
    labels: list[str] = field(default_factory=lambda: ["INBOX"])
    """Label ids."""
    date: str = "Wed, 1 May 2024 10:00:00 +0000"
    """Date header."""

    def resource(self, headers: list[str]) -> dict[str, Any]:
        all_headers = {"From": self.sender, "To": "me@example.com", "Subject": self.subject}
        all_headers["Date"] = self.date
        wanted = [h for h in all_headers if not headers or h in headers]
        return {
            "id": self.id,
            "threadId": self.id,
            "labelIds": self.labels,
            "snippet": self.snippet,
            "payload": {
                "mimeType": "text/plain",
                "headers": [{"name": h, "value": all_headers[h]} for h in wanted],
            },
            "sizeEstimate": 1000,
            "internalDate": "1714557600000",
        }


class FakeGoogle(FakeApiServer):
    """Drive, Gmail, Calendar and the OAuth token endpoint on one local server."""

    def __init__(self, *, access_tokens: tuple[str, ...] = ("test-token",)) -> None:
        super().__init__()
        self.access_tokens = set(access_tokens)
        self.auth_codes: dict[str, tuple[str, str, str]] = {}
        """Authorization code -> (access token, refresh token, scopes) its exchange grants."""
        self.refresh_grants: dict[str, tuple[str, str]] = {}
        """Refresh token -> (access token, scopes) a refresh with it grants."""
        self.files: dict[str, DriveFile] = {}
        self.mail: list[Mail] = []
        self.drafts: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self._pages = Paginator()
        self.route("POST", r"/token", self._token)
        self.route("GET", r"/drive/v3/files", self._drive_list)
        self.route("GET", r"/drive/v3/files/([^/]+)", self._drive_get)
        self.route("GET", r"/drive/v3/files/([^/]+)/export", self._drive_export)
        self.route("GET", r"/gmail/v1/users/me/messages", self._gmail_list)
        self.route("GET", r"/gmail/v1/users/me/messages/([^/]+)", self._gmail_get)
        self.route("POST", r"/gmail/v1/users/me/drafts", self._gmail_draft)
        self.route("GET", r"/calendar/v3/calendars/([^/]+)/events", self._calendar_list)

    @property
    def api_endpoint(self) -> str:
        """The root URL to give Co (setting `google_api_endpoint`)."""
        return self.base_url + "/"

    @property
    def token_uri(self) -> str:
        return self.base_url + "/token"

    def draft_messages(self) -> list[email.message.EmailMessage]:
        """The drafts created so far, their raw MIME decoded (base64url, as Gmail takes it)."""
        out = []
        for draft in self.drafts:
            raw = draft["message"]["raw"]
            data = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
            out.append(email.message_from_bytes(data, policy=email.policy.default))
        return out  # type: ignore[return-value]

    def drafts_requests_bearer(self) -> list[str | None]:
        """The bearer token of every drafts.create request."""
        return [r.bearer for r in self.requests_to("POST", "/gmail/v1/users/me/drafts")]

    def handle(self, request: Request) -> Response:
        if request.path != "/token" and request.bearer not in self.access_tokens:
            with self._lock:
                self.requests.append(request)
            return Response(401, UNAUTHENTICATED, {"WWW-Authenticate": 'Bearer realm="google"'})
        return super().handle(request)

    def not_found(self, request: Request) -> Response:
        return Response(404, google_error(404, "Not Found", "notFound"))

    # -- OAuth ---------------------------------------------------------------------------

    def _token(self, request: Request, _: re.Match[str]) -> Response:
        grant = request.param("grant_type")
        if grant == "authorization_code":
            granted = self.auth_codes.get(request.param("code") or "")
            if granted is None:
                return Response(400, {"error": "invalid_grant", "error_description": "Bad Request"})
            access, refresh, scopes = granted
            self.access_tokens.add(access)
            return Response(
                200,
                {
                    "access_token": access,
                    "refresh_token": refresh,
                    "expires_in": 3599,
                    "token_type": "Bearer",
                    "scope": scopes,
                },
            )
        if grant == "refresh_token":
            refreshed = self.refresh_grants.get(request.param("refresh_token") or "")
            if refreshed is None:
                return Response(
                    400,
                    {
                        "error": "invalid_grant",
                        "error_description": "Token has been expired or revoked.",
                    },
                )
            access, scopes = refreshed
            self.access_tokens.add(access)
            # Google answers a refresh without a new refresh token.
            return Response(
                200,
                {
                    "access_token": access,
                    "expires_in": 3599,
                    "token_type": "Bearer",
                    "scope": scopes,
                },
            )
        return Response(400, {"error": "unsupported_grant_type"})

    # -- Drive ---------------------------------------------------------------------------

    def _drive_list(self, request: Request, _: re.Match[str]) -> Response:
        q = request.param("q") or ""
        match = re.search(r"fullText contains '((?:[^'\\]|\\.)*)'", q)
        words = re.sub(r"\\(.)", r"\1", match.group(1)).lower() if match else ""
        found = [
            f.resource()
            for f in self.files.values()
            if words in f.name.lower() or words in f.content.decode("utf-8", "replace").lower()
        ]
        size = int(request.param("pageSize") or 100)
        page = self._pages.page(found, size=size, token=request.param("pageToken"), listing=q)
        if page is None:
            return self._bad_page_token()
        files, next_token = page
        body: dict[str, Any] = {"kind": "drive#fileList", "incompleteSearch": False, "files": files}
        if next_token:
            body["nextPageToken"] = next_token
        return Response(200, body)

    def _bad_page_token(self) -> Response:
        return Response(
            400, google_error(400, "Invalid Value", "invalid", status_name="INVALID_ARGUMENT")
        )

    def _file(self, file_id: str) -> DriveFile | Response:
        found = self.files.get(file_id)
        if found is None:
            message = f"File not found: {file_id}."
            return Response(404, google_error(404, message, "notFound", status_name="NOT_FOUND"))
        return found

    def _drive_get(self, request: Request, match: re.Match[str]) -> Response:
        f = self._file(match.group(1))
        if isinstance(f, Response):
            return f
        if request.param("alt") == "media":
            if f.mime_type.startswith("application/vnd.google-apps."):
                message = (
                    "Only files with binary content can be downloaded. Use Export with Docs "
                    "Editors files."
                )
                return Response(403, google_error(403, message, "fileNotDownloadable"))
            return Response(200, f.content, content_type=f.mime_type)
        return Response(200, f.resource())

    def _drive_export(self, request: Request, match: re.Match[str]) -> Response:
        f = self._file(match.group(1))
        if isinstance(f, Response):
            return f
        target = request.param("mimeType") or ""
        if target not in f.exports:
            message = "The requested conversion is not supported."
            return Response(400, google_error(400, message, "badRequest"))
        return Response(200, f.exports[target], content_type=target)

    # -- Gmail ---------------------------------------------------------------------------

    @staticmethod
    def _matches(mail: Mail, q: str) -> bool:
        for term in q.split():
            key, _, value = term.partition(":")
            value = value.lower()
            if key == "from" and value:
                if value not in mail.sender.lower():
                    return False
            elif key == "subject" and value:
                if value not in mail.subject.lower():
                    return False
            elif term.lower() not in (mail.subject + " " + mail.snippet).lower():
                return False
        return True

    def _gmail_list(self, request: Request, _: re.Match[str]) -> Response:
        labels = request.params("labelIds")
        q = request.param("q") or ""
        found = [
            {"id": m.id, "threadId": m.id}
            for m in self.mail
            if all(label in m.labels for label in labels) and self._matches(m, q)
        ]
        size = int(request.param("maxResults") or 100)
        listing = f"{q}|{','.join(labels)}"
        page = self._pages.page(found, size=size, token=request.param("pageToken"), listing=listing)
        if page is None:
            return self._bad_page_token()
        messages, next_token = page
        body: dict[str, Any] = {"resultSizeEstimate": len(found)}
        if messages:
            body["messages"] = messages
        if next_token:
            body["nextPageToken"] = next_token
        return Response(200, body)

    def _gmail_get(self, request: Request, match: re.Match[str]) -> Response:
        for m in self.mail:
            if m.id == match.group(1):
                return Response(200, m.resource(request.params("metadataHeaders")))
        message = "Requested entity was not found."
        return Response(404, google_error(404, message, "notFound", status_name="NOT_FOUND"))

    def _gmail_draft(self, request: Request, _: re.Match[str]) -> Response:
        body = request.json()
        if not isinstance(body, dict) or "raw" not in body.get("message", {}):
            return Response(400, google_error(400, "Invalid draft", "invalidArgument"))
        n = len(self.drafts) + 1
        self.drafts.append(body)
        return Response(
            200,
            {
                "id": f"r-{n}",
                "message": {
                    "id": f"18f{n:013x}",
                    "threadId": f"18f{n:013x}",
                    "labelIds": ["DRAFT"],
                },
            },
        )

    # -- Calendar ------------------------------------------------------------------------

    def _calendar_list(self, request: Request, match: re.Match[str]) -> Response:
        if match.group(1) != "primary":
            return Response(404, google_error(404, "Not Found", "notFound"))
        lo = datetime.fromisoformat(request.param("timeMin") or "1970-01-01T00:00:00Z")
        hi = datetime.fromisoformat(request.param("timeMax") or "9999-01-01T00:00:00Z")
        q = (request.param("q") or "").lower()

        def start(e: dict[str, Any]) -> datetime:
            s = e["start"]
            return datetime.fromisoformat(s.get("dateTime") or s["date"] + "T00:00:00+00:00")

        found = sorted(
            (
                e
                for e in self.events
                if lo <= start(e) < hi
                and q in f"{e.get('summary', '')} {e.get('description', '')}".lower()
            ),
            key=start,
        )
        size = int(request.param("maxResults") or 250)
        listing = f"{lo}|{hi}|{q}"
        page = self._pages.page(found, size=size, token=request.param("pageToken"), listing=listing)
        if page is None:
            return self._bad_page_token()
        items, next_token = page
        body: dict[str, Any] = {
            "kind": "calendar#events",
            "summary": "me@example.com",
            "items": items,
        }
        if next_token:
            body["nextPageToken"] = next_token
        return Response(200, body)
