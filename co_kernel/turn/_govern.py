"""The history processors as a pydantic-ai capability, run before every model request.

pydantic-ai 2.x has no ``history_processors=`` argument; its ``ProcessHistory`` capability
also rewrites the run's persistent messages. Co wants the opposite: the model is sent the
governed view, while the session keeps the whole conversation for the session store,
``%history``, regenerate-on-rerun and ``%compact`` (which summarises what the window
dropped). ``ModelRequestContext.messages`` is request-only, so assigning it does exactly
that, and it runs before each request of a turn, including those after tool calls.

The capability keeps the messages governance rebuilt (``GovernedViews``), so each request
of a conversation is sent the same trimmed and marked messages as the one before, not
copies: with tracing on, a copy is a new message to describe on every request's span.

``turn_context`` (the memories relevant to a prompt) is put with each prompt, built once
when the prompt is first sent, so that the system prompt stays the same on every request
and so does everything a later request repeats.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic_ai.capabilities import AbstractCapability

from ._history_processors import GovernedViews, govern_history

if TYPE_CHECKING:
    from pydantic_ai import RunContext
    from pydantic_ai.models import ModelRequestContext

    from ..session_state import CoDeps

__all__ = ["GovernHistory"]


@dataclass
class GovernHistory(AbstractCapability["CoDeps"]):
    """Send the model the windowed, trimmed history; leave the run's history whole."""

    turn_context: Callable[[CoDeps, str], str] | None = None
    """A prompt's per-turn context (``tools.memory.memory_prompt``), or none."""
    views: GovernedViews = field(default_factory=GovernedViews, repr=False)

    async def before_model_request(
        self, ctx: RunContext[CoDeps], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        find = self.turn_context

        def context(prompt: str) -> str:
            assert find is not None  # passed on only when there is one
            return find(ctx.deps, prompt)

        request_context.messages = govern_history(
            request_context.messages, ctx.deps.settings, self.views, context if find else None
        )
        return request_context
