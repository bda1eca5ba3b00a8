"""genai-prices' data, remembering the models it has no price for.

pydantic-ai prices every model response with genai-prices (the run's usage carries the
cost), and with tracing on prices it again for the request's span when the first found
nothing. genai-prices remembers the models it finds, but not the ones it does not: for a
model it has no price for (a local model, an Ollama or OpenAI-compatible server, any new
model) each lookup matches the name against every model of the provider again, about
0.1 ms, twice per response with tracing. ``remember_unpriced_models`` installs the same
data with a memory of those misses (genai-prices' documented ``set_custom_snapshot``).
The data never changes within a snapshot, so a miss stays a miss; a newer snapshot set
later (genai-prices' price updates, or the person's own) replaces this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from genai_prices import types
from genai_prices.data_snapshot import DataSnapshot, get_snapshot, set_custom_snapshot

__all__ = ["MissRememberingSnapshot", "remember_unpriced_models"]

MAX_MISSES = 1024
"""Lookups remembered as misses (a session uses a handful of model names)."""

_Lookup = tuple[str, str | None, str | None, str | None]
"""What a lookup asked: the model's name (lower case), provider, provider id, API URL."""


@dataclass
class MissRememberingSnapshot(DataSnapshot):
    """A ``DataSnapshot`` that answers a lookup it could not match before at once."""

    _misses: set[_Lookup] = field(default_factory=set[_Lookup], init=False, repr=False)

    def find_provider_model(
        self,
        model_ref: str,
        provider: types.Provider | None,
        provider_id: str | None,
        provider_api_url: str | None,
    ) -> tuple[types.Provider, types.ModelInfo]:
        key = (model_ref.lower(), provider.id if provider else None, provider_id, provider_api_url)
        if key in self._misses:
            raise LookupError(f"Unable to find model with {model_ref=!r} (remembered)")
        try:
            return super().find_provider_model(model_ref, provider, provider_id, provider_api_url)
        except LookupError:
            if len(self._misses) < MAX_MISSES:
                self._misses.add(key)
            raise


def remember_unpriced_models() -> DataSnapshot:
    """Install the current price data with a memory of misses (once; idempotent)."""
    snapshot: Any = get_snapshot()
    if isinstance(snapshot, MissRememberingSnapshot):
        return snapshot
    remembering = MissRememberingSnapshot(
        providers=snapshot.providers,
        from_auto_update=snapshot.from_auto_update,
        timestamp=snapshot.timestamp,
    )
    set_custom_snapshot(remembering)
    return remembering
