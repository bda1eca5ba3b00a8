"""The GovernHistory capability on a real agent against the scripted server: the model is
sent the governed view before every request; the run keeps the whole conversation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from co_kernel.config import Settings
from co_kernel.replay import ScriptedModelServer
from co_kernel.session_state import CoDeps
from co_kernel.turn._govern import GovernHistory

from ..support.histories import synthetic_history


def test_every_request_is_governed_and_the_history_stays_whole(tmp_path: Path) -> None:
    history = synthetic_history(12, tool_every=2, tool_calls=1, output_chars=3000)
    settings = Settings(max_history_messages=10, tool_output_trim_chars=300)
    deps = CoDeps(settings=settings, session_id="s", kernel_id="k", workspace=tmp_path)
    steps = [
        {"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]},
        {"expect": {"tool_result_contains": "y" * 5000}, "text": "done"},
    ]

    async def run(base_url: str) -> Any:
        async with httpx2.AsyncClient() as client:
            provider = OpenAIProvider(base_url=base_url, api_key="k", http_client=client)
            agent: Agent[CoDeps, str] = Agent(
                OpenAIChatModel("m", provider=provider),
                deps_type=CoDeps,
                capabilities=[GovernHistory()],
            )

            @agent.tool_plain
            def lookup(q: str) -> str:
                """Look something up."""
                return "y" * 5000

            return await agent.run("newest question", message_history=history, deps=deps)

    with ScriptedModelServer(steps) as server:
        result = asyncio.run(run(server.base_url))
        assert server.errors == []
        requests = server.requests
    assert len(requests) == 2
    for body in requests:
        sent = json.dumps(body["messages"])
        assert "earlier messages of this conversation are not shown" in sent
        assert "prompt 0: what next?" not in sent
        assert "prompt 11: what next?" in sent
    # The current turn's own tool output goes out whole; older ones are trimmed.
    assert "y" * 5000 in json.dumps(requests[1]["messages"])
    assert "[Co trimmed 2,700 more characters" in json.dumps(requests[1]["messages"])
    everything = result.all_messages()
    assert everything[: len(history)] == history
    assert len(everything) == len(history) + 4
