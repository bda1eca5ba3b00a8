"""The approval card of a write carries the unified diff, through the real turn loop
(scripted model over HTTP, recording frontend in place of a person)."""

from __future__ import annotations

import asyncio

import pytest

from co_kernel.config import Settings
from co_kernel.models import build_model
from co_kernel.session_state import CoDeps
from co_kernel.tools import collect_toolsets
from co_kernel.turn import RecordingFrontend, run_turn
from co_kernel.turn._agent import build_agent


@pytest.fixture
def settings(model_server, co_home, monkeypatch) -> Settings:
    monkeypatch.setenv("CO_HOME", str(co_home))  # knowledge files come from the test home
    return Settings(model="compat:scripted", base_url=model_server.base_url)


def _turn(settings, workspace, prompt, decisions):
    handle = build_model(settings, base_dir=workspace)
    toolsets = [b.toolset for b in collect_toolsets(settings) if b.toolset is not None]
    agent = build_agent(handle.model, settings, toolsets)
    deps = CoDeps(settings=settings, session_id="s", kernel_id="k", workspace=workspace)
    frontend = RecordingFrontend(decisions)

    async def turn():
        try:
            return await run_turn(
                agent,
                prompt,
                deps=deps,
                history=[],
                frontend=frontend,
                provider=handle.provider,
                model_label=handle.label,
            )
        finally:
            # The model's HTTP connections belong to this event loop: close them in it.
            await handle.model.client.close()

    try:
        result = asyncio.run(turn())
    finally:
        handle.close()
    return result, frontend


def test_edit_approval_shows_the_diff_and_runs_once_approved(settings, model_server, workspace):
    (workspace / "config.py").write_text("DEBUG = True\nLEVEL = 'info'\n")
    model_server.extend(
        [
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {
                            "path": "config.py",
                            "old": "DEBUG = True",
                            "new": "DEBUG = False",
                        },
                    }
                ]
            },
            {"expect": {"tool_result_contains": "Updated config.py"}, "text": "Debug is off."},
        ]
    )
    result, frontend = _turn(settings, workspace, "Turn debug off", ["approve"])
    [request] = [p for name, p in frontend.events if name == "approval"]
    assert request.call.name == "edit_file" and request.call.needs_approval
    assert request.call.detail == (
        "--- a/config.py\n+++ b/config.py\n@@ -1,2 +1,2 @@\n"
        "-DEBUG = True\n+DEBUG = False\n LEVEL = 'info'\n"
    )
    assert (workspace / "config.py").read_text() == "DEBUG = False\nLEVEL = 'info'\n"
    assert result.decisions and set(result.decisions.values()) == {"approved"}
    assert model_server.errors == []


def test_an_impossible_edit_never_reaches_the_person(settings, model_server, workspace):
    (workspace / "config.py").write_text("DEBUG = True\n")
    model_server.extend(
        [
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {"path": "config.py", "old": "VERBOSE", "new": "x"},
                    }
                ]
            },
            {
                "expect": {"tool_result_contains": "was not found"},
                "text": "That text is not there.",
            },
        ]
    )
    result, frontend = _turn(settings, workspace, "Change VERBOSE", ["approve"])
    assert not [p for name, p in frontend.events if name == "approval"]
    assert result.output.endswith("That text is not there.")
    assert (workspace / "config.py").read_text() == "DEBUG = True\n"
    assert model_server.errors == []
