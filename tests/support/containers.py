"""Containers on the sandbox test image, for tests that let bash itself be the judge."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import Any

__all__ = ["TEST_IMAGE", "scratch_container"]

TEST_IMAGE = os.environ.get("CO_TEST_SANDBOX_IMAGE", "co-sandbox-test:bookworm")
"""Built by scripts/build-sandbox-image.sh; another image must have /bin/sh, python3 and ps."""


@contextlib.contextmanager
def scratch_container(purpose: str) -> Iterator[Any]:
    """A locked-down container (no network, no capabilities, read-only but for /tmp, uid
    1000) that sleeps until it is removed on leaving; ``purpose`` goes into its name."""
    import docker

    client = docker.from_env()
    container = client.containers.run(
        TEST_IMAGE,
        ["sleep", "infinity"],
        name=f"co-{purpose}-{uuid.uuid4().hex[:12]}",
        detach=True,
        init=True,
        network_mode="none",
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        read_only=True,
        tmpfs={"/tmp": "rw,size=64m"},
        user="1000:1000",
        environment={"HOME": "/tmp/s"},
    )
    try:
        yield container
    finally:
        container.remove(force=True)
        client.close()
