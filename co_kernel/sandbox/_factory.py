"""Chooses a sandbox backend from settings values."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._docker import DEFAULT_IMAGE, DockerSandbox
from ._protocol import SandboxProtocol, StatusCallback
from ._subprocess import SubprocessSandbox

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["MODES", "create_sandbox"]

MODES = ("docker", "subprocess", "auto")


def create_sandbox(
    *,
    mode: str,
    image: str,
    workspace: Path,
    session_id: str,
    kernel_id: str,
    network: str = "none",
    memory: str = "1g",
    cpus: float = 1.0,
    pids_limit: int = 256,
    max_timeout: float = 600,
    on_status: StatusCallback | None = None,
    settings: Settings | None = None,
) -> SandboxProtocol:
    """Make the session's sandbox. Cheap: nothing touches Docker until the first `run`.

    "auto" means Docker, decided on first use; when the engine does not answer,
    `run` raises SandboxUnavailable. Only "subprocess" ever runs on the host. The Docker
    sandbox hides the protected files of ``settings`` (without: the project settings and
    ``.env*`` files only). Its ``sandbox_workspace`` says whether the container mounts the
    workspace or gets copies of it (for an engine that cannot see the kernel's files).
    """
    chosen = mode.strip().lower()
    if chosen == "subprocess":
        return SubprocessSandbox(workspace=workspace, max_timeout=max_timeout)
    if chosen in ("docker", "auto"):
        return DockerSandbox(
            mode=chosen,
            image=image or DEFAULT_IMAGE,
            workspace=workspace,
            session_id=session_id,
            kernel_id=kernel_id,
            network=network,
            memory=memory,
            cpus=cpus,
            pids_limit=pids_limit,
            max_timeout=max_timeout,
            on_status=on_status,
            settings=settings,
            workspace_mode=settings.sandbox_workspace if settings is not None else "auto",
            copy_limit_mb=settings.sandbox_copy_limit_mb if settings is not None else 500.0,
        )
    raise ValueError(
        f"Unknown sandbox mode {mode!r}: set sandbox to one of {', '.join(MODES)} "
        "in your settings (~/.config/co/settings.json) or CO_SANDBOX."
    )
