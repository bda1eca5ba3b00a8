"""Google and Slack tools in a real Co kernel: registration, approvals, pages across cells.

The kernel's Google client reaches the local fake through `google_api_endpoint` with a token
file from `google_token_path`; its Slack client through `slack_api_base_url`. The scripted
model decides the tool calls; the fakes record what actually reached "Google" and "Slack".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from co_kernel.config import Settings
from co_kernel.replay import ScriptedModelServer
from co_kernel.tools import collect_toolsets

from ..support.kernel_harness import CoKernel
from ..support.scripted import tool_messages
from ._google_server import RATE_LIMITED, DriveFile, FakeGoogle
from ._slack_server import Channel, FakeSlack
from .conftest import write_token

StartKernel = Callable[..., CoKernel]
GOOGLE_TOOLS = ["search_drive_files", "create_email_draft", "list_calendar_events"]
SLACK_TOOLS = ["list_slack_channels", "send_slack_message"]


def _google_env(google: FakeGoogle, tmp_path: Path, **extra: str) -> dict[str, str]:
    token = write_token(tmp_path / "google_token.json")
    return {
        "CO_GOOGLE_TOKEN_PATH": str(token),
        "CO_GOOGLE_API_ENDPOINT": google.api_endpoint,
        "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        "GOOGLE_APPLICATION_CREDENTIALS": "",
        **extra,
    }


def _slack_env(slack: FakeSlack, **extra: str) -> dict[str, str]:
    return {"CO_SLACK_BOT_TOKEN": slack.token, "CO_SLACK_API_BASE_URL": slack.api_base_url, **extra}


def test_unconfigured_integrations_are_not_offered(
    start_kernel: StartKernel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    kernel = start_kernel(
        {"CLOUDSDK_CONFIG": str(tmp_path / "gcloud"), "GOOGLE_APPLICATION_CREDENTIALS": ""}
    )
    model_server.extend(
        [{"expect": {"tools_exclude": GOOGLE_TOOLS + SLACK_TOOLS}, "text": "No cloud tools."}]
    )
    result = kernel.execute("What can you reach?", mode="headless")
    assert result.status == "ok" and "No cloud tools." in result.markdown()
    assert model_server.errors == []


def test_integrations_are_collected_in_order_with_reasons(tmp_path: Path) -> None:
    builds = {
        b.name: b for b in collect_toolsets(Settings(google_token_path=tmp_path / "missing.json"))
    }
    assert [n for n in builds if n in ("google", "slack")] == ["google", "slack"]
    slack = builds["slack"]
    assert slack.toolset is None
    assert "slack_bot_token" in slack.reason and "SLACK_BOT_TOKEN" in slack.reason
    configured = next(
        b for b in collect_toolsets(Settings(slack_bot_token="xoxb-1")) if b.name == "slack"
    )
    assert configured.toolset is not None
    assert {name for name, ask in configured.approval.items() if ask} == {"send_slack_message"}


@pytest.mark.parametrize(("mode", "drafts"), [("deny", 0), ("approve", 1)])
def test_email_draft_is_created_only_after_approval(
    start_kernel: StartKernel,
    model_server: ScriptedModelServer,
    google: FakeGoogle,
    tmp_path: Path,
    mode: str,
    drafts: int,
) -> None:
    kernel = start_kernel(_google_env(google, tmp_path, CO_APPROVAL_MODE=mode))
    args = {"to": "alice@example.com", "subject": "Q3 plan", "body": "Draft of the plan."}
    model_server.extend(
        [
            {
                "expect": {"tools_include": GOOGLE_TOOLS, "tools_exclude": SLACK_TOOLS},
                "tool_calls": [{"name": "create_email_draft", "arguments": args}],
            },
            {"text": "Done."},
        ]
    )
    result = kernel.execute("Draft an email to Alice about the Q3 plan", mode="headless")
    assert result.status == "ok", result.reply
    assert model_server.errors == []
    assert len(google.drafts) == drafts
    shown = result.text()
    if mode == "deny":
        assert "**denied**" in shown
        assert any("denied" in m for m in tool_messages(model_server))
    else:
        (message,) = google.draft_messages()
        assert (message["To"], message["Subject"]) == ("alice@example.com", "Q3 plan")
        assert message.get_content().strip() == "Draft of the plan."
        assert google.drafts_requests_bearer() == ["test-token"]
        assert any("#drafts?compose=" in m for m in tool_messages(model_server))


@pytest.mark.parametrize(("mode", "posted"), [("deny", 0), ("approve", 1)])
def test_slack_message_is_sent_only_after_approval(
    start_kernel: StartKernel,
    model_server: ScriptedModelServer,
    slack: FakeSlack,
    mode: str,
    posted: int,
) -> None:
    slack.channels = [Channel("C0GENERAL1", "general")]
    kernel = start_kernel(_slack_env(slack, CO_APPROVAL_MODE=mode))
    model_server.extend(
        [
            {
                "expect": {"tools_include": SLACK_TOOLS, "tools_exclude": GOOGLE_TOOLS},
                "tool_calls": [
                    {
                        "name": "send_slack_message",
                        "arguments": {"channel": "#general", "text": "Deploy done"},
                    }
                ],
            },
            {"text": "Done."},
        ]
    )
    result = kernel.execute("Tell #general the deploy is done", mode="headless")
    assert result.status == "ok", result.reply
    assert model_server.errors == []
    assert len(slack.calls("chat.postMessage")) == posted
    assert [p["text"] for p in slack.posted] == ["Deploy done"] * posted
    if mode == "approve":
        assert any(
            "https://co-test.slack.com/archives/C0GENERAL1/p" in m
            for m in tool_messages(model_server)
        )


def test_more_fetches_the_next_page_and_retries_reach_the_model(
    start_kernel: StartKernel,
    model_server: ScriptedModelServer,
    google: FakeGoogle,
    tmp_path: Path,
) -> None:
    for i in range(13):
        google.files[f"f{i:02d}"] = DriveFile(f"f{i:02d}", f"Budget {i:02d}", "text/plain", b"")
    kernel = start_kernel(_google_env(google, tmp_path))
    search = {"name": "search_drive_files", "arguments": {"query": "budget"}}
    model_server.extend(
        [
            {"tool_calls": [search]},
            {
                "expect": {"tool_result_contains": '"has_more":true'},
                "text": "Ten files; more exist.",
            },
        ]
    )
    first = kernel.execute("Find my budget files", mode="headless")
    assert first.status == "ok" and model_server.errors == [], (model_server.errors, first.text())

    # Google rate-limits the next call once: the model is told to retry, and does.
    google.fail_next("GET", "/drive/v3/files", 429, RATE_LIMITED)
    more = {"name": "search_drive_files", "arguments": {"query": "budget", "page": 2}}
    model_server.extend(
        [
            {"tool_calls": [more]},
            {
                "expect": {"tool_result_contains": "temporary: try the same call again"},
                "tool_calls": [more],
            },
            {"expect": {"tool_result_contains": "Budget 12"}, "text": "Three more."},
        ]
    )
    second = kernel.execute("more", mode="headless")
    assert second.status == "ok" and model_server.errors == []
    calls = google.requests_to("GET", "/drive/v3/files")
    assert [c.bearer for c in calls] == ["test-token"] * 3
    assert calls[0].param("pageToken") is None
    # Both later calls carry the token the first cell's answer handed out.
    assert calls[1].param("pageToken") == calls[2].param("pageToken")
    assert calls[2].param("pageToken")
    card = json.dumps(second.final_displays())
    assert "Budget 12" in card
