"""Token counts calibrated by what the provider reported: `%history`'s estimate of the next
request against the prompt tokens the scripted server reports for it (one token per four
characters of the request's messages and tool definitions, as it bills)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

from co_kernel.testing import ScriptedModelServer

from ..kernel_harness import CoKernel


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


def test_history_estimate_is_within_15_percent_of_the_billed_prompt(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer
) -> None:
    kernel = start_kernel()
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
