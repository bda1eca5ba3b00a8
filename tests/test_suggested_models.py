"""The model names Co suggests are ones the installed pydantic-ai knows (issue 36)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from pydantic_ai.models import KnownModelName

from co_kernel.config import SUGGESTED_MODELS, suggested
from co_kernel.models._providers import NO_MODEL_MESSAGE

REPO = Path(__file__).resolve().parents[1]
# Co's provider -> pydantic-ai's prefix. Ollama serves whatever was pulled: no list to check.
PYDANTIC_AI = {"gemini": "google", "openai": "openai", "anthropic": "anthropic"}


def known_models() -> set[str]:
    alias = getattr(KnownModelName, "__value__", KnownModelName)
    return {str(name) for arg in get_args(alias) for name in (get_args(arg) or (arg,))}


def test_each_suggested_cloud_model_is_known_to_pydantic_ai() -> None:
    known = known_models()
    assert len(known) > 50, "pydantic-ai's list of models was not read"
    for provider, prefix in PYDANTIC_AI.items():
        name = f"{prefix}:{SUGGESTED_MODELS[provider]}"
        assert name in known, f"{name} is not a model pydantic-ai knows: update SUGGESTED_MODELS"


def test_the_hints_and_the_docs_use_the_table() -> None:
    for provider in PYDANTIC_AI:
        assert suggested(provider) in NO_MODEL_MESSAGE
    for doc in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        text = doc.read_text()
        cloud = {m for p, m in re.findall(r"`(gemini|openai|anthropic):([\w.-]+)`", text)}
        assert cloud <= set(SUGGESTED_MODELS.values()), f"{doc.name} names models off the table"
