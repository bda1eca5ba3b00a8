"""Only a finished answer counts: a response without a finish reason was cut off.

A stream can end cleanly (``[DONE]``, or the connection closed between events) without
the chunk that carries the finish reason, when a proxy or the server lost it. Taking
that answer as complete would show half a sentence as the reply, or run tool calls whose
arguments may be cut short. ``RequireFinish`` rejects it before the agent acts on it; the
turn retries it as it does a dropped stream (``_provider_errors``).

pydantic-ai fills a missing finish reason in with ``stop`` (some OpenAI-compatible servers
never send one; none that Co supports is among them), so the provider's own reason is read
from ``provider_details``, where the OpenAI and Anthropic models keep it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelAPIError

from ..exceptions import RunError

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import RunContext

__all__ = ["RequireFinish", "UnfinishedResponse", "finished"]

_KEEP_RAW_REASON = frozenset({"openai", "anthropic"})
"""Providers whose models put the finish reason they received in ``provider_details``."""


def finished(response: ModelResponse) -> bool:
    """Whether the answer is complete: it has a finish reason, where the model keeps one."""
    sent = response.provider_details or {}
    return response.provider_name not in _KEEP_RAW_REASON or bool(sent.get("finish_reason"))


class UnfinishedResponse(ModelAPIError, RunError):
    """The model's answer ended without a finish reason: cut off, not complete."""


@dataclass
class RequireFinish(AbstractCapability[Any]):
    """Raises ``UnfinishedResponse`` for a model response that has no finish reason."""

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        if not finished(response):
            raise UnfinishedResponse(response.model_name or "", "the answer has no finish reason")
        return response
