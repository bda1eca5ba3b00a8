"""Co driven by clients that are not ours: papermill, jupyter console, Jupyter's conformance suite."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_forkserver import client_environment

REPO = Path(__file__).resolve().parents[2]


def client_env(co_home: Path, server: ScriptedModelServer) -> dict[str, str]:
    """The environment a client starts Co kernels with: this checkout, the scripted model.

    Not for ``jupyter console`` (``terminal_env``): its kernel shares the console's
    terminal (and fits Markdown to its width), which a kernel forked from the test process
    does not.
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
    # imported Co already (tests/support/kernel_forkserver.py).
    return client_environment(env)


def terminal_env(home: Path, co_home: Path, server: ScriptedModelServer) -> dict[str, str]:
    """The environment of a person's shell in a terminal, built from nothing.

    Nothing of the test process reaches the client or its kernel: with
    ``PYTEST_CURRENT_TEST`` ipykernel leaves the kernel's descriptors alone, which no
    person's kernel enjoys. ``home`` is the person's home (Jupyter's user folders).
    """
    home.mkdir(exist_ok=True)
    venv_bin = Path(sys.executable).parent
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(venv_bin), "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        # The checkout's Jupyter config, which the wheel installs in etc/jupyter (there
        # jupyter console's asks Co for terminal text), whatever this venv has installed.
        "JUPYTER_CONFIG_PATH": str(REPO / "jupyter-config"),
        "PYTHONPATH": str(REPO),
        "CO_HOME": str(co_home),
        "CO_SANDBOX": "subprocess",
        "CO_MODEL": "compat:scripted",
        "CO_BASE_URL": server.base_url,
    }
