"""Co driven by clients that are not ours: papermill, jupyter console, Jupyter's conformance suite."""

from __future__ import annotations

import os
from pathlib import Path

from co_kernel.testing import ScriptedModelServer

from ..kernel_forkserver import client_environment

REPO = Path(__file__).resolve().parents[2]


def client_env(co_home: Path, server: ScriptedModelServer, *, fork: bool = True) -> dict[str, str]:
    """The environment a client starts Co kernels with: this checkout, the scripted model.

    ``fork=False`` for ``jupyter console``: its kernel shares the console's terminal (and
    fits Markdown to its width), which a kernel forked from the test process does not.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env.update(
        CO_HOME=str(co_home),
        CO_SANDBOX="subprocess",
        CO_MODEL="compat:scripted",
        CO_BASE_URL=server.base_url,
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p),
    )
    # Kernels the client starts itself fork from the test process's server, which has
    # imported Co already (tests/kernel_forkserver.py).
    return client_environment(env) if fork else env
