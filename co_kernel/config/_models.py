"""Model names: ``provider:model``, and the providers Co can build a model for."""

from __future__ import annotations

import difflib

from ..exceptions import UnknownProvider

__all__ = ["PROVIDERS", "SUGGESTED_MODELS", "parse_model_string", "suggested"]

PROVIDERS: dict[str, str] = {
    "gemini": "Google Gemini (GEMINI_API_KEY)",
    "ollama": "a local Ollama server (OLLAMA_HOST)",
    "openai": "OpenAI (OPENAI_API_KEY)",
    "anthropic": "Anthropic (ANTHROPIC_API_KEY)",
    "compat": "any OpenAI-compatible server (CO_BASE_URL, CO_API_KEY)",
    "replay": "a scripted conversation (replay:path/to/script.jsonl)",
    "local": "a GGUF model run on this machine by llama.cpp (local:path/to/model.gguf, local:smollm2-135m)",
}

SUGGESTED_MODELS: dict[str, str] = {
    "gemini": "gemini-3.8-flash",
    "openai": "gpt-6.1-terra",
    "anthropic": "claude-sonnet-5-5",
    "ollama": "llama3.2",
}
"""The model Co names in its hints for each provider, in one place: providers retire
names (Anthropic retires claude-sonnet-4-5 on 30 November 2026), and a test fails when a
cloud provider's name here is not one the installed pydantic-ai knows."""


def suggested(provider: str) -> str:
    """``provider:model`` as Co's hints write it, e.g. ``gemini:gemini-3.8-flash``."""
    return f"{provider}:{SUGGESTED_MODELS[provider]}"


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
