"""Co's ``anthropic`` provider marks the stable prefix for Anthropic's prompt cache, on the wire.

A real kernel talks over HTTP to a local server that answers as Anthropic's Messages API
(``_anthropic``); the requests it records show where the cache points are and that the
prefix they cover stays the same from one turn to the next.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ..support.kernel_harness import CoKernel
from ._anthropic import FakeAnthropic

KEY = "sk-ant-test-key-9f2c41"
ANSWERS = [
    "Paris is the capital of France.",
    "Rome is the capital of Italy.",
    "Madrid is the capital of Spain.",
]
EPHEMERAL = {"type": "ephemeral", "ttl": "5m"}


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic(ANSWERS)
    yield server
    server.close()


def _without_cache_points(value: Any) -> Any:
    """``value`` with every ``cache_control`` removed: the message cache point moves on."""
    if isinstance(value, dict):
        return {k: _without_cache_points(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_points(v) for v in value]
    return value


def test_cache_points_cover_a_prefix_that_stays_put(
    start_kernel: Callable[..., CoKernel], anthropic: FakeAnthropic
) -> None:
    kernel = start_kernel(
        {
            "CO_MODEL": "anthropic:claude-sonnet-4-5",
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": anthropic.base_url,
        }
    )
    # The answers stream in (server-sent events), as from Anthropic.
    prompts = ["What is the capital of France?", "And of Italy?", "And of Spain?"]
    cells = [kernel.execute(prompt, timeout=120) for prompt in prompts]
    for cell, answer in zip(cells, ANSWERS, strict=True):
        assert cell.status == "ok", cell.text()
        assert answer in cell.markdown()
        assert KEY not in json.dumps(cell.messages, default=str)

    requests = anthropic.messages
    assert len(requests) == 3, [r.path for r in anthropic.requests]
    for request in anthropic.requests:  # this SDK sends the key as a bearer token
        sent = request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
        assert KEY in sent
    for body, prompt in zip(requests, prompts, strict=True):
        assert body["stream"] is True
        # The system prompt ends with a cache point, so does the tool list, and the
        # conversation so far is cached by Anthropic's automatic cache point (top level).
        assert body["system"][-1]["cache_control"] == EPHEMERAL
        assert body["tools"], "Co offers its tools"
        assert body["tools"][-1]["cache_control"] == EPHEMERAL
        assert body["cache_control"] == EPHEMERAL
        assert json.dumps(body).count('"cache_control"') <= 4, "Anthropic takes at most 4"
        assert body["messages"][-1]["role"] == "user"
        assert prompt in json.dumps(body["messages"][-1])

    systems = {json.dumps(body["system"]) for body in requests}
    assert len(systems) == 1, "the system prompt is the same bytes on every request"
    tools = {json.dumps(body["tools"]) for body in requests}
    assert len(tools) == 1, "the tool list is the same bytes on every request"
    for before, after in itertools.pairwise(requests):
        earlier = _without_cache_points(before["messages"])
        assert _without_cache_points(after["messages"][: len(earlier)]) == earlier
        assert len(after["messages"]) > len(earlier)
