"""Gmail and Calendar tools against local Gmail v1 and Calendar v3 through googleapiclient."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from pydantic_ai import ModelRetry

from co_kernel.tools.google.calendar import list_calendar_events, search_calendar_events
from co_kernel.tools.google.gmail import create_email_draft, list_emails, search_emails

from ._google_server import BACKEND_ERROR, FakeGoogle, Mail, api_disabled_error
from .conftest import ToolContext

MakeCtx = Callable[..., ToolContext]


def _mailbox(google: FakeGoogle) -> None:
    google.mail = [
        Mail("18f0000000000001", "Alice <alice@example.com>", "Invoice 42", "Please pay"),
        Mail("18f0000000000002", "Bob <bob@example.com>", "Lunch?", "Tomorrow at noon"),
        Mail("18f0000000000003", "Alice <alice@example.com>", "Old invoice", "Paid", ["ARCHIVE"]),
    ]


def test_list_emails_shows_the_inbox_with_links(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    _mailbox(google)
    result = list_emails(google_ctx())
    assert result["count"] == 2 and result["has_more"] is False
    assert "**Invoice 42** from Alice <alice@example.com>" in result["display"]
    assert "https://mail.google.com/mail/u/0/#inbox/18f0000000000001" in result["display"]
    assert "Old invoice" not in result["display"]
    listing = google.requests_to("GET", "/gmail/v1/users/me/messages")[0]
    assert listing.params("labelIds") == ["INBOX"]
    gets = google.requests_to("GET", "/gmail/v1/users/me/messages/.+")
    assert {r.param("format") for r in gets} == {"metadata"}


def test_search_passes_gmail_query_syntax_through(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    _mailbox(google)
    result = search_emails(google_ctx(), "from:alice invoice")
    assert result["count"] == 2
    assert "Old invoice" in result["display"] and "Lunch" not in result["display"]
    sent = google.requests_to("GET", "/gmail/v1/users/me/messages")[0]
    assert sent.param("q") == "from:alice invoice"
    assert sent.params("labelIds") == []


def test_email_pages_follow_the_next_page_token(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    google.mail = [Mail(f"18f{i:013x}", "x@example.com", f"Note {i}") for i in range(5)]
    ctx = google_ctx()
    first = list_emails(ctx, max_results=3)
    assert first["has_more"] is True and first["count"] == 3
    second = list_emails(ctx, max_results=3, page=2)
    assert second["has_more"] is False and second["count"] == 2
    assert "4. **Note 3**" in second["display"]


def test_draft_is_written_as_base64url_mime(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    result = create_email_draft(
        google_ctx(),
        "Alice <alice@example.com>, bob@example.com",
        "Q3 plan",
        "Hi both,\nsee the plan.",
    )
    (draft,) = google.draft_messages()
    assert draft["To"] == "Alice <alice@example.com>, bob@example.com"
    assert draft["Subject"] == "Q3 plan"
    assert draft.get_content().strip() == "Hi both,\nsee the plan."
    assert result["link"].startswith("https://mail.google.com/mail/u/0/#drafts?compose=")
    assert "not sent" in result["display"]


@pytest.mark.parametrize("to", ["alice", "not an address", "@example.com"])
def test_draft_to_a_non_address_is_a_hint(google: FakeGoogle, google_ctx: MakeCtx, to: str) -> None:
    with pytest.raises(ModelRetry, match="email addresses"):
        create_email_draft(google_ctx(), to, "Hi", "Body")
    assert google.drafts == []


def test_subject_with_a_line_break_is_refused(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    with pytest.raises(ModelRetry, match="single line"):
        create_email_draft(google_ctx(), "a@example.com", "Hi\nBcc: evil@example.com", "Body")
    assert google.drafts == []


def test_unknown_message_is_a_hint(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    google.mail = [Mail("18f0000000000009", "x@example.com", "Gone")]
    google.fail_next(
        "GET",
        "/gmail/v1/users/me/messages/18f0000000000009",
        404,
        {
            "error": {
                "code": 404,
                "message": "Requested entity was not found.",
                "errors": [
                    {
                        "message": "Requested entity was not found.",
                        "domain": "global",
                        "reason": "notFound",
                    }
                ],
            }
        },
    )
    with pytest.raises(ModelRetry, match="Requested entity was not found"):
        list_emails(google_ctx())


def test_gmail_api_not_enabled_names_gmail(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    google.fail_next(
        "POST", "/gmail/v1/users/me/drafts", 403, api_disabled_error("gmail.googleapis.com")
    )
    result = create_email_draft(google_ctx(), "a@example.com", "Hi", "Body")
    assert result["error"] is True
    assert "Gmail API is not enabled" in result["display"]
    assert "gmail.googleapis.com" in result["display"]


# -- Calendar ---------------------------------------------------------------------------------


def _event(summary: str, start: datetime, **extra: str) -> dict:
    return {
        "id": summary.lower().replace(" ", ""),
        "summary": summary,
        "htmlLink": f"https://www.google.com/calendar/event?eid={summary.replace(' ', '')}",
        "start": {"dateTime": start.isoformat()},
        "end": {"dateTime": (start + timedelta(hours=1)).isoformat()},
        **extra,
    }


def test_calendar_lists_the_window_with_links(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    google.events = [
        _event("Standup", now + timedelta(days=1), location="Room 1"),
        _event("Planning", now + timedelta(days=3)),
        _event("Offsite", now + timedelta(days=20)),
        {
            "id": "hol",
            "summary": "Holiday",
            "htmlLink": "https://www.google.com/calendar/event?eid=hol",
            "start": {"date": (now + timedelta(days=2)).date().isoformat()},
            "end": {"date": (now + timedelta(days=3)).date().isoformat()},
        },
    ]
    result = list_calendar_events(google_ctx(), days_ahead=7)
    display = result["display"]
    assert result["count"] == 3 and result["has_more"] is False
    assert "[Standup](https://www.google.com/calendar/event?eid=Standup), Room 1" in display
    assert "(all day)" in display and "Offsite" not in display
    sent = google.requests_to("GET", "/calendar/v3/calendars/primary/events")[0]
    assert sent.param("singleEvents") == "true" and sent.param("orderBy") == "startTime"
    window = datetime.fromisoformat(sent.param("timeMax")) - datetime.fromisoformat(
        sent.param("timeMin")
    )
    assert window == timedelta(days=7)


def test_calendar_search_passes_the_words(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    now = datetime.now(UTC)
    google.events = [
        _event("Standup", now + timedelta(days=1)),
        _event("Budget review", now + timedelta(days=2)),
    ]
    result = search_calendar_events(google_ctx(), "budget")
    assert result["count"] == 1 and "Budget review" in result["display"]
    assert (
        google.requests_to("GET", "/calendar/v3/calendars/primary/events")[0].param("q") == "budget"
    )


def test_calendar_later_pages_keep_the_first_window(
    google: FakeGoogle, google_ctx: MakeCtx
) -> None:
    now = datetime.now(UTC)
    google.events = [_event(f"Meeting {i}", now + timedelta(hours=i + 1)) for i in range(30)]
    ctx = google_ctx()
    first = list_calendar_events(ctx)
    second = list_calendar_events(ctx, page=2)
    assert first["has_more"] is True and second["count"] == 5
    calls = google.requests_to("GET", "/calendar/v3/calendars/primary/events")
    assert calls[1].param("timeMin") == calls[0].param("timeMin")
    assert calls[1].param("pageToken")


def test_calendar_server_error_is_retried(google: FakeGoogle, google_ctx: MakeCtx) -> None:
    google.fail_next("GET", "/calendar/v3/calendars/primary/events", 503, BACKEND_ERROR)
    with pytest.raises(ModelRetry, match=r"answered 503.*temporary"):
        list_calendar_events(google_ctx())
