"""Models that rewrite a request's tool schemas once, however often it is prepared.

pydantic-ai prepares a model request (settings merged, every tool's JSON schema rewritten
for the provider by ``customize_request_parameters``) when the model sends it. With
tracing on, its instrumentation prepares the same request once more, just before, to put
the tool definitions and settings on the span. With Co's tools (a dozen toolsets' worth)
the schema rewriting is most of that work, and doing it twice was the largest single
cost tracing added to a turn.

Both preparations are handed the same ``ModelRequestParameters`` object, so the model
keeps the last rewrite and returns it again for that very object. Every later request of
a conversation carries the same tools too, in a new object: equal parameters (compared
field by field, the schemas by value: microseconds, where the rewriting takes about a
millisecond of every turn before its request leaves) get the same rewrite. Any change (a
tool added or gone, another schema, other instructions) is rewritten afresh. Everything
else in ``prepare_request`` (settings merged, warnings about settings the model ignores)
still runs on every call.

Afresh means only the tools not rewritten before: a tool's rewrite depends on that tool
and the model alone (pydantic-ai rewrites each by the model's JSON schema transformer), so
the model keeps the last rewrite of each tool by name and reuses it while the tool's
definition is equal. That also lets the kernel's warm-up rewrite the session's tools
(``SessionModel.prewrite_tools``) before the first turn, which otherwise paid for all.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from pydantic_ai.models import Model, ModelRequestParameters
    from pydantic_ai.tools import ToolDefinition

__all__ = ["CustomizesOnce", "ModelMixin", "customizing_once"]

M = TypeVar("M", bound="Model")

if TYPE_CHECKING:
    ModelMixin = Model[Any]
else:
    ModelMixin = object
"""What a mixin for a ``Model`` derives from: ``Model`` to the type checker, so that its
``super()`` calls are checked against the model's methods; ``object`` when it runs, so
that the mixin puts no ``Model`` of its own into the class it is mixed into."""


class CustomizesOnce(ModelMixin):
    """Mixin for a ``Model``: the last ``customize_request_parameters`` result, reused for
    the same or equal parameters."""

    _last_customized: tuple[ModelRequestParameters, ModelRequestParameters] | None = None
    _tool_rewrites: dict[str, tuple[ToolDefinition, ToolDefinition]] | None = None
    """Tool name -> (its definition, that definition rewritten): the last of each."""

    def customize_request_parameters(
        self, model_request_parameters: ModelRequestParameters
    ) -> ModelRequestParameters:
        last = self._last_customized
        if last is not None and (
            last[0] is model_request_parameters or last[0] == model_request_parameters
        ):
            return last[1]
        customized = self._customize_new_tools(model_request_parameters)
        # Held, not copied: pydantic-ai replaces parameters rather than changing them, and
        # holding them keeps their id from being reused by another object.
        self._last_customized = (model_request_parameters, customized)
        return customized

    def _customize_new_tools(self, params: ModelRequestParameters) -> ModelRequestParameters:
        """``params`` customized, the function tools rewritten before taken as they were."""
        rewrites = self._tool_rewrites
        if rewrites is None:
            rewrites = self._tool_rewrites = {}
        tools = params.function_tools
        new = [t for t in tools if (done := rewrites.get(t.name)) is None or done[0] != t]
        customized = super().customize_request_parameters(replace(params, function_tools=new))
        if len(customized.function_tools) != len(new):
            # A model whose customizing adds or drops tools: its rewrites are not per tool.
            return super().customize_request_parameters(params)
        for tool, rewritten in zip(new, customized.function_tools, strict=True):
            rewrites[tool.name] = (tool, rewritten)
        if len(new) == len(tools):
            return customized
        return replace(customized, function_tools=[rewrites[t.name][1] for t in tools])


@cache
def customizing_once(model_class: type[M], *mixins: type) -> type[M]:
    """``model_class`` with ``CustomizesOnce`` mixed in (one subclass per class), and the
    ``mixins`` between them: their ``customize_request_parameters`` run once, too."""
    attributes: dict[str, Any] = {"__module__": __name__, "__doc__": model_class.__doc__}
    made = type(model_class.__name__, (CustomizesOnce, *mixins, model_class), attributes)
    return cast("type[M]", made)
