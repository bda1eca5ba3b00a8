"""A long conversation in a real kernel: the requests the scripted server receives keep
their system prompt byte for byte and share their earlier messages, and the memories
relevant to a prompt follow that prompt instead of changing the system prompt."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

from co_kernel.memory import MemoryStore
from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CoKernel

TOPICS = ["plotting", "parquet files", "the weather", "regex", "plotting again", "sorting"]


def test_system_prompt_and_earlier_messages_stay_put_across_turns(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    store = MemoryStore(co_home / "data" / "memory.db")
    store.add("The user's favourite plotting library is plotnine")
    store.add("The user reads parquet files with polars")
    store.close()
    kernel = start_kernel({"CO_MAX_HISTORY_MESSAGES": "8", "CO_MEMORY_PROMPT_COUNT": "1"})
    turns = 18
    model_server.extend([{"text": f"Answer number {n}."} for n in range(turns)])
    for n in range(turns):
        topic = TOPICS[n % len(TOPICS)]
        assert kernel.execute(f"Question {n} about {topic}?", timeout=120).status == "ok"
    assert model_server.errors == []
    requests = [body["messages"] for body in model_server.requests]
    assert len(requests) == turns

    systems = {json.dumps(messages[0]) for messages in requests}
    assert len(systems) == 1, "the system prompt is the same bytes on every request"
    assert "plotnine" not in next(iter(systems)) and "polars" not in next(iter(systems))

    # The memory relevant to a prompt comes with it (just before it, so the prompt stays
    # the last user message), and stays with it on later requests.
    first = requests[0]
    assert (
        "plotnine" in json.dumps(first[1]) and first[-1]["content"] == "Question 0 about plotting?"
    )
    later = json.dumps(requests[3])
    assert later.index("polars") < later.index("Question 1 about parquet files?")
    assert later.index("Question 0 about plotting?") < later.index("polars")

    # A window of 8 messages moves in steps of 4 (two turns): every other request keeps
    # the whole previous request as its prefix. One dropped turn per turn would keep none.
    breaks = sum(
        json.dumps(after[: len(before)]) != json.dumps(before)
        for before, after in itertools.pairwise(requests)
    )
    assert breaks <= (turns - 4) // 2 + 1
    prompts = [m for m in requests[-1] if m["role"] == "user" and "Question" in str(m)]
    assert 2 <= len(prompts) <= 4, "the window still holds at most 8 messages"


def test_a_runaway_answer_is_shown_whole_and_sent_back_cut(
    kernel: CoKernel, model_server: ScriptedModelServer
) -> None:
    sane = "Paris is the capital of France. "
    loop = "h-" * 1500
    model_server.extend(
        [
            {"text": sane + loop, "finish_reason": "length"},
            {"expect": {"messages_contain": ["[Co cut this answer here"]}, "text": "Sorry."},
            {"text": "Still fine."},
        ]
    )
    shown = kernel.execute("What is the capital of France?", timeout=120).markdown()
    assert loop in shown, "the cell shows the whole answer"
    assert kernel.execute("And of Italy?", timeout=120).status == "ok"
    assert kernel.execute("And of Spain?", timeout=120).status == "ok"
    assert model_server.errors == []
    for body in model_server.requests[1:]:
        sent = json.dumps(body["messages"])
        assert sane in sent and "h-" * 150 not in sent
        assert "it reached the length limit repeating itself" in sent
    history = kernel.execute("%history").markdown()
    assert "| turns | 3" in history
