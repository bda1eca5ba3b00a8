"""The session's sandbox, created on first use from settings and kept in CoDeps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._factory import create_sandbox
from ._protocol import SandboxProtocol

if TYPE_CHECKING:
    from ..turn import CoDeps

__all__ = ["ensure_sandbox"]


def ensure_sandbox(deps: CoDeps) -> SandboxProtocol:
    """The session's sandbox; cheap (no container until the first command runs)."""
    if deps.sandbox is None:
        s = deps.settings
        deps.sandbox = create_sandbox(
            mode=s.sandbox,
            image=s.sandbox_image,
            workspace=deps.workspace,
            session_id=deps.session_id,
            kernel_id=deps.kernel_id,
            network=s.sandbox_network,
            memory=s.sandbox_memory,
            cpus=s.sandbox_cpus,
            pids_limit=s.sandbox_pids_limit,
            max_timeout=s.sandbox_max_timeout,
        )
    return deps.sandbox
