"""What the budget check costs per model request: turns with budgets beside turns without.

Two parts, both in one run:

1. Two kernel sessions (``ChatSession``: every toolset, the session store, the audit log,
   the conversation growing) against the scripted model server over real HTTP, the model
   ``openai:gpt-4o-mini`` (priced by genai-prices), one with all eight budgets set (turn,
   conversation, day and month, in money and in tokens; high enough never to stop a turn),
   one with none. A turn is two model requests (a tool call, then the answer). The arms
   alternate turn by turn, so drift on a busy machine falls on both; the added time per
   request is the median of the paired differences divided by two. Both arms record every
   request in the spend store (the spending ``co-kernel usage`` reads): the difference is
   the check, the reservation and the 80 % look.
2. The capability alone: ``RateLimits.wrap_model_request`` around a request whose model
   answers at once, on the 40 messages a governed conversation sends, with all budgets,
   with none (recording only), and the bare handler without the capability: the time Co
   spends per request before and after the model, without the noise of a whole turn.

Target: under 1 ms per model request (part 1's added time; part 2 shows where it goes).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_budget.py [--turns 100] [--requests 2000]

Reports and always exits 0, like the other benchmarks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import load_average, median, ms, print_table, verdict

from co_kernel.config import LoadedSettings, Settings
from co_kernel.replay import ScriptedModelServer
from co_kernel.turn import RecordingFrontend
from co_kernel.turn._session import ChatSession

STEPS = [
    {
        "text": "Let me look.",
        "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
        "usage": {"prompt_tokens": 4200, "completion_tokens": 40},
    },
    {
        "text": "Three lines of notes. " * 6,
        "usage": {"prompt_tokens": 4300, "completion_tokens": 90},
    },
]
WARM_UP = 5
BUDGETS = {
    "budget_turn": 100.0,
    "budget_conversation": 1000.0,
    "budget_day": 1000.0,
    "budget_month": 10000.0,
    "budget_turn_tokens": 10**9,
    "budget_conversation_tokens": 10**10,
    "budget_day_tokens": 10**10,
    "budget_month_tokens": 10**11,
}
TARGET = 0.001


class _Arm:
    def __init__(self, settings: Settings, workspace: Path) -> None:
        workspace.mkdir()
        (workspace / "notes.txt").write_text("the quick brown fox\njumps over\nthe lazy dog\n")
        origins = {name: "user (bench)" for name in BUDGETS if getattr(settings, name) is not None}
        loaded = LoadedSettings(settings, origins=origins)
        self.session = ChatSession(loaded, workspace=workspace, kernel_id="bench")
        self.times: list[float] = []

    async def turn(self, index: int) -> None:
        started = time.perf_counter()
        result = await self.session.run_prompt(
            f"What is in my notes? ({index})", cell_id=None, frontend=RecordingFrontend()
        )
        self.times.append(time.perf_counter() - started)
        if result is None or result.error:
            raise SystemExit(f"turn {index} failed: {result and result.error}")


async def _sessions(turns: int, tmp: Path) -> tuple[list[float], list[float], list[Any]]:
    with ScriptedModelServer([]) as server:
        server.reset([step for _ in range(2 * (turns + WARM_UP)) for step in STEPS])
        base: dict[str, Any] = {
            "model": "openai:gpt-4o-mini",
            "base_url": server.base_url,
            "openai_api_key": "sk-bench",
            "sandbox": "subprocess",
            "tracing": False,
        }
        with_budgets = _Arm(Settings(**base, **BUDGETS), tmp / "budgets")
        without = _Arm(Settings(**base), tmp / "none")
        for arm in (with_budgets, without):
            for i in range(WARM_UP):
                await arm.turn(-i - 1)
            arm.times.clear()
        for index in range(turns):
            for arm in (without, with_budgets) if index % 2 == 0 else (with_budgets, without):
                await arm.turn(index)
        history = list(with_budgets.session.sent_view())
        with_budgets.session.close()
        without.session.close()
        if server.errors:
            raise SystemExit(f"script mismatch: {server.errors[:3]}")
    return with_budgets.times, without.times, history


async def _hooks(requests: int, history: list[Any], tmp: Path) -> dict[str, float]:
    """Seconds per request spent in the capability's hooks, by arm."""
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RequestUsage, RunUsage

    from co_kernel.session_state import CoDeps
    from co_kernel.telemetry import RateLimits
    from co_kernel.telemetry._budget import Budgets

    model = TestModel()
    response = ModelResponse(
        parts=[TextPart("ok")],
        usage=RequestUsage(input_tokens=4300, output_tokens=90),
        model_name="gpt-4o-mini",
    )
    results: dict[str, float] = {}
    for arm, values in (("budgets", BUDGETS), ("recording only", {}), ("bare", None)):
        settings = Settings(model="openai:gpt-4o-mini", **(values or {}))
        deps = CoDeps(settings=settings, session_id=arm, kernel_id="bench", workspace=tmp)
        deps.model_label = "openai:gpt-4o-mini"
        ctx = RunContext(deps=deps, model=model, usage=RunUsage())
        cap = None
        if values is not None:
            origins = dict.fromkeys(values, "user (bench)")
            cap = RateLimits(budgets=Budgets(tmp / f"spend-{len(results)}.db", origins))

        async def handler(request_context: Any, cap: Any = cap, ctx: Any = ctx) -> Any:
            if cap is not None:
                await cap.before_model_request(ctx, request_context)
            return response

        times: list[float] = []
        for _ in range(requests):
            request_context = ModelRequestContext(
                model=model,
                messages=history,
                model_settings=None,
                model_request_parameters=ModelRequestParameters(),
            )
            started = time.perf_counter()
            if cap is None:
                await handler(request_context)
            else:
                await cap.wrap_model_request(ctx, request_context=request_context, handler=handler)
            times.append(time.perf_counter() - started)
        results[arm] = median(times[requests // 10 :])
        if cap is not None and cap.budgets is not None:
            cap.budgets.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100, help="turns per arm (2 requests each)")
    parser.add_argument("--requests", type=int, default=2000, help="requests per arm in part 2")
    args = parser.parse_args()
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="co-bench-budget-") as name:
        tmp = Path(name)
        os.environ["CO_HOME"] = str(tmp / "home")
        on, off, history = asyncio.run(_sessions(args.turns, tmp))
        hooks = asyncio.run(_hooks(args.requests, history, tmp))
    paired = [a - b for a, b in zip(on, off, strict=True)]
    added = median(paired) / 2
    print_table(
        f"1. A turn (2 model requests) with all eight budgets beside none, {args.turns} "
        "turns each, alternating",
        ["", "with budgets", "without", "added per request", "ratio", "target < 1 ms"],
        [
            (
                "median turn",
                ms(median(on)),
                ms(median(off)),
                f"{added * 1000:.3f} ms",
                f"{median(on) / median(off):.3f}",
                verdict(added < TARGET),
            )
        ],
    )
    bare = hooks["bare"]
    print_table(
        f"2. The capability alone, {len(history)} messages, median of {args.requests} requests",
        ["arm", "per request", "beyond the bare request"],
        [
            (arm, f"{value * 1000:.3f} ms", f"{(value - bare) * 1000:.3f} ms")
            for arm, value in hooks.items()
        ],
    )
    check = hooks["budgets"] - hooks["recording only"]
    print(
        f"\nThe check and reservation: {check * 1000:.3f} ms per request; with the spend "
        f"record: {(hooks['budgets'] - bare) * 1000:.3f} ms "
        f"({verdict(hooks['budgets'] - bare < TARGET)}, target < 1 ms)."
    )
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
