"""The tests' container listing against a real adversary: containers that come and go.

Other workers' kernels make and remove Co containers all the time; a listing that inspects
each container it listed fails with NotFound now and then, and a rerun hides it.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from .conftest import TEST_IMAGE, own_containers

pytestmark = pytest.mark.docker


def test_own_containers_are_found_while_others_are_removed(docker_client: Any) -> None:
    run = uuid.uuid4().hex
    label = {"label": f"co.listing-race={run}"}
    mine = docker_client.containers.create(
        TEST_IMAGE, ["true"], labels={"co.listing-race": run, "co.owner": "test"}
    )
    stop = threading.Event()
    churned = 0

    def adversary() -> None:
        nonlocal churned
        while not stop.is_set():
            theirs = docker_client.containers.create(
                TEST_IMAGE, ["true"], labels={"co.listing-race": run}
            )
            theirs.remove(force=True)
            churned += 1

    worker = threading.Thread(target=adversary)
    worker.start()
    listings = 0
    try:
        deadline = time.monotonic() + 30
        # Enough listings during removals that an inspecting listing failed (measured: 1
        # in 13 failed with NotFound).
        while (churned < 20 or listings < 200) and time.monotonic() < deadline:
            found = own_containers(
                docker_client, label, lambda listed: listed["Labels"].get("co.owner") == "test"
            )
            assert [c.id for c in found] == [mine.id]
            assert found[0].labels["co.owner"] == "test", "inspected: the full labels"
            listings += 1
    finally:
        stop.set()
        worker.join()
        mine.remove(force=True)
    assert churned >= 20 and listings >= 200, (churned, listings)
