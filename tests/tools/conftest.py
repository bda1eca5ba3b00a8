"""Fixtures for the tools: real folders, a real audit log, a real RunContext."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from co_kernel.config import Settings
from co_kernel.telemetry import AuditLog
from co_kernel.turn import CoDeps


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[AuditLog]:
    log = AuditLog(tmp_path / "telemetry.db")
    yield log
    log.close()


@pytest.fixture
def make_deps(workspace: Path, audit: AuditLog) -> Callable[..., CoDeps]:
    """CoDeps for the workspace with the given settings, auditing into a real database."""

    def make(**settings: Any) -> CoDeps:
        return CoDeps(
            settings=Settings(**settings),
            session_id="tools-test",
            kernel_id="kernel-test",
            workspace=workspace,
            audit=audit,
        )

    return make


def ctx(deps: CoDeps, *, approved: bool = False) -> RunContext[CoDeps]:
    """The context pydantic-ai hands a tool (the model is never called by the tools)."""
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage(), tool_call_approved=approved)
