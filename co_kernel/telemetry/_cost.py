"""What a model's tokens cost: genai-prices' price, else the person's own, else unknown.

pydantic-ai prices every response with genai-prices; Co prices the same way, by the model
as the person named it (``provider:model``), so that a model genai-prices does not know
(a local model, an Ollama or OpenAI-compatible server, a replay) is "price unknown" and
never a silent $0. Which genai-prices provider a Co provider is priced as: ``gemini`` is
Google's, ``openai`` and ``anthropic`` their own; ``compat`` only when genai-prices knows
its ``base_url`` (OpenRouter, Together, ...), since any server may call a model ``gpt-4o``;
``ollama``, ``local`` and ``replay`` run no paid model. For those the person's own price
(the ``model_prices`` setting, from their own or managed settings: never a project file)
prices the tokens, with genai-prices' arithmetic.

genai-prices loads with the first price asked for; ``format_cost`` alone does not load it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from genai_prices.types import AbstractUsage, ModelPrice

    from ..config import Settings

__all__ = [
    "PRICE_UNKNOWN",
    "UnitPrice",
    "cost_of",
    "format_cost",
    "unit_price",
]

PRICE_UNKNOWN = "price unknown"
"""What Co shows for tokens of a model without a price."""

_GENAI_PROVIDERS: dict[str, str] = {
    "gemini": "google",
    "openai": "openai",
    "anthropic": "anthropic",
}
"""Co's provider -> genai-prices' provider id, for the providers priced by name."""


@dataclass(frozen=True)
class UnitPrice:
    """A model's price per million tokens, in US dollars."""

    input_per_mtok: Decimal
    """Input (prompt) tokens; the base tier where the price has tiers."""
    output_per_mtok: Decimal
    """Output (completion) tokens; the base tier where the price has tiers."""
    cache_read_per_mtok: Decimal | None = None
    """Input tokens read from the provider's cache (None = priced as input)."""
    cache_write_per_mtok: Decimal | None = None
    """Input tokens written to the provider's cache (None = priced as input)."""
    source: Literal["genai-prices", "settings"] = "genai-prices"
    """Where the price came from: genai-prices' data or the person's ``model_prices``."""
    tiered: bool = False
    """Whether a long prompt pays more per token than these base prices (genai-prices'
    tiers); ``cost_of`` applies the tiers."""


def _split(model: str) -> tuple[str, str]:
    provider, _, name = model.strip().partition(":")
    return provider.lower(), name.strip()


def _genai_model_price(model: str, settings: Settings) -> ModelPrice | None:
    """genai-prices' current price of the model, or None when it has none."""
    from genai_prices.data_snapshot import get_snapshot

    provider, name = _split(model)
    provider_id = _GENAI_PROVIDERS.get(provider)
    api_url = settings.base_url if provider == "compat" else None
    if not name or (provider_id is None and not api_url):
        return None
    try:
        _, info = get_snapshot().find_provider_model(name, None, provider_id, api_url)
    except LookupError:
        return None
    return info.get_prices(datetime.now(tz=UTC))


def _user_price(model: str, settings: Settings) -> UnitPrice | None:
    provider, name = _split(model)
    own = settings.model_prices.get(f"{provider}:{name}")
    if own is None:
        return None
    return UnitPrice(
        input_per_mtok=own.input_per_mtok,
        output_per_mtok=own.output_per_mtok,
        cache_read_per_mtok=own.cache_read_per_mtok,
        cache_write_per_mtok=own.cache_write_per_mtok,
        source="settings",
    )


def _base(value: object) -> tuple[Decimal | None, bool]:
    """A genai-prices price as one number (a tiered price's base) and whether it is tiered."""
    from genai_prices.types import TieredPrices

    if isinstance(value, TieredPrices):
        return value.base, True
    if isinstance(value, Decimal):
        return value, False
    return None, False


def unit_price(model: str, settings: Settings) -> UnitPrice | None:
    """The price of ``provider:model``: genai-prices', else the person's, else None."""
    found = _genai_model_price(model, settings)
    if found is not None:
        input_price, input_tiered = _base(getattr(found, "input_mtok", None))
        output_price, output_tiered = _base(getattr(found, "output_mtok", None))
        if input_price is not None and output_price is not None:
            cache_read, read_tiered = _base(getattr(found, "cache_read_mtok", None))
            cache_write, write_tiered = _base(getattr(found, "cache_write_mtok", None))
            return UnitPrice(
                input_per_mtok=input_price,
                output_per_mtok=output_price,
                cache_read_per_mtok=cache_read,
                cache_write_per_mtok=cache_write,
                tiered=input_tiered or output_tiered or read_tiered or write_tiered,
            )
    return _user_price(model, settings)


def _as_model_price(price: UnitPrice) -> ModelPrice:
    from genai_prices.types import ModelPrice

    return ModelPrice(
        input_mtok=price.input_per_mtok,
        output_mtok=price.output_per_mtok,
        cache_read_mtok=price.cache_read_per_mtok,
        cache_write_mtok=price.cache_write_per_mtok,
    )


def cost_of(usage: AbstractUsage, model: str, settings: Settings) -> Decimal | None:
    """What ``usage`` of ``provider:model`` cost in US dollars; None = price unknown.

    Priced with genai-prices' own arithmetic (cache reads and writes, tiers), from its data
    or from the person's ``model_prices``. Usage summed over several requests is priced as
    one request: exact, except for a tiered price whose tier one request alone reached.
    """
    found = _genai_model_price(model, settings)
    if found is None:
        own = _user_price(model, settings)
        if own is None:
            return None
        found = _as_model_price(own)
    try:
        return found.calc_price(usage)["total_price"]
    except ValueError:
        # Usage genai-prices cannot price (cache counts above the input count): unknown
        # rather than a wrong figure.
        return None


_CENT = Decimal("0.01")
_SMALLEST = Decimal("0.0001")


def format_cost(cost: Decimal | None) -> str:
    """A cost as Co shows it: ``$0.0123`` below a dollar, ``$12.35`` from one, and
    "price unknown" for None (never $0 for a model without a price)."""
    if cost is None:
        return PRICE_UNKNOWN
    if cost == 0:
        return "$0.00"
    if cost < _SMALLEST / 2:
        return "<$0.0001"
    if cost < 1:
        return f"${cost.quantize(_SMALLEST, rounding=ROUND_HALF_UP)}"
    return f"${cost.quantize(_CENT, rounding=ROUND_HALF_UP):,}"
