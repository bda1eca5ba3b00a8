"""Run a real Jupyter server (JupyterLab, Notebook 7 or the bare server) in a throwaway environment.

Everything the server reads lives under one temporary folder: the Co kernelspec, this
checkout's prebuilt labextension (a symlink, so the test sees what would ship), the
server-extension config from ``jupyter-config/``, JupyterLab settings and workspaces.
Nothing of the developer's own Jupyter setup leaks in or is written to.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .kernel_forkserver import ForkServer, forking, write_co_kernelspec
from .net import free_port

REPO = Path(__file__).resolve().parents[2]
LABEXTENSION = REPO / "co_kernel" / "labextension"
EXTENSION_NAME = "co-kernel-lab"


def jupyter_environment(
    base: Path, env: dict[str, str] | None = None, *, person: bool = False
) -> dict[str, str]:
    """Environment variables for a server whose Jupyter paths all live under ``base``.

    ``person``: nothing of the test runner either (no ``PYTEST_*``), as in a person's shell.
    """
    data = base / "prefix" / "share" / "jupyter"
    fork = forking()  # the server's Co kernels come from the test process's fork server
    write_co_kernelspec(data, fork=fork)
    (data / "labextensions").mkdir(parents=True, exist_ok=True)
    link = data / "labextensions" / EXTENSION_NAME
    if not link.exists():
        link.symlink_to(LABEXTENSION, target_is_directory=True)
    config = base / "config"
    shutil.copytree(REPO / "jupyter-config", config, dirs_exist_ok=True)
    # No news or update checks: tests have no internet and no use for the pop-up.
    notification = base / "lab-settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True, exist_ok=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    dropped = ("CO_", "JUPYTER", "PYTEST_") if person else ("CO_", "JUPYTER")
    full = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    full.update(
        {
            "JUPYTER_PATH": str(data),
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_DATA_DIR": str(base / "data"),
            "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(base / "lab-settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(base / "lab-workspaces"),
            "JUPYTER_PLATFORM_DIRS": "1",
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
            ),
        }
    )
    full.update(env or {})
    return ForkServer.shared().environment(full) if fork else full


@dataclass
class JupyterServer:
    """A running server and how to reach it."""

    base_url: str
    """``http://127.0.0.1:PORT/``."""
    token: str
    """The token every request carries."""
    root: Path
    """The folder the server serves (notebooks live here)."""
    log_path: Path
    """The server's combined output, for failure messages."""
    process: subprocess.Popen[bytes]
    """The server process."""
    env: dict[str, str] = field(default_factory=dict)
    """The environment the server (and its kernels) run with."""

    def url(self, path: str, **params: str) -> str:
        query = urllib.parse.urlencode({"token": self.token, **params})
        return f"{self.base_url}{path.lstrip('/')}?{query}"

    def get_json(self, path: str, *, token: bool = True, **params: str) -> tuple[int, Any]:
        """GET a JSON API path; returns (status, parsed body) for errors too."""
        if token:
            url = self.url(path, **params)
        else:
            url = f"{self.base_url}{path.lstrip('/')}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            body = exc.read()
            try:
                return exc.code, json.loads(body or b"null")
            except json.JSONDecodeError:
                return exc.code, body.decode(errors="replace")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop_process(self.process, 20)


def stop_process(process: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def start_server(
    root: Path,
    *,
    env: dict[str, str] | None = None,
    app: Literal["lab", "notebook", "server"] = "lab",
    base: Path | None = None,
    timeout: float = 90,
    expose_app: bool = True,
    python: Path | None = None,
) -> JupyterServer:
    """Start JupyterLab (or Notebook 7, or jupyter_server) on 127.0.0.1 and wait until it answers.

    ``expose_app=False`` serves the page as a person's server does, without
    ``window.jupyterapp`` (the security tests: a script in the page has no app to drive).
    ``python``: the server runs in that environment's Python (its kernels are still this
    checkout's), with a person's environment variables; by default this process's Python.
    """
    base = base or Path(tempfile.mkdtemp(prefix="co-jupyter-"))
    full_env = jupyter_environment(base, env, person=python is not None)
    port = free_port()
    token = secrets.token_hex(16)
    module = {"lab": "jupyterlab", "notebook": "notebook", "server": "jupyter_server"}[app]
    argv = [
        str(python or sys.executable),
        "-m",
        module,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_root=True",
    ]
    # window.jupyterapp lets a test run commands the way menus do (e.g. switch themes).
    if app == "lab" and expose_app:
        argv.append("--LabApp.expose_app_in_browser=True")
    elif app == "notebook" and expose_app:
        argv.append("--JupyterNotebookApp.expose_app_in_browser=True")
    log_path = base / "server.log"
    log_file = log_path.open("wb")
    process = subprocess.Popen(
        argv, env=full_env, cwd=root, stdout=log_file, stderr=subprocess.STDOUT
    )
    log_file.close()
    server = JupyterServer(f"http://127.0.0.1:{port}/", token, root, log_path, process, full_env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Jupyter server exited early:\n{server.log()[-4000:]}")
        try:
            status, _ = server.get_json("api/status")
        except (urllib.error.URLError, ConnectionError, OSError):
            status = 0
        if status == 200:
            return server
        time.sleep(0.2)
    server.stop()
    raise TimeoutError(f"the Jupyter server did not answer in {timeout}s:\n{server.log()[-4000:]}")
