"""The model names Co suggests are ones the installed pydantic-ai knows."""

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


def readme_table() -> dict[str, str]:
    """provider -> model of the README's "Choosing a model" table: the one table of names."""
    section = (REPO / "README.md").read_text().split("## Choosing a model", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = re.findall(r"^\|[^|`]+\| `(\w+):([^`/]+)`", section, re.MULTILINE)
    return {provider: model for provider, model in rows if provider in SUGGESTED_MODELS}


def test_the_hints_are_the_readme_table() -> None:
    table = readme_table()
    assert set(table) == {"gemini", "openai", "anthropic", "ollama"}, table
    assert table == SUGGESTED_MODELS


def test_the_tour_and_the_notebooks_name_the_readme_table_models() -> None:
    import nbformat

    table = readme_table()
    tour = nbformat.read(REPO / "notebooks" / "00-tour.ipynb", as_version=4)
    # The tour's own table of models: one `%model` example per provider of the README's.
    [section] = [c.source for c in tour.cells if c.source.startswith("## Use your own model")]
    examples = dict(re.findall(r"^\|[^|`]+\| `%model (\w+):([^`]+)`", section, re.MULTILINE))
    assert {p: m for p, m in examples.items() if p in table} == table
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            named = re.findall(r"\b(gemini|openai|anthropic|ollama):([\w.-]*\w)", cell.source)
            off = {f"{p}:{m}" for p, m in named if table[p] != m}
            assert not off, f"{path.name} names models off the README's table: {off}"
