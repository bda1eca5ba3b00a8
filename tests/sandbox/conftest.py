"""Fixtures for the sandbox tests: a real Docker engine and the locally built test image,
and ``backend``, which runs a test once against each backend."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from co_kernel.sandbox import CommandResult, DockerSandbox, SandboxProtocol, SubprocessSandbox

from ..support.containers import TEST_IMAGE

FIX = "run scripts/start-docker.sh and then scripts/build-sandbox-image.sh (CI does both)"
SANDBOX_UID = os.getuid() or 1000
"""The uid commands run as: the kernel's own, or 1000 when the kernel runs as root."""


def own_containers(
    client: Any, filters: dict[str, Any], keep: Callable[[dict[str, Any]], bool] | None = None
) -> list[Any]:
    """The containers a test made (``filters``, then ``keep`` of each listing entry), inspected.

    The listing is not inspected (``sparse``): other workers' kernels make and remove
    containers at any moment, and inspecting one they just removed fails with NotFound.
    Only the test's own are inspected, so one of those vanishing still fails the test.
    """
    found = []
    for container in client.containers.list(all=True, sparse=True, filters=filters):
        if keep is None or keep(container.attrs):
            container.reload()
            found.append(container)
    return found


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """A client for the engine, after checking it answers and has the test image."""
    try:
        client = docker.from_env(timeout=10)
    except docker.errors.DockerException as e:
        pytest.fail(f"The Docker engine is not reachable ({e}): {FIX}", pytrace=False)
    try:
        client.ping()
        try:
            client.images.get(TEST_IMAGE)
        except docker.errors.ImageNotFound:
            pytest.fail(f"The image {TEST_IMAGE} is missing: {FIX}", pytrace=False)
        yield client
    finally:
        client.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The directory mounted at /workspace, writable by the sandbox user."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    if os.getuid() == 0:
        os.chown(ws, SANDBOX_UID, SANDBOX_UID)
    return ws


@pytest.fixture
def make_sandbox(docker_client: Any, workspace: Path) -> Iterator[Callable[..., DockerSandbox]]:
    """Makes DockerSandboxes on the test image with fresh session ids; closes them afterwards."""
    made: list[DockerSandbox] = []

    def make(**kwargs: Any) -> DockerSandbox:
        kwargs.setdefault("image", TEST_IMAGE)
        kwargs.setdefault("workspace", workspace)
        kwargs.setdefault("session_id", f"test{uuid.uuid4().hex}")
        kwargs.setdefault("kernel_id", "test-kernel")
        sandbox = DockerSandbox(**kwargs)
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        asyncio.run(sandbox.close())


def run(
    sandbox: SandboxProtocol, command: str, timeout: float = 30, **kwargs: Any
) -> CommandResult:
    """Run ``command`` in ``sandbox`` on an event loop of its own."""
    return asyncio.run(sandbox.run(command, timeout=timeout, **kwargs))


@pytest.fixture
def tag() -> str:
    """A unique sleep duration, so the test can find its own processes (``sleep <tag>``)."""
    return f"{1000 + uuid.uuid4().int % 9000}.{uuid.uuid4().int % 1000:03d}"


def host_processes_with(needle: str) -> list[str]:
    """Command lines of live host processes that contain ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state != "Z":
            found.append(cmdline)
    return found


@dataclass
class Backend:
    """One sandbox backend as the shared tests drive it."""

    name: str
    """``subprocess`` or ``docker``."""
    make: Callable[..., SandboxProtocol]
    """Makes a sandbox on the test's workspace (keyword arguments go to the constructor);
    the fixture closes it afterwards."""
    root: str
    """The workspace as the sandbox's commands see it."""
    docker_client: Any = None
    """The engine's client, for the Docker backend."""

    def processes_with(self, sandbox: SandboxProtocol, needle: str) -> list[str]:
        """Live processes of ``sandbox`` whose command line contains ``needle``: on the
        host for the subprocess backend, in the container (``docker top``) for Docker."""
        if self.name == "subprocess":
            return host_processes_with(needle)
        assert isinstance(sandbox, DockerSandbox)
        try:
            container = self.docker_client.containers.get(sandbox.container_name)
            rows = container.top().get("Processes") or []
        except docker.errors.NotFound:
            return []  # no container, no process
        except docker.errors.APIError as e:
            if "is not running" in str(e):
                return []
            raise
        return [line for line in (" ".join(row) for row in rows) if needle in line]


@pytest.fixture(params=["subprocess", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Backend]:
    """Each backend in turn; the Docker one only where the test image is (``make_sandbox``)."""
    if request.param == "docker":
        make_sandbox = request.getfixturevalue("make_sandbox")
        client = request.getfixturevalue("docker_client")
        yield Backend("docker", make_sandbox, "/workspace", client)
        return
    made: list[SubprocessSandbox] = []

    def make(**kwargs: Any) -> SubprocessSandbox:
        sandbox = SubprocessSandbox(workspace=workspace, **kwargs)
        made.append(sandbox)
        return sandbox

    yield Backend("subprocess", make, str(workspace))
    for sandbox in made:
        asyncio.run(sandbox.close())
