"""Price lookups: the same prices as genai-prices' own data, and a model it has no price
for is looked up once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from genai_prices.data_snapshot import DataSnapshot, get_snapshot, set_custom_snapshot
from pydantic_ai._genai_prices import best_effort_price
from pydantic_ai.usage import RequestUsage

from co_kernel.models._prices import MissRememberingSnapshot, remember_unpriced_models


@pytest.fixture
def price_data() -> Iterator[DataSnapshot]:
    """The process's price data before the test; put back after it."""
    before = get_snapshot()
    yield before
    set_custom_snapshot(before if isinstance(before, MissRememberingSnapshot) else None)


LOOKUPS = [
    ("gpt-4o", "https://api.openai.com/v1", "openai"),
    ("gpt-4o-mini", "http://127.0.0.1:9/v1", "openai"),
    ("gemini-2.5-flash", None, "google-gla"),
    ("claude-sonnet-4-5", None, "anthropic"),
    ("qwen3:4b", "http://localhost:11434/v1", "ollama"),
    ("scripted", "http://127.0.0.1:4321/v1", "openai"),
    ("my-finetune", "http://localhost:8000/v1", "openai"),
]


def _prices(snapshot: DataSnapshot) -> list[object]:
    set_custom_snapshot(snapshot)
    usage = RequestUsage(input_tokens=1200, output_tokens=300, cache_read_tokens=200)
    when = datetime(2026, 11, 1, tzinfo=UTC)
    out: list[object] = []
    for model, url, provider in LOOKUPS * 2:  # twice: the second round may be remembered
        price = best_effort_price(
            usage,
            model_name=model,
            provider_api_url=url,
            provider_name=provider,
            genai_request_timestamp=when,
        )
        out.append(None if price is None else (price.model.id, price.total_price))
    return out


def test_prices_are_genai_prices_own(price_data: DataSnapshot) -> None:
    plain = DataSnapshot(providers=price_data.providers, from_auto_update=False)
    expected = _prices(plain)
    installed = remember_unpriced_models()
    assert isinstance(get_snapshot(), MissRememberingSnapshot)
    assert remember_unpriced_models() is installed, "installed once"
    assert _prices(installed) == expected
    known = [p for p in expected if p is not None]
    assert len(known) >= 6, "the known models were priced (twice each)"
    assert expected.count(None) == 6, "and the unknown ones were not"


def test_a_model_without_a_price_is_looked_up_once(price_data: DataSnapshot) -> None:
    snapshot = remember_unpriced_models()
    with pytest.raises(LookupError) as first:
        snapshot.find_provider_model("my-finetune-7b", None, "openai", None)
    assert "remembered" not in str(first.value)
    with pytest.raises(LookupError, match="remembered"):
        snapshot.find_provider_model("My-Finetune-7B", None, "openai", None)
    # A different provider is a different lookup.
    with pytest.raises(LookupError) as other:
        snapshot.find_provider_model("my-finetune-7b", None, "anthropic", None)
    assert "remembered" not in str(other.value)
    # Found models are unaffected.
    provider, model = snapshot.find_provider_model("gpt-4o", None, "openai", None)
    assert (provider.id, model.id) == ("openai", "gpt-4o")


def test_newer_price_data_set_later_wins(price_data: DataSnapshot) -> None:
    remember_unpriced_models()
    newer = DataSnapshot(providers=price_data.providers, from_auto_update=True)
    set_custom_snapshot(newer)
    assert get_snapshot() is newer
    # Installing again keeps the newer data (and its timestamp), remembering misses.
    again = remember_unpriced_models()
    assert again.providers is newer.providers
    assert again.from_auto_update and again.timestamp == newer.timestamp
