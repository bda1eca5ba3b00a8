"""No known secret reaches memory.db or its write-ahead log: the store redacts text and
tags before every write, with the session's redactor or, by default, the environment's."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from co_kernel.config import Settings
from co_kernel.memory import MemoryStore
from co_kernel.session_state import CoDeps
from co_kernel.telemetry import Redactor
from co_kernel.tools import memory

_SECRET = st.from_regex(r"[A-Za-z0-9_\-]{12,40}", fullmatch=True)
_WORDS = st.text(alphabet=st.characters(categories=["L", "N", "Zs"]), max_size=40)


def _on_disk(db: Path) -> bytes:
    """Every byte of the database and its write-ahead log as they are now."""
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


@settings(max_examples=30, deadline=None)
@given(secret=_SECRET, before=_WORDS, after=_WORDS, in_tag=st.booleans())
def test_a_known_secret_never_reaches_the_file(secret, before, after, in_tag):
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        store = MemoryStore(db, redact=Redactor([secret]).redact)
        try:
            memory_id = store.add(f"{before} {secret} {after}", [secret] if in_tag else ["x"])
            store.update(memory_id, text=f"{secret}{after}", tags=[before or "y", secret])
            assert secret.encode() not in _on_disk(db)
            saved = store.get(memory_id)
            assert saved is not None and "[REDACTED]" in saved.text
        finally:
            store.close()
        assert secret.encode() not in _on_disk(db)


def test_by_default_the_environment_secrets_are_redacted(tmp_path, monkeypatch):
    key = "env-secret-31f0c9a7d2"
    monkeypatch.setenv("CO_TEST_SERVICE_API_KEY", key)
    store = MemoryStore(tmp_path / "memory.db")
    try:
        store.add(f"The service key is {key}")
        assert key.encode() not in _on_disk(tmp_path / "memory.db")
    finally:
        store.close()


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CO_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_save_memory_with_a_configured_key_stores_no_key(home, tmp_path):
    key = "sk-proj-configured0123456789abcdef"
    deps = CoDeps(Settings(openai_api_key=key), "s", "k", tmp_path)
    ctx = RunContext(deps=deps, model=TestModel(), usage=RunUsage(), tool_call_approved=True)
    saved = asyncio.run(memory.save_memory(ctx, f"The OpenAI key is {key}", tags=["keys"]))
    assert key not in saved["display"] and "[REDACTED]" in saved["display"]
    db = home / "data" / "memory.db"
    assert db.exists() and key.encode() not in _on_disk(db)
    recalled = asyncio.run(memory.recall_memory(ctx, "OpenAI key"))
    assert key not in recalled["display"]
    memory.store_for(deps).close()
    assert key.encode() not in _on_disk(db)
