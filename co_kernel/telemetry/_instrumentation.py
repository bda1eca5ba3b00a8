"""pydantic-ai's ``Instrumentation`` capability, without a pass over every stream event.

pydantic-ai puts each capability of a run in the chain that every stream event goes
through: a generator layer (``wrap_run_event_stream``) and a listener test
(``listens_to``) per event, per capability, even when the capability does nothing with
events. ``Instrumentation`` does nothing with them (its spans come from the run, model
request and tool hooks), yet that chain made about a sixth of the Python calls tracing
added to a benchmark turn (more with longer answers: the cost is per text delta).
``CoInstrumentation`` is the same capability, same spans and attributes, that steps out
of the event chain.

Should a later pydantic-ai give ``Instrumentation`` an event hook, ``instrumentation``
returns the plain capability instead, so nothing it records is lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, Instrumentation
from pydantic_ai.messages import AgentStreamEvent
from pydantic_ai.models.instrumented import InstrumentationSettings

__all__ = ["CoInstrumentation", "instrumentation"]


class CoInstrumentation(Instrumentation):
    """``Instrumentation`` that hands the event stream through untouched."""

    def wrap_run_event_stream(  # type: ignore[override]
        self, ctx: RunContext[Any], *, stream: AsyncIterable[AgentStreamEvent]
    ) -> AsyncIterable[AgentStreamEvent]:
        # The stream itself, not a generator around it: no layer to pass per event.
        return stream

    def listens_to(self, event: AgentStreamEvent) -> bool:
        return False


def _uses_events(capability: AbstractCapability[Any]) -> bool:
    return capability.has_on_event or capability.has_wrap_run_event_stream


def instrumentation(settings: InstrumentationSettings) -> Instrumentation:
    """The instrumentation capability for these settings (lean unless events matter)."""
    plain = Instrumentation(settings=settings)
    if _uses_events(plain):
        return plain
    return CoInstrumentation(settings=settings)
