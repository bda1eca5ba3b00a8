"""Google Drive tools: search files (paged) and read one as text."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import RunContext

from ...session_state import CoDeps
from .._paging import pages
from ._client import DRIVE, run_google

__all__ = ["read_drive_file", "search_drive_files"]

PAGE_SIZE = 10
# The most text one read returns; a model context is the scarce resource, not Drive.
MAX_CHARS = 40_000
# Drive refuses exports over 10 MB; downloads get the same cap so a stray video is not read.
MAX_DOWNLOAD_BYTES = 10 * 1024 * 1024

# Docs editors files cannot be downloaded, only exported (Drive's files.export).
EXPORTS: dict[str, tuple[str, str]] = {
    "application/vnd.google-apps.document": ("text/plain", "Google Doc"),
    "application/vnd.google-apps.spreadsheet": ("text/csv", "Google Sheet, first sheet as CSV"),
    "application/vnd.google-apps.presentation": ("text/plain", "Google Slides"),
}
_TEXT_TYPES = (
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-yaml",
    "application/yaml",
    "application/x-python",
    "application/sql",
    "application/x-sh",
)
_NOT_FOUND = (
    "Use a file id exactly as `search_drive_files` returned it (the `id:` of a result); "
    "search again if you do not have one."
)


def _query(text: str) -> str:
    """Drive search syntax for words in a file's name or content."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return f"fullText contains '{escaped}' and trashed = false"


def _file_line(n: int, f: dict[str, Any]) -> str:
    name = f.get("name") or "(untitled)"
    link = f.get("webViewLink")
    title = f"[{name}]({link})" if link else name
    kind = EXPORTS.get(f.get("mimeType", ""), ("", f.get("mimeType", "file")))[1]
    modified = (f.get("modifiedTime") or "")[:10]
    when = f", modified {modified}" if modified else ""
    return f"{n}. {title} ({kind}{when}) id: `{f.get('id')}`"


def search_drive_files(
    ctx: RunContext[CoDeps],
    query: Annotated[str, Field(min_length=1, max_length=500)],
    page: Annotated[int, Field(ge=1)] = 1,
) -> dict[str, Any]:
    """Search Google Drive for files whose name or content contains the words.

    Args:
        query: Words to look for, e.g. `quarterly report`.
        page: 1 for the first results; when the previous result had has_more=true and the
            person wants more, call again with the same query and page + 1.
    """
    listing = pages(ctx.deps, f"drive:{query}")
    token = listing.token_for(page)

    def body(service: Any) -> dict[str, Any]:
        answer = (
            service.files()
            .list(
                q=_query(query),
                pageSize=PAGE_SIZE,
                pageToken=token,
                fields="nextPageToken, files(id, name, mimeType, modifiedTime, webViewLink)",
                supportsAllDrives=True,
                includeItemsFromAllDrives=True,
            )
            .execute()
        )
        files = answer.get("files", [])
        has_more = listing.record(page, answer.get("nextPageToken"))
        first = (page - 1) * PAGE_SIZE + 1
        lines = [_file_line(first + i, f) for i, f in enumerate(files)]
        if not lines:
            lines = [f"No Drive files match '{query}'" + (f" on page {page}." if page > 1 else ".")]
        if has_more:
            lines.append(f"More results: page {page + 1}.")
        return {
            "display": "\n".join(lines),
            "count": len(files),
            "page": page,
            "has_more": has_more,
        }

    return run_google(ctx, DRIVE, body, not_found=_NOT_FOUND)


def _is_text(mime: str) -> bool:
    return mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml"))


def _decode(data: bytes, mime: str) -> str | None:
    """The text of a downloaded file, or None when it is binary."""
    if _is_text(mime):
        return data.decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_drive_file(
    ctx: RunContext[CoDeps], file_id: Annotated[str, Field(min_length=1, max_length=200)]
) -> dict[str, Any]:
    """Read a Google Drive file as text: Docs and Slides as plain text, Sheets as CSV,
    other text files as they are.

    Args:
        file_id: The id of the file, as `search_drive_files` returned it.
    """

    def body(service: Any) -> dict[str, Any]:
        files = service.files()
        meta = files.get(
            fileId=file_id, fields="id, name, mimeType, webViewLink, size", supportsAllDrives=True
        ).execute()
        name, mime = meta.get("name", file_id), meta.get("mimeType", "")
        link = meta.get("webViewLink")
        title = f"[{name}]({link})" if link else name
        if mime in EXPORTS:
            target, kind = EXPORTS[mime]
            data = files.export(fileId=file_id, mimeType=target).execute()
            text = data.decode("utf-8", errors="replace")
        elif mime.startswith("application/vnd.google-apps."):
            kind = mime.rsplit(".", 1)[-1]
            return {
                "display": f"{title} is a Google {kind}; it has no text Co can read.",
                "error": True,
            }
        else:
            kind = mime or "file"
            size = int(meta.get("size") or 0)
            if size > MAX_DOWNLOAD_BYTES:
                return {
                    "display": f"{title} is {size / 1e6:.0f} MB; Co reads files up to "
                    f"{MAX_DOWNLOAD_BYTES // 2**20} MB.",
                    "error": True,
                }
            decoded = _decode(
                files.get_media(fileId=file_id, supportsAllDrives=True).execute(), mime
            )
            if decoded is None:
                return {
                    "display": f"{title} is a binary file ({kind}); Co cannot show it as text.",
                    "error": True,
                }
            text = decoded
        truncated = len(text) > MAX_CHARS
        if truncated:
            text = text[:MAX_CHARS] + f"\n\n[… truncated at {MAX_CHARS:,} characters]"
        return {
            "display": f"**{title}** ({kind})\n\n{text}",
            "file_id": file_id,
            "name": name,
            "link": link,
            "truncated": truncated,
        }

    return run_google(ctx, DRIVE, body, not_found=_NOT_FOUND)
