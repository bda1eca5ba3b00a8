"""The session's sandbox, created on first use and kept in ``CoDeps``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..turn._deps import CoDeps
    from ._protocol import SandboxProtocol, StatusCallback

__all__ = ["ensure_sandbox"]


def ensure_sandbox(deps: CoDeps, on_status: StatusCallback | None = None) -> SandboxProtocol:
    """The session's sandbox; built from settings the first time (cheap: no Docker call yet).

    Shared by ``!cmd`` cells and the shell tool, so both run in the same container.
    """
    if deps.sandbox is None:
        from ._factory import create_sandbox

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
            on_status=on_status,
        )
    return deps.sandbox
