"""Model names: ``provider:model``, and the providers Co can build a model for."""

from __future__ import annotations

import difflib

from ..exceptions import UnknownProvider

__all__ = ["PROVIDERS", "parse_model_string"]

PROVIDERS: dict[str, str] = {
    "gemini": "Google Gemini (GEMINI_API_KEY)",
    "ollama": "a local Ollama server (OLLAMA_HOST)",
    "openai": "OpenAI (OPENAI_API_KEY)",
    "anthropic": "Anthropic (ANTHROPIC_API_KEY)",
    "compat": "any OpenAI-compatible server (CO_BASE_URL, CO_API_KEY)",
    "replay": "a scripted conversation (replay:path/to/script.jsonl)",
    "local": "a GGUF model run on this machine by llama.cpp (local:path/to/model.gguf, local:smollm2-135m)",
}


def parse_model_string(value: str) -> tuple[str, str]:
    """Split ``provider:model``; raise a ConfigError that names the fix."""
    provider, sep, name = value.strip().partition(":")
    provider = provider.lower()
    if not sep or not name.strip():
        raise UnknownProvider(
            f"'{value}' is not a model name: use provider:model, e.g. ollama:llama3.2 "
            f"(providers: {', '.join(PROVIDERS)})"
        )
    if provider not in PROVIDERS:
        close = difflib.get_close_matches(provider, list(PROVIDERS), n=1)
        hint = f" Did you mean '{close[0]}:{name}'?" if close else ""
        raise UnknownProvider(
            f"Unknown provider '{provider}' in '{value}'.{hint} "
            f"Known providers: {', '.join(PROVIDERS)}."
        )
    return provider, name.strip()
