"""In-process turns for tests: a real ChatSession against the scripted model server.

The session has the real toolsets (the shell tool runs in a subprocess sandbox in the
test's workspace); a RecordingFrontend answers approvals from a list.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from co_kernel.config import LoadedSettings, Settings
from co_kernel.replay import ScriptedModelServer
from co_kernel.turn import ApprovalRequest, ChatSession, RecordingFrontend, TurnResult

from .scripted import shell, tool_messages

__all__ = [
    "approvals",
    "make_session",
    "results",
    "run",
    "shell",
    "tool_messages",
    "turn",
    "within",
]


def make_session(server: ScriptedModelServer, workspace: Path, **settings: Any) -> ChatSession:
    values: dict[str, Any] = {
        "model": "compat:scripted",
        "base_url": server.base_url,
        "sandbox": "subprocess",
    }
    values.update(settings)
    return ChatSession(LoadedSettings(Settings(**values)), workspace=workspace, kernel_id="test")


async def within(session: ChatSession, scenario: Any) -> Any:
    """Run ``scenario()`` with the agent entered, so its HTTP client is closed at the end."""
    agent, _ = session.ensure_agent()
    try:
        async with agent:
            return await scenario()
    finally:
        if session.deps.sandbox is not None:
            await session.deps.sandbox.close()
        session.close()


async def turn(session: ChatSession, prompt: str, frontend: Any) -> TurnResult:
    result = await session.run_prompt(prompt, cell_id=None, frontend=frontend)
    assert result is not None
    return result


def run(session: ChatSession, *turns: tuple[str, Any]) -> list[TurnResult]:
    """Run turns one after the other on one event loop; one result per turn."""

    async def scenario() -> list[TurnResult]:
        return [await turn(session, prompt, frontend) for prompt, frontend in turns]

    return asyncio.run(within(session, scenario))


def approvals(frontend: RecordingFrontend) -> list[ApprovalRequest]:
    return [payload for name, payload in frontend.events if name == "approval"]


def results(frontend: RecordingFrontend) -> dict[str, Any]:
    return {p.call_id: p for name, p in frontend.events if name == "tool_result"}
