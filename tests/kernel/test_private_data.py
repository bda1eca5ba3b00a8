"""Co's data folder and stores are its user's only, whatever the umask.

Under JupyterHub with local users, homes are often readable by all (Debian's useradd
makes them 0755): the conversations in sessions, history, memories and telemetry must
not be. tests/hub/test_jupyterhub.py checks it across two real users.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common 022: new files readable by all unless Co says otherwise."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_data_folder_and_stores_are_readable_by_their_user_only(
    open_umask, start_kernel, model_server, co_home: Path
) -> None:
    model_server.extend([{"text": "Noted."}])
    # fork=False: a fresh kernel process, with this umask.
    kernel = start_kernel(fork=False)
    assert kernel.execute("remember that I like tea", timeout=120).status == "ok"
    # %forget opens the memory store (creating it) to look the id up.
    assert "No memory has id 1" in kernel.execute("%forget 1", timeout=60).text()
    kernel.shutdown()

    data = co_home / "data"
    found = {p.name for p in data.iterdir()}
    assert {"sessions.db", "history.db", "telemetry.db", "memory.db"} <= found, found
    for path in (data, *data.iterdir()):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path.name}: {oct(mode)}"
