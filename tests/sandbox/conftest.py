"""Fixtures for the sandbox tests: a real Docker engine and the locally built test image."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from co_kernel.sandbox import DockerSandbox

from ..support.containers import TEST_IMAGE

FIX = "run scripts/start-docker.sh and then scripts/build-sandbox-image.sh (CI does both)"
SANDBOX_UID = os.getuid() or 1000
"""The uid commands run as: the kernel's own, or 1000 when the kernel runs as root."""


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
