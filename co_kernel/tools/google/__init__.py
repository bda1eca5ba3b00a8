"""Google Drive, Gmail and Calendar tools.

Registered when a credentials file is found (the token `co-kernel google auth` saved, or an
Application Default Credentials file); that check reads no file contents and makes no
network call, so kernel start stays fast. The credentials themselves are loaded at the first
tool call; a token that turns out to be unusable gives the model a terminal result naming
the fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import ToolsetBuild
from ._auth import SCOPES, find_credentials, not_configured_reason, run_auth_flow

if TYPE_CHECKING:
    from collections.abc import Callable

    from ...config import Settings
    from ...session_state import CoDeps

__all__ = ["APPROVAL", "SCOPES", "build", "run_auth_flow"]

# Tool name -> needs approval. Only writing a draft changes anything.
APPROVAL: dict[str, bool] = {
    "search_drive_files": False,
    "read_drive_file": False,
    "list_emails": False,
    "search_emails": False,
    "create_email_draft": True,
    "list_calendar_events": False,
    "search_calendar_events": False,
}


def build(settings: Settings, environ: Mapping[str, str] = os.environ) -> ToolsetBuild:
    """The Google toolset, or the reason it is not registered."""
    if find_credentials(settings, environ) is None:
        return ToolsetBuild("google", reason=not_configured_reason(settings))
    from pydantic_ai.toolsets import FunctionToolset

    from . import calendar, drive, gmail

    toolset: FunctionToolset[CoDeps] = FunctionToolset(id="google")
    # One declared type: pyright cannot bind add_function's ParamSpec to a union of signatures.
    funcs: list[Callable[..., Any]] = [
        drive.search_drive_files,
        drive.read_drive_file,
        gmail.list_emails,
        gmail.search_emails,
        gmail.create_email_draft,
        calendar.list_calendar_events,
        calendar.search_calendar_events,
    ]
    for func in funcs:
        toolset.add_function(func, requires_approval=APPROVAL[func.__name__])
    return ToolsetBuild("google", toolset, approval=dict(APPROVAL))
