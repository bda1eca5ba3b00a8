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
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from pydantic_ai.models import Model, ModelRequestParameters

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

    def customize_request_parameters(
        self, model_request_parameters: ModelRequestParameters
    ) -> ModelRequestParameters:
        last = self._last_customized
        if last is not None and (
            last[0] is model_request_parameters or last[0] == model_request_parameters
        ):
            return last[1]
        customized = super().customize_request_parameters(model_request_parameters)
        # Held, not copied: pydantic-ai replaces parameters rather than changing them, and
        # holding them keeps their id from being reused by another object.
        self._last_customized = (model_request_parameters, customized)
        return customized


@cache
def customizing_once(model_class: type[M], *mixins: type) -> type[M]:
    """``model_class`` with ``CustomizesOnce`` mixed in (one subclass per class), and the
    ``mixins`` between them: their ``customize_request_parameters`` run once, too."""
    attributes: dict[str, Any] = {"__module__": __name__, "__doc__": model_class.__doc__}
    made = type(model_class.__name__, (CustomizesOnce, *mixins, model_class), attributes)
    return cast("type[M]", made)
