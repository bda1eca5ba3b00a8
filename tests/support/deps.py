"""The tools' context without a kernel: ``CoDeps`` for a workspace and some settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from co_kernel.config import Settings
from co_kernel.session_state import CoDeps

__all__ = ["deps_for"]


def deps_for(workspace: Path, **settings: Any) -> CoDeps:
    """What a session's tools and guards get for ``workspace``, with no audit log."""
    return CoDeps(Settings(**settings), session_id="test", kernel_id="test", workspace=workspace)
