"""Google Calendar tools: upcoming events of the primary calendar, all or matching words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import RunContext

from ...session_state import CoDeps
from .._paging import pages
from ._client import CALENDAR, run_google

__all__ = ["list_calendar_events", "search_calendar_events"]

PAGE_SIZE = 25
_NOT_FOUND = "The primary calendar was not found; the account may have no Google Calendar."


def _when(start: dict[str, Any], end: dict[str, Any]) -> str:
    if "date" in start:  # all-day events carry dates, not times
        return f"{start['date']} (all day)"
    try:
        begins = datetime.fromisoformat(start["dateTime"])
        ends = datetime.fromisoformat(end["dateTime"])
    except (KeyError, ValueError):
        return str(start.get("dateTime", "?"))
    same_day = begins.date() == ends.date()
    until = ends.strftime("%H:%M") if same_day else ends.strftime("%a %d %b %H:%M")
    return f"{begins.strftime('%a %d %b %Y %H:%M')}–{until} ({begins.strftime('%z')})"


def _event_line(event: dict[str, Any]) -> str:
    summary = event.get("summary") or "(no title)"
    link = event.get("htmlLink")
    title = f"[{summary}]({link})" if link else summary
    line = f"- {_when(event.get('start', {}), event.get('end', {}))}: {title}"
    if event.get("location"):
        line += f", {event['location']}"
    meet = event.get("hangoutLink")
    if meet:
        line += f", video: {meet}"
    return line


def _events(
    ctx: RunContext[CoDeps], *, query: str | None, days_ahead: int, page: int
) -> dict[str, Any]:
    listing = pages(ctx.deps, f"calendar:{query or ''}:{days_ahead}")
    token = listing.token_for(page)
    if page == 1:
        now = datetime.now(UTC).replace(microsecond=0)
        listing.context["timeMin"] = now.isoformat().replace("+00:00", "Z")
        listing.context["timeMax"] = (
            (now + timedelta(days=days_ahead)).isoformat().replace("+00:00", "Z")
        )
    # Later pages keep page 1's window: a page token belongs to the query that made it.
    window = {"timeMin": listing.context["timeMin"], "timeMax": listing.context["timeMax"]}

    def body(service: Any) -> dict[str, Any]:
        answer = (
            service.events()
            .list(
                calendarId="primary",
                singleEvents=True,
                orderBy="startTime",
                maxResults=PAGE_SIZE,
                pageToken=token,
                q=query,
                **window,
            )
            .execute()
        )
        events = answer.get("items", [])
        has_more = listing.record(page, answer.get("nextPageToken"))
        lines = [_event_line(e) for e in events]
        span = f"in the next {days_ahead} day{'s' if days_ahead != 1 else ''}"
        if not lines:
            what = "No events" if query is None else f"No events matching '{query}'"
            lines = [f"{what} {span}" + (f" on page {page}." if page > 1 else ".")]
        if has_more:
            lines.append(f"More events: page {page + 1}.")
        return {
            "display": "\n".join(lines),
            "count": len(events),
            "page": page,
            "has_more": has_more,
        }

    return run_google(ctx, CALENDAR, body, not_found=_NOT_FOUND)


def list_calendar_events(
    ctx: RunContext[CoDeps],
    days_ahead: Annotated[int, Field(ge=1, le=365)] = 7,
    page: Annotated[int, Field(ge=1)] = 1,
) -> dict[str, Any]:
    """List upcoming events of the person's primary Google Calendar, soonest first.

    Args:
        days_ahead: How many days from now to look ahead.
        page: 1 for the first events; page + 1 for more when has_more was true.
    """
    return _events(ctx, query=None, days_ahead=days_ahead, page=page)


def search_calendar_events(
    ctx: RunContext[CoDeps],
    query: Annotated[str, Field(min_length=1, max_length=500)],
    days_ahead: Annotated[int, Field(ge=1, le=365)] = 30,
    page: Annotated[int, Field(ge=1)] = 1,
) -> dict[str, Any]:
    """Find upcoming events whose title, description, location or attendees contain the words.

    Args:
        query: Words to look for, e.g. `standup` or a person's name.
        days_ahead: How many days from now to look ahead.
        page: 1 for the first events; page + 1 for more when has_more was true.
    """
    return _events(ctx, query=query, days_ahead=days_ahead, page=page)
