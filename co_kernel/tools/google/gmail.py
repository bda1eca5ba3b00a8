"""Gmail tools: list the inbox, search with Gmail's query syntax, write a draft (approved)."""

from __future__ import annotations

import base64
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import getaddresses
from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import ModelRetry, RunContext

from ...session_state import CoDeps
from .._paging import pages
from ._client import GMAIL, run_google

__all__ = ["create_email_draft", "list_emails", "message_link", "search_emails"]

_NOT_FOUND = "Use a message id exactly as `list_emails` or `search_emails` returned it."
_HEADERS = ["From", "To", "Subject", "Date"]


def message_link(message_id: str) -> str:
    """The Gmail web address of a message."""
    return f"https://mail.google.com/mail/u/0/#inbox/{message_id}"


def _summary(n: int, message: dict[str, Any]) -> str:
    headers = {
        h.get("name", "").lower(): h.get("value", "")
        for h in message.get("payload", {}).get("headers", [])
    }
    subject = headers.get("subject") or "(no subject)"
    sender = headers.get("from", "unknown sender")
    date = headers.get("date", "")
    snippet = (message.get("snippet") or "").strip()
    line = f"{n}. **{subject}** from {sender}" + (f", {date}" if date else "")
    if snippet:
        line += f"\n   {snippet}"
    return line + f"\n   {message_link(message['id'])}"


def _list(
    ctx: RunContext[CoDeps], *, query: str | None, max_results: int, page: int
) -> dict[str, Any]:
    key = f"gmail:{'inbox' if query is None else 'search'}:{query or ''}:{max_results}"
    listing = pages(ctx.deps, key)
    token = listing.token_for(page)

    def body(service: Any) -> dict[str, Any]:
        messages = service.users().messages()
        params: dict[str, Any] = {"userId": "me", "maxResults": max_results, "pageToken": token}
        if query is None:
            params["labelIds"] = ["INBOX"]
        else:
            params["q"] = query
        answer = messages.list(**params).execute()
        found = answer.get("messages", [])
        details = [
            messages.get(
                userId="me", id=m["id"], format="metadata", metadataHeaders=_HEADERS
            ).execute()
            for m in found
        ]
        has_more = listing.record(page, answer.get("nextPageToken"))
        first = (page - 1) * max_results + 1
        lines = [_summary(first + i, m) for i, m in enumerate(details)]
        if not lines:
            where = "in the inbox" if query is None else f"for `{query}`"
            lines = [f"No emails {where}" + (f" on page {page}." if page > 1 else ".")]
        if has_more:
            lines.append(f"More emails: page {page + 1}.")
        return {
            "display": "\n".join(lines),
            "count": len(details),
            "page": page,
            "has_more": has_more,
        }

    return run_google(ctx, GMAIL, body, not_found=_NOT_FOUND)


def list_emails(
    ctx: RunContext[CoDeps],
    max_results: Annotated[int, Field(ge=1, le=25)] = 10,
    page: Annotated[int, Field(ge=1)] = 1,
) -> dict[str, Any]:
    """List the newest emails in the Gmail inbox.

    Args:
        max_results: How many emails per page.
        page: 1 for the newest; page + 1 for more when has_more was true.
    """
    return _list(ctx, query=None, max_results=max_results, page=page)


def search_emails(
    ctx: RunContext[CoDeps],
    query: Annotated[str, Field(min_length=1, max_length=500)],
    max_results: Annotated[int, Field(ge=1, le=25)] = 10,
    page: Annotated[int, Field(ge=1)] = 1,
) -> dict[str, Any]:
    """Search Gmail with Gmail's search syntax, as in the Gmail search box.

    Args:
        query: e.g. `from:alice@example.com subject:invoice newer_than:7d is:unread`.
        max_results: How many emails per page.
        page: 1 for the first results; page + 1 for more when has_more was true.
    """
    return _list(ctx, query=query, max_results=max_results, page=page)


def _recipients(to: str) -> list[Address]:
    """Parsed recipients; a hint to the model when one is not an email address."""
    found = [(name, addr) for name, addr in getaddresses([to]) if addr]
    bad = [addr for _, addr in found if "@" not in addr or addr.startswith("@")]
    if not found or bad:
        raise ModelRetry(
            f"`to` must be one or more email addresses separated by commas, got {to!r}. "
            "Ask the person for the address if you do not know it."
        )
    try:
        return [Address(display_name=name, addr_spec=addr) for name, addr in found]
    except (ValueError, IndexError) as exc:
        raise ModelRetry(f"`to` has an address Gmail would not accept ({exc}).") from exc


def create_email_draft(
    ctx: RunContext[CoDeps],
    to: Annotated[str, Field(min_length=3, max_length=2000)],
    subject: Annotated[str, Field(max_length=900)],
    body: Annotated[str, Field(max_length=100_000)],
) -> dict[str, Any]:
    """Write a Gmail draft (not sent: the person reviews and sends it in Gmail).

    Args:
        to: Recipient email addresses, separated by commas.
        subject: The subject line.
        body: The message as plain text.
    """
    message = EmailMessage()
    try:
        message["To"] = _recipients(to)
        message["Subject"] = subject
    except ValueError as exc:  # e.g. a line break in the subject (header injection)
        raise ModelRetry(f"The subject cannot be used as is ({exc}); use a single line.") from exc
    message.set_content(body)
    raw = base64.urlsafe_b64encode(message.as_bytes()).decode("ascii")

    def call(service: Any) -> dict[str, Any]:
        draft = (
            service.users().drafts().create(userId="me", body={"message": {"raw": raw}}).execute()
        )
        message_id = draft.get("message", {}).get("id", "")
        link = f"https://mail.google.com/mail/u/0/#drafts?compose={message_id}"
        return {
            "display": f"Draft saved (not sent) to {to}: **{subject or '(no subject)'}**\n{link}",
            "draft_id": draft.get("id"),
            "link": link,
        }

    return run_google(ctx, GMAIL, call, not_found=_NOT_FOUND)
