"""A real JupyterLab server on 127.0.0.1 and headless Chromium driving it (Playwright).

Chromium is Debian's (``/usr/bin/chromium``); Playwright never downloads a browser.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_notebook(path: Path, cells: list[str]) -> None:
    """A notebook of Co prompts that runs on the ``co`` kernel."""
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {},
             "outputs": [], "source": text}
            for i, text in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"display_name": "Co", "language": "co", "name": "co"},
            "language_info": {"name": "co"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    path.write_text(json.dumps(notebook, indent=1))


class LabServer:
    """A running ``jupyter lab`` process."""

    def __init__(self, root: Path, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.root = root
        jupyter_dirs = root.parent / "jupyter-dirs"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
        full_env.update(
            {
                # Keep the person's Jupyter settings and workspaces out of the test.
                "JUPYTER_CONFIG_DIR": str(jupyter_dirs / "config"),
                "JUPYTER_RUNTIME_DIR": str(jupyter_dirs / "runtime"),
                "JUPYTERLAB_SETTINGS_DIR": str(jupyter_dirs / "lab-settings"),
                "JUPYTERLAB_WORKSPACES_DIR": str(jupyter_dirs / "lab-workspaces"),
            }
        )
        full_env.update(env)
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "jupyterlab",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}",
                "--ServerApp.open_browser=False",
                "--ServerApp.allow_root=True",
                f"--ServerApp.root_dir={root}",
                "--LabApp.news_url=",
            ],
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        url = f"{self.base_url}/api/status?token={self.token}"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError("jupyter lab did not start")

    def notebook_url(self, name: str) -> str:
        return f"{self.base_url}/lab/tree/{name}?reset&token={self.token}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self._log.close()


@contextmanager
def lab_server(root: Path, env: dict[str, str], log: Path) -> Iterator[LabServer]:
    server = LabServer(root, env, log)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@contextmanager
def chromium_page() -> Iterator[Any]:
    """A Playwright page in Debian's headless Chromium."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise RuntimeError(
            f"{CHROMIUM} is missing: apt-get install chromium (scripts/test.sh does)"
        )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            yield page
        finally:
            browser.close()
