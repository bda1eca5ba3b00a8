"""Interrupting a turn while it waits for an approval.

No frontend in the kernel waits for a person yet (headless and the default notebook
approver decide by policy at once), so this drives ``run_turn`` itself: a real agent, the
real fault tools, the scripted server over HTTP, and a frontend whose approval prompt
waits like a person who never answers. The cell task is cancelled exactly as the
kernel's SIGINT handler cancels it.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from co_kernel.config import Settings
from co_kernel.models import build_model
from co_kernel.replay import ScriptedModelServer
from co_kernel.session_state import CoDeps
from co_kernel.turn import (
    INTERRUPTED_TOOL_RETURN,
    ApprovalDecision,
    ApprovalRequest,
    RecordingFrontend,
    run_turn,
)
from co_kernel.turn._agent import build_agent

from ._fault_tools import NOTES_NAME, build
from ._faults import dangling_tool_calls, tool_results


class WaitingFrontend(RecordingFrontend):
    """Records like RecordingFrontend; the approval prompt waits until cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = asyncio.Event()

    async def prompt_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.events.append(("approval", request))
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")  # pragma: no cover


def test_interrupt_while_waiting_for_approval(tmp_path: Path) -> None:
    asyncio.run(_interrupt_while_waiting(tmp_path))


async def _interrupt_while_waiting(workspace: Path) -> None:
    with ScriptedModelServer(
        [
            {
                "text": "I will write it down.",
                "tool_calls": [{"name": "write_note", "arguments": {"text": "x"}}],
            }
        ]
    ) as server:
        settings = Settings(model="compat:scripted", base_url=server.base_url)
        handle = build_model(settings, base_dir=workspace)
        tools = build(settings).toolset
        assert tools is not None
        agent = build_agent(handle.model, settings, [tools])
        deps = CoDeps(
            settings=settings, session_id=uuid.uuid4().hex, kernel_id="k", workspace=workspace
        )

        frontend = WaitingFrontend()
        turn = asyncio.ensure_future(
            run_turn(
                agent,
                "Note x",
                deps=deps,
                history=[],
                frontend=frontend,
                provider=handle.provider,
                model_label=handle.label,
            )
        )
        await asyncio.wait_for(frontend.asked.wait(), 30)
        turn.cancel()
        result = await asyncio.wait_for(turn, 10)

        assert result.interrupted and result.error is None
        assert not (workspace / NOTES_NAME).exists(), "the unapproved tool did not run"
        assert "I will write it down." in result.output
        (summary,) = [p for name, p in frontend.events if name == "turn_end"]
        assert summary.interrupted
        closed = [p for name, p in frontend.events if name == "tool_result"]
        assert [(r.name, r.status) for r in closed] == [("write_note", "interrupted")]

        # The next turn continues: the model gets the call answered as interrupted.
        server.reset([{"expect": {"last_user_contains": "Next"}, "text": "Carrying on."}])
        follow = await run_turn(
            agent,
            "Next",
            deps=deps,
            history=result.messages,
            frontend=RecordingFrontend(),
            provider=handle.provider,
            model_label=handle.label,
        )
        assert server.errors == []
        assert follow.error is None and follow.output == "Carrying on."
        (body,) = server.requests
        assert dangling_tool_calls(body) == []
        # What the call was doing when the interrupt came.
        assert (
            f"{INTERRUPTED_TOOL_RETURN} It was interrupted while waiting for approval of write_note."
            in (tool_results(body).values())
        )
        await handle.model.client.close()  # type: ignore[attr-defined]
        handle.close()
