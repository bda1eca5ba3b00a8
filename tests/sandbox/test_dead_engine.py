"""A Docker engine that does not answer: a clear error, and no socket left open."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import gc, sys
import docker.errors
from co_kernel.sandbox._container import _docker_client

unclosed = []
sys.unraisablehook = lambda u: unclosed.append(str(u.exc_value))
try:
    _docker_client(timeout=3)
except docker.errors.DockerException as exc:
    print("error:", exc)
gc.collect()
print("unclosed:", unclosed)
"""


def test_a_refused_connection_leaves_no_socket_open(tmp_path: Path) -> None:
    # A socket file nobody listens on: what a stopped dockerd leaves behind.
    path = tmp_path / "docker.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.close()
    env = {"DOCKER_HOST": f"unix://{path}", "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "error: Error while fetching server API version" in done.stdout
    assert "unclosed: []" in done.stdout
    assert "ResourceWarning" not in done.stderr
