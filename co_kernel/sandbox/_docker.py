"""Runs commands in one locked-down Docker container per kernel session.

``DockerSandbox``, ``SandboxProtocol``'s Docker backend, is three layers, each a module
built on the one before: ``_mounts`` (what the container mounts, and whether the mounts still
cover what they were put over: the workspace, read-only control paths, masks over secrets,
copy mode), ``_container`` (the container's life: create, reuse, recreate, reap orphans,
remove; ``describe``) and ``_exec`` (running a command: the wrapper, its output, timeouts,
the kill; ``run``). Here are only the state they share, set up once, and ``close``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._bind_checks import BindChecks
from ._container import _default_user
from ._copy import WorkspaceCopy
from ._exec import SandboxExec
from ._mounts import WORKDIR, Controls, Secrets, _workspace_mode
from ._protocol import StatusCallback

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["DEFAULT_IMAGE", "DockerSandbox"]

DEFAULT_IMAGE = "python:3.12-slim"
NETWORKS = ("none", "bridge")


class DockerSandbox(SandboxExec):
    """Runs commands in this kernel session's own locked-down container."""

    backend = "docker"

    def __init__(
        self,
        *,
        workspace: Path,
        session_id: str,
        kernel_id: str,
        image: str = DEFAULT_IMAGE,
        mode: str = "docker",
        network: str = "none",
        memory: str = "1g",
        cpus: float = 1.0,
        pids_limit: int = 256,
        max_timeout: float = 600,
        on_status: StatusCallback | None = None,
        settings: Settings | None = None,
        workspace_mode: str = "auto",
        copy_limit_mb: float = 500.0,
    ) -> None:
        if network not in NETWORKS:
            raise ValueError(
                f"sandbox_network must be one of {', '.join(NETWORKS)}, not {network!r}"
            )
        if cpus <= 0 or pids_limit <= 0 or max_timeout <= 0:
            raise ValueError("sandbox cpus, pids_limit and max_timeout must be positive")
        self.mode = mode
        self.image = image or DEFAULT_IMAGE
        self.workspace = Path(workspace)
        self.session_id = session_id
        self.kernel_id = kernel_id
        self.network = network
        self.memory = memory
        self.cpus = cpus
        self.pids_limit = pids_limit
        self.max_timeout = max_timeout
        self.on_status = on_status
        self.settings = settings
        self.user = _default_user()
        self.container_name = f"co-sandbox-{session_id[:12]}"
        self.workspace_mode = _workspace_mode(workspace_mode, os.environ.get("DOCKER_HOST", ""))
        self._copy: WorkspaceCopy | None = None
        if self.workspace_mode == "copy":
            self._copy = WorkspaceCopy(
                self.workspace.resolve(),
                limit=int(copy_limit_mb * 1e6),
                workdir=WORKDIR,
                user=self.user,
                protected=self._protected_here,
            )
        self._copy_lock = threading.Lock()
        self._client: Any = None
        self._container_id: str | None = None
        self._hidden: Secrets = {}  # what the container's masks cover
        self._controls: Controls = {}  # what its read-only mounts of CONTROL_PATHS cover
        self._checks: BindChecks | None = None  # bind mode: git's paths, the looks after
        self._placeholders: set[Path] = set()  # mount points this sandbox made for them
        self._lock = threading.Lock()
        self._generation = 0  # bumped by close(): runs in flight become "interrupted"

    async def close(self) -> None:
        self._generation += 1
        await asyncio.to_thread(self._close_sync)
