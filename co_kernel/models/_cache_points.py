"""Anthropic cache points on the prefix Co keeps stable: tools, system prompt, conversation.

pydantic-ai puts the system prompt's cache point (``anthropic_cache_instructions``) only
after instructions it knows never change, the literal strings an agent is built with. Co's
system prompt comes from a function (it reads the project's and the user's instruction
files, skills and subagents), so pydantic-ai counted it as changing and sent it with no
cache point: the setting did nothing. Yet Co keeps that prompt byte-identical from request
to request unless one of those files changes, and puts what does change per turn (the
memories relevant to a prompt) after it, in the conversation. ``StableInstructions`` tells
the model so. Should a file change, the next request writes the cache once more, as any
change to a cached prefix does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ._prepared import ModelMixin

if TYPE_CHECKING:
    from pydantic_ai.models import ModelRequestParameters

__all__ = ["ANTHROPIC_CACHING", "StableInstructions"]

ANTHROPIC_CACHING: dict[str, Any] = {
    "anthropic_cache_instructions": True,
    "anthropic_cache_tool_definitions": True,
    # Anthropic's automatic cache point: the end of the conversation so far, which
    # history governance keeps as the prefix of the next request.
    "anthropic_cache": True,
}
"""Request settings that mark the stable prefix for Anthropic's prompt cache."""


class StableInstructions(ModelMixin):
    """Mixin for a ``Model``: every instruction part counts as part of the stable prefix."""

    def customize_request_parameters(
        self, model_request_parameters: ModelRequestParameters
    ) -> ModelRequestParameters:
        params = super().customize_request_parameters(model_request_parameters)
        parts = params.instruction_parts
        if not parts or not any(part.dynamic for part in parts):
            return params
        # Order unchanged: the cache point goes after the last part, so it covers them all.
        stable = [replace(part, dynamic=False) if part.dynamic else part for part in parts]
        return replace(params, instruction_parts=stable)
