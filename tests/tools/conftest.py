"""Fixtures of the tools' tests: local fake APIs, real folders, a real audit log, and the
RunContext a tool gets in a run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from google.oauth2.credentials import Credentials
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from co_kernel.config import Settings
from co_kernel.session_state import CoDeps
from co_kernel.telemetry import AuditLog
from co_kernel.tools.google._auth import CredentialSource

from ..support.google import set_session_credentials
from ._google_server import FakeGoogle
from ._slack_server import FakeSlack

ToolContext = RunContext[CoDeps]


@pytest.fixture
def google() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


def write_token(
    path: Path,
    *,
    token: str = "test-token",
    client_id: str = "co-test",
    expires_in: timedelta = timedelta(days=1),
    refresh_token: str = "refresh-not-used",
) -> Path:
    """An authorized-user file as `co-kernel google auth` writes it. By default its access
    token is valid for a day so that nothing refreshes it (a refresh would ask Google itself);
    a test that refreshes gives a negative ``expires_in`` and sets `google_token_uri`."""
    expiry = datetime.now(UTC).replace(tzinfo=None) + expires_in
    info: dict[str, Any] = {
        "token": token,
        "expiry": expiry.isoformat() + "Z",
        "refresh_token": refresh_token,
        "token_uri": "https://oauth2.googleapis.com/token",
        "client_id": f"{client_id}.apps.googleusercontent.com",
        "client_secret": "co-test-secret",
        "scopes": ["https://www.googleapis.com/auth/drive.readonly"],
        # ADC files say what they hold; `co-kernel google auth`'s token does not need to.
        "type": "authorized_user",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info))
    return path


def tool_context(settings: Settings, workspace: Path) -> ToolContext:
    """The RunContext a tool gets in a run; the model is never asked (tools only read deps)."""
    deps = CoDeps(settings=settings, session_id="test", kernel_id="test", workspace=workspace)
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage())


@pytest.fixture
def google_ctx(google: FakeGoogle, tmp_path: Path) -> Callable[..., ToolContext]:
    """A tool context whose Google calls reach the fake, signed in with its test token.

    The credentials are given to the session as a host would (`set_session_credentials`):
    they carry no refresh token, so nothing ever asks Google's real token endpoint.
    """

    def make(token: str = "test-token") -> ToolContext:
        ctx = tool_context(Settings(google_api_endpoint=google.api_endpoint), tmp_path)
        source = CredentialSource("token", tmp_path / "google_token.json")
        set_session_credentials(ctx.deps, Credentials(token=token), source)
        return ctx

    return make


@pytest.fixture
def slack_ctx(slack: FakeSlack, tmp_path: Path) -> Callable[..., ToolContext]:
    def make(token: str | None = None) -> ToolContext:
        settings = Settings(
            slack_bot_token=token or slack.token, slack_api_base_url=slack.api_base_url
        )
        return tool_context(settings, tmp_path)

    return make


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[AuditLog]:
    log = AuditLog(tmp_path / "telemetry.db")
    yield log
    log.close()


@pytest.fixture
def make_deps(workspace: Path, audit: AuditLog) -> Callable[..., CoDeps]:
    """CoDeps for the workspace with the given settings, auditing into a real database."""

    def make(**settings: Any) -> CoDeps:
        return CoDeps(
            settings=Settings(**settings),
            session_id="tools-test",
            kernel_id="kernel-test",
            workspace=workspace,
            audit=audit,
        )

    return make


def ctx(deps: CoDeps, *, approved: bool = False) -> ToolContext:
    """The context pydantic-ai hands a tool (the model is never called by the tools)."""
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage(), tool_call_approved=approved)
