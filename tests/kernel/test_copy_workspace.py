"""`!` cells with ``sandbox_workspace = copy`` in a real kernel: the
workspace and the container agree after each cell, an interrupted cell included, and a
workspace over the copy limit gets one clear message while the kernel stays usable."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.conftest import SANDBOX_UID, TEST_IMAGE, docker_client  # noqa: F401 - fixture

pytestmark = pytest.mark.docker

LIST = "!find . -type f | sort | xargs -r sha256sum"


def _host_listing(workspace: Path) -> str:
    """What LIST prints, computed on the host."""
    files = sorted(
        "./" + os.path.relpath(os.path.join(top, f), workspace)
        for top, _, names in os.walk(workspace)
        for f in names
    )
    return "".join(
        f"{hashlib.sha256(Path(workspace, f).read_bytes()).hexdigest()}  {f}\n" for f in files
    )


def test_cells_keep_the_workspace_and_the_container_in_step(
    start_kernel,
    workspace: Path,
    docker_client,  # noqa: F811 - fixture use
) -> None:
    if os.getuid() == 0:
        os.chown(workspace, SANDBOX_UID, SANDBOX_UID)
    (workspace / "data.csv").write_text("a,b\n1,2\n")
    (workspace / "old.txt").write_text("old\n")
    kernel = start_kernel(
        {
            "CO_SANDBOX": "docker",
            "CO_SANDBOX_IMAGE": TEST_IMAGE,
            "CO_SANDBOX_WORKSPACE": "copy",
            "CO_SANDBOX_COPY_LIMIT_MB": "0.02",
        }
    )
    assert kernel.execute(LIST, timeout=180).stdout == _host_listing(workspace)

    cell = kernel.execute("!echo 3,4 >> data.csv && rm old.txt && mkdir out && echo r > out/r.txt")
    assert cell.status == "ok", cell.text()
    assert (workspace / "data.csv").read_text() == "a,b\n1,2\n3,4\n"
    assert not (workspace / "old.txt").exists()
    assert (workspace / "out" / "r.txt").read_text() == "r\n"
    assert kernel.execute(LIST).stdout == _host_listing(workspace)

    (workspace / "out" / "r.txt").unlink()
    (workspace / "host.txt").write_text("from the host\n")
    assert kernel.execute(LIST).stdout == _host_listing(workspace)

    # Interrupted while running: what it wrote before is on the host.
    seen: dict[str, bool] = {}

    def watch(_kernel: Any, msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream" and "started" in msg["content"]["text"]:
            seen["started"] = True

    cell = kernel.execute(
        "!echo partial > half.txt; echo started; sleep 60",
        on_message=watch,
        interrupt_when=lambda: seen.get("started", False),
        timeout=60,
    )
    assert cell.reply["content"]["ename"] == "KeyboardInterrupt"
    assert (workspace / "half.txt").read_text() == "partial\n"
    assert kernel.execute(LIST).stdout == _host_listing(workspace)

    # Past the limit: one clear message, nothing run; under it again: back to normal.
    (workspace / "big.bin").write_bytes(b"x" * 30_000)
    cell = kernel.execute("!echo never > never.txt")
    assert "sandbox_copy_limit_mb" in cell.text(), cell.text()
    assert not (workspace / "never.txt").exists()
    (workspace / "big.bin").unlink()
    assert kernel.execute(LIST).stdout == _host_listing(workspace)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


@pytest.fixture
def tcp_engine() -> Iterator[str]:
    """The local engine's socket forwarded from a TCP port on 127.0.0.1: to Co, an engine
    named by ``DOCKER_HOST=tcp://``, as a remote one is."""
    engine = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not engine.startswith("unix://"):
        pytest.skip(f"the engine is not a local socket: {engine}")
    listener = socket.create_server(("127.0.0.1", 0))
    opened: list[socket.socket] = [listener]

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = listener.accept()
                upstream = socket.socket(socket.AF_UNIX)
                upstream.connect(engine.removeprefix("unix://"))
                opened.extend([client, upstream])
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    for sock in opened:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()


def test_auto_copies_for_an_engine_named_by_tcp(
    start_kernel,
    workspace: Path,
    tcp_engine: str,
    docker_client,  # noqa: F811 - fixture use
) -> None:
    """With the default sandbox_workspace (auto) and DOCKER_HOST=tcp://..., Co copies."""
    if os.getuid() == 0:
        os.chown(workspace, SANDBOX_UID, SANDBOX_UID)
    (workspace / "in.txt").write_text("from the host\n")
    kernel = start_kernel(
        {"CO_SANDBOX": "docker", "CO_SANDBOX_IMAGE": TEST_IMAGE, "DOCKER_HOST": tcp_engine}
    )
    # The container's /workspace is another folder than the host's (a bind mount would
    # show the host folder's inode), and files still go both ways.
    cell = kernel.execute("!stat -c %i /workspace; cat in.txt; echo back > out.txt", timeout=180)
    inode, text = cell.stdout.splitlines()
    assert int(inode) != workspace.stat().st_ino and text == "from the host", cell.text()
    assert (workspace / "out.txt").read_text() == "back\n"
