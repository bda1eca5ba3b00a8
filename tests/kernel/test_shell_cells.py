"""`!cmd` cells in a real kernel: the Docker sandbox, the subprocess backend, refusals."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.sandbox.conftest import (  # noqa: F401 - fixture
    SANDBOX_UID,
    TEST_IMAGE,
    docker_client,
    own_containers,
)

pytestmark = pytest.mark.docker


def _containers(client, workspace: Path) -> list:
    """Co's containers whose /workspace is this test's folder."""

    def mounts_workspace(listed: dict) -> bool:
        return any(m.get("Source") == str(workspace) for m in listed.get("Mounts") or [])

    return own_containers(client, {"label": ["co.kernel=1"]}, mounts_workspace)


@pytest.fixture
def docker_kernel(start_kernel, workspace, docker_client):  # noqa: F811 - fixture use
    if os.getuid() == 0:
        os.chown(workspace, SANDBOX_UID, SANDBOX_UID)

    def start(**env: str):
        full = {"CO_SANDBOX": "docker", "CO_SANDBOX_IMAGE": TEST_IMAGE}
        full.update(env)
        return start_kernel(full)

    return start


def test_output_streams_in_order_with_exit_status(docker_kernel):
    kernel = docker_kernel()
    result = kernel.execute(
        "!for i in 1 2 3; do echo line$i; sleep 0.4; done; echo oops >&2; exit 3"
    )
    chunks = [m for m in result.of_type("stream") if m["content"]["name"] == "stdout"]
    assert len(chunks) >= 2, "output must arrive while the command runs, not at the end"
    assert result.stdout == "line1\nline2\nline3\n"
    assert "oops" in result.stderr and "exit status 3" in result.stderr
    first_at = chunks[0]["_received"] - result.sent_at
    last_at = chunks[-1]["_received"] - result.sent_at
    assert last_at > first_at, "chunks are spread over time"


def test_runs_as_non_root_in_the_workspace(docker_kernel, workspace: Path):
    kernel = docker_kernel()
    result = kernel.execute("!id -u; pwd; echo from-container > made.txt")
    uid, cwd = result.stdout.split()[:2]
    assert uid != "0" and cwd == "/workspace"
    assert (workspace / "made.txt").read_text() == "from-container\n"


def test_container_is_reused_labelled_and_removed_at_shutdown(
    docker_kernel,
    docker_client,  # noqa: F811
    workspace: Path,
):
    kernel = docker_kernel()
    kernel.execute("!echo one > /tmp/marker")
    second = kernel.execute("!cat /tmp/marker")
    assert second.stdout == "one\n", "one container per session, reused"
    mine = _containers(docker_client, workspace)
    assert len(mine) == 1
    assert mine[0].labels["co.kernel"] == "1" and mine[0].labels["co.session"]
    kernel.shutdown()
    assert _containers(docker_client, workspace) == [], "removed when the kernel shuts down"


def test_two_kernels_get_two_containers(docker_kernel, docker_client, workspace: Path):  # noqa: F811
    a, b = docker_kernel(), docker_kernel()
    a.execute("!echo a > /tmp/who")
    assert b.execute("!cat /tmp/who").status == "ok"
    assert "No such file" in b.execute("!cat /tmp/who").stderr
    assert len(_containers(docker_client, workspace)) == 2


def test_killed_kernels_container_is_reaped_by_the_next_start(
    docker_kernel,
    docker_client,  # noqa: F811
    workspace: Path,
):
    doomed = docker_kernel()
    doomed.execute("!true")
    [container] = _containers(docker_client, workspace)
    os.kill(doomed.km.provisioner.process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while doomed.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    container.reload()
    assert container.status == "running", "a SIGKILLed kernel leaves its container behind"
    docker_kernel().execute("!true")
    assert container.id not in [c.id for c in _containers(docker_client, workspace)]


def test_timeout_kills_the_command(docker_kernel):
    kernel = docker_kernel(CO_SANDBOX_TIMEOUT="1")
    result = kernel.execute("!sleep 20; echo never")
    assert result.status == "error"
    assert "never" not in result.stdout
    assert "timed out after 1 s" in result.stderr
    assert result.stderr.count("timed out") == 1, "said once"
    assert "sandbox_timeout" in result.reply["content"]["evalue"]
    ps = kernel.execute("!ps -eo args").stdout
    assert "sleep 20" not in ps


def test_interrupt_kills_the_process_in_the_container(docker_kernel):
    kernel = docker_kernel()
    kernel.execute("!true")  # container exists, so the interrupt lands on a running command
    result = kernel.execute("!sleep 30; echo never", interrupt_after=1.0, timeout=20)
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert "Interrupted" in result.stderr
    ps = kernel.execute("!ps -eo args").stdout
    assert "sleep 30" not in ps
    assert kernel.execute("!echo still-usable").stdout == "still-usable\n"


def test_no_network_by_default_with_a_hint(docker_kernel):
    kernel = docker_kernel()
    code = "!python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\""
    result = kernel.execute(code)
    assert "exit status 1" in result.stderr
    assert "sandbox_network" in result.stderr


def test_subprocess_backend_runs_on_the_host(start_kernel, workspace: Path):
    kernel = start_kernel({"CO_SANDBOX": "subprocess"})
    result = kernel.execute("!pwd; echo hi > host.txt")
    assert result.stdout.strip() == str(workspace)
    assert (workspace / "host.txt").read_text() == "hi\n"


def test_docker_missing_is_refused_with_the_fix(start_kernel, tmp_path: Path):
    dead = tmp_path / "no-docker.sock"
    kernel = start_kernel({"CO_SANDBOX": "auto", "DOCKER_HOST": f"unix://{dead}"})
    result = kernel.execute("!echo should-not-run")
    assert result.status == "error"
    assert "should-not-run" not in result.stdout
    text = result.stderr
    assert "Docker" in text and "subprocess" in text
    assert kernel.execute("%help").status == "ok"
