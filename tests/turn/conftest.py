"""Fixtures of the turn's tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ..support.containers import scratch_container as _scratch_container


@pytest.fixture(scope="module")
def scratch_container(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One throw-away container per test module, where generated command lines run."""
    with _scratch_container(request.module.__name__.rsplit(".", 1)[-1].replace("_", "-")) as c:
        yield c
