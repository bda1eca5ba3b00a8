"""Prompt tokens of a session's next request: counted by the model's tokenizer, or estimated.

The request is what a turn would send: Co's instructions, the governed history with the
memories each prompt is sent with, and the prompt. Where the model's server counts tokens
(the local model's llama.cpp, once started) it counts them; elsewhere the estimate is
calibrated by the prompt tokens the provider reported for the last requests.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ._history_processors import estimate_tokens, govern_history, token_calibration

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_ai.messages import ModelMessage

    from ..models import ModelHandle
    from ..session_state import CoDeps

__all__ = ["TokenCount", "prompt_tokens"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenCount:
    """Prompt tokens of the next request, and how they were counted."""

    tokens: int
    """The count."""
    how: Literal["tokenizer", "calibrated", "estimated"]
    """By the model's own tokenizer (its server), estimated and calibrated by what the
    provider reported for the last requests, or estimated alone (nothing reported yet)."""


def _last_reported(history: list[ModelMessage]) -> tuple[int, int] | None:
    """(index, prompt tokens) of the last response whose provider reported its prompt
    tokens, or None."""
    from pydantic_ai.messages import ModelResponse

    for i in range(len(history) - 1, 0, -1):
        msg = history[i]
        if isinstance(msg, ModelResponse) and msg.usage.input_tokens > 0:
            return i, msg.usage.input_tokens
    return None


def _next_request(
    history: list[ModelMessage], deps: CoDeps, handle: ModelHandle | None, prompt: str | None
) -> tuple[list[ModelMessage], str, Callable[[str], str]]:
    """(governed messages, instructions, per-prompt context) of the next request, with
    ``prompt`` as its prompt (None: the conversation as it stands)."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from ..tools.memory import memory_prompt
    from ._agent import co_instructions

    pending = list(history)
    if prompt is not None:
        pending.append(ModelRequest(parts=[UserPromptPart(prompt)]))
    compact = handle is not None and handle.compact_prompt
    instructions = co_instructions(deps, compact=compact)
    # With the memories each prompt is sent with (the same prompts recur below).
    context = functools.cache(functools.partial(memory_prompt, deps))
    return govern_history(pending, deps.settings, context=context), instructions, context


def _estimate(
    history: list[ModelMessage],
    deps: CoDeps,
    view: list[ModelMessage],
    instructions: str,
    context: Callable[[str], str],
) -> TokenCount:
    estimate = estimate_tokens(view) + len(instructions) // 4
    # Calibrated by what the provider reported for the last requests (its tokenizer).
    calibration = token_calibration(history, deps.settings, context)
    if calibration is None:
        return TokenCount(estimate, "estimated")
    scale, offset = calibration
    return TokenCount(max(0, round(scale * estimate + offset)), "calibrated")


async def prompt_tokens(
    history: list[ModelMessage], deps: CoDeps, handle: ModelHandle | None, prompt: str | None
) -> TokenCount:
    """Tokens of the next request: counted by the model's own tokenizer where its server
    counts them (the local model's llama.cpp, once started), else estimated and
    calibrated by the tokens the provider reported for the last requests. Auto-compaction
    and `%history` use it."""
    view, instructions, context = _next_request(history, deps, handle, prompt)
    counted = await _tokenizer_count(handle, view, instructions)
    if counted is None:
        return _estimate(history, deps, view, instructions, context)
    # What the count cannot see (tool definitions) is what the provider reported for
    # the last request beyond the count of that request.
    extra = 0
    last = _last_reported(history)
    if last is not None:
        at, reported = last
        sent = govern_history(history[:at], deps.settings, context=context)
        before = await _tokenizer_count(handle, sent, instructions)
        extra = 0 if before is None else max(0, reported - before)
    return TokenCount(counted + extra, "tokenizer")


async def _tokenizer_count(
    handle: ModelHandle | None, view: list[ModelMessage], instructions: str
) -> int | None:
    """The prompt tokens of ``view`` with ``instructions`` by the model's own tokenizer,
    or None where no running server counts them."""
    import httpx
    from pydantic_ai.messages import InstructionPart
    from pydantic_ai.models import ModelRequestParameters

    if handle is None or handle.local is None or not handle.local.server.running:
        return None
    parameters = ModelRequestParameters(instruction_parts=[InstructionPart(instructions)])
    try:
        usage = await handle.model.count_tokens(view, None, parameters)
    except (httpx.HTTPError, ValueError, NotImplementedError) as exc:
        log.info("the local server did not count the prompt's tokens: %s", exc)
        return None
    return usage.input_tokens
