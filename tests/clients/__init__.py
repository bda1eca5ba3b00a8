"""Co driven by clients that are not ours: papermill, jupyter console, Jupyter's conformance suite."""

from __future__ import annotations

import os
from pathlib import Path

from co_kernel.testing import ScriptedModelServer

REPO = Path(__file__).resolve().parents[2]


def client_env(co_home: Path, server: ScriptedModelServer) -> dict[str, str]:
    """The environment a client starts Co kernels with: this checkout, the scripted model."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env.update(
        CO_HOME=str(co_home),
        CO_SANDBOX="subprocess",
        CO_MODEL="compat:scripted",
        CO_BASE_URL=server.base_url,
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p),
    )
    return env
