"""DockerSandbox against a real engine and real containers (what both backends do is in
test_backends.py)."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from co_kernel.sandbox import (
    CommandResult,
    DockerSandbox,
    SandboxProtocol,
    SandboxUnavailable,
    create_sandbox,
)

from .conftest import SANDBOX_UID, TEST_IMAGE, own_containers, run

MakeSandbox = Callable[..., DockerSandbox]
docker_test = pytest.mark.docker


def container_of(client: Any, sandbox: DockerSandbox) -> Any:
    return client.containers.get(sandbox.container_name)


async def running(container: Any, args: str, timeout: float = 30) -> None:
    """Wait until a process with these arguments runs in the container (``docker top``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        top = await asyncio.to_thread(container.top)
        if any(args in " ".join(row) for row in top.get("Processes") or []):
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"{args!r} did not start in the container")


@docker_test
def test_workspace_is_mounted_and_commands_run_as_non_root(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    sandbox = make_sandbox()
    (workspace / "from-host.txt").write_text("hello from the host\n")

    result = run(sandbox, "pwd; id -u; cat from-host.txt; echo written > /workspace/out.txt")

    assert result.exit_code == 0
    assert result.output == f"/workspace\n{SANDBOX_UID}\nhello from the host\n"
    assert SANDBOX_UID != 0
    out = workspace / "out.txt"
    assert out.read_text() == "written\n"
    assert out.stat().st_uid == SANDBOX_UID


@docker_test
def test_every_run_brings_its_whole_output_and_reads_no_input(make_sandbox: MakeSandbox) -> None:
    """The wrapper's handshake (a mark on each stream, a line on its stdin) stays invisible:
    bytes like the mark's pass through, output without a final newline arrives, the command
    reads an empty stdin; and quick commands, whose output the engine drops now and then,
    each bring theirs."""
    sandbox = make_sandbox()

    result = run(
        sandbox,
        "printf 'a\\036b'; printf 'err\\036\\n' >&2; cat; read -r x || printf ' no-input'",
    )

    assert result.exit_code == 0
    assert "err\x1e\n" in result.output  # stderr, interleaved anywhere
    assert result.output.replace("err\x1e\n", "", 1) == "a\x1eb no-input"
    outputs = [run(sandbox, f"echo {i}").output for i in range(40)]
    assert outputs == [f"{i}\n" for i in range(40)]


@docker_test
def test_a_workspace_the_sandbox_user_cannot_write_is_explained(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    workspace.chmod(0o555)
    sandbox = make_sandbox()

    result = run(sandbox, "touch made.txt")

    assert result.exit_code == 1
    assert "Permission denied" in result.output
    assert result.output.endswith(
        f"(the workspace {workspace} is not writable by uid {SANDBOX_UID}, the sandbox user: "
        "change its owner or mode, or run the kernel as its owner)\n"
    )
    workspace.chmod(0o755)
    assert "not writable" not in run(sandbox, "touch /etc/nope").output


@docker_test
def test_container_cannot_see_or_touch_the_host(make_sandbox: MakeSandbox, tmp_path: Path) -> None:
    marker = f"co-marker-{uuid.uuid4().hex}"
    (tmp_path / marker).write_text("secret")  # next to the workspace, not in it
    sandbox = make_sandbox()

    found = run(sandbox, f"find / -xdev -name {marker} 2>/dev/null; test -e {tmp_path / marker}")
    assert found.output == ""
    assert found.exit_code == 1
    hostname = run(sandbox, "cat /etc/hostname").output.strip()
    assert hostname != socket.gethostname()
    assert run(sandbox, "test -e /var/run/docker.sock || test -e /run/docker.sock").exit_code == 1
    status = run(sandbox, "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status").output
    assert "CapEff:\t0000000000000000" in status
    assert "CapBnd:\t0000000000000000" in status
    assert "NoNewPrivs:\t1" in status
    read_only = run(sandbox, "touch /etc/co-probe")
    assert read_only.exit_code != 0
    assert "Read-only file system" in read_only.output
    assert run(sandbox, "touch /tmp/probe && echo $HOME").output == "/tmp\n"


@docker_test
def test_container_settings(make_sandbox: MakeSandbox, docker_client: Any, workspace: Path) -> None:
    sandbox = make_sandbox(memory="256m", cpus=0.5, pids_limit=100)
    run(sandbox, "true")

    attrs = container_of(docker_client, sandbox).attrs
    host = attrs["HostConfig"]
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Privileged"] is False
    assert host["ReadonlyRootfs"] is True
    assert host["Init"] is True
    assert host["NetworkMode"] == "none"
    assert host["Memory"] == 256 * 2**20
    assert host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == 100
    assert sorted((m["Source"], m["Destination"], m["RW"]) for m in attrs["Mounts"]) == [
        (str(workspace), "/workspace", True),
        (str(workspace / ".co"), "/workspace/.co", False),  # what Co and git obey: read-only
        (str(workspace / ".git"), "/workspace/.git", False),
    ]
    assert (
        attrs["Config"]["User"]
        == f"{SANDBOX_UID}:{SANDBOX_UID if os.getuid() == 0 else os.getgid()}"
    )
    labels = attrs["Config"]["Labels"]
    assert labels["co.kernel"] == "1"
    assert labels["co.session"] == sandbox.session_id
    assert labels["co.kernel_id"] == "test-kernel"
    assert labels["co.pid"] == str(os.getpid())


@pytest.fixture
def host_server(docker_client: Any) -> Iterator[tuple[str, int]]:
    """A TCP server on the host's docker bridge address that answers "pong"."""
    ipam = docker_client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    # Older engines leave Gateway out for the default bridge: it is the subnet's first host.
    gateway = ipam.get("Gateway") or str(ipaddress.ip_network(ipam["Subnet"])[1])
    server = socket.create_server(("0.0.0.0", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"pong")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield gateway, server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


CONNECT = (
    "python3 -c \"import socket,sys; s=socket.create_connection(('{host}', {port}), timeout=3); "
    'print(s.recv(4).decode())"'
)


@docker_test
def test_network_none_blocks_connections_and_hints(
    make_sandbox: MakeSandbox, host_server: tuple[str, int]
) -> None:
    host, port = host_server
    isolated = make_sandbox()

    to_host = run(isolated, CONNECT.format(host=host, port=port))
    to_internet = run(isolated, CONNECT.format(host="1.1.1.1", port=53))
    by_name = run(isolated, "python3 -c \"import socket; socket.getaddrinfo('pypi.org', 443)\"")

    for result in (to_host, to_internet, by_name):
        assert result.exit_code == 1
        assert "pong" not in result.output
        assert result.output.endswith(
            "(the sandbox has no network: set sandbox_network = bridge to allow it)\n"
        )
    assert "Network is unreachable" in to_host.output
    # The same connection from a sandbox with network = bridge works: the block is the sandbox's.
    bridged = make_sandbox(network="bridge")
    assert run(bridged, CONNECT.format(host=host, port=port)).output == "pong\n"


FORK_BOMB = """python3 -c '
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print("forked", n, "then:", e, flush=True)
time.sleep(60)
'"""


@docker_test
def test_fork_bomb_hits_the_pids_limit_and_is_stopped(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(pids_limit=64)

    result = run(sandbox, FORK_BOMB, timeout=5)

    assert result.timed_out
    assert result.exit_code is None
    forked = result.output.splitlines()[0].split()
    assert forked[0] == "forked" and int(forked[1]) < 64
    assert "Resource temporarily unavailable" in result.output
    assert result.output.endswith(
        "(the sandbox allows at most 64 processes; "
        "that limit, sandbox_pids_limit, may be what stopped this command)\n"
    )
    # Every forked child is gone and the sandbox still runs commands.
    after = run(sandbox, "echo alive; ps -eo args")
    assert after.output.startswith("alive\n")
    assert "python3" not in after.output


@docker_test
def test_memory_hog_is_killed_and_the_sandbox_survives(make_sandbox: MakeSandbox) -> None:
    sandbox = make_sandbox(memory="128m")

    result = run(sandbox, "python3 -c \"b = b'x' * (256 * 2**20); print('survived')\"")

    assert result.exit_code == 137
    assert "survived" not in result.output
    assert result.output.endswith(
        "(exit code 137: the process was killed, most likely for going over the "
        "sandbox memory limit of 128m; sandbox_memory raises it)\n"
    )
    assert run(sandbox, "echo alive").output == "alive\n"


@docker_test
def test_each_session_gets_its_own_container(make_sandbox: MakeSandbox, docker_client: Any) -> None:
    first, second = make_sandbox(), make_sandbox()

    run(first, "echo first > /tmp/mine")
    run(second, "true")

    one, two = container_of(docker_client, first), container_of(docker_client, second)
    assert one.id != two.id
    assert one.status == two.status == "running"  # making the second did not reap the first
    assert one.labels["co.session"] == first.session_id
    assert two.labels["co.session"] == second.session_id
    assert run(second, "cat /tmp/mine").exit_code == 1
    assert run(first, "cat /tmp/mine").output == "first\n"


ORPHAN_MAKER = """
import asyncio, sys, time
from pathlib import Path
from co_kernel.sandbox import DockerSandbox
sandbox = DockerSandbox(image=sys.argv[1], workspace=Path(sys.argv[2]), session_id=sys.argv[3],
                        kernel_id="doomed")
asyncio.run(sandbox.run("true", timeout=30))
print(sandbox.container_name, flush=True)
time.sleep(60)
"""


@docker_test
def test_container_of_a_killed_kernel_is_reaped_by_the_next(
    make_sandbox: MakeSandbox, docker_client: Any, workspace: Path
) -> None:
    doomed = subprocess.Popen(
        [
            sys.executable,
            "-c",
            ORPHAN_MAKER,
            TEST_IMAGE,
            str(workspace),
            f"orphan{uuid.uuid4().hex}",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert doomed.stdout is not None
    with doomed.stdout:
        name = doomed.stdout.readline().strip()
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait()
    assert docker_client.containers.get(name).status == "running"

    run(make_sandbox(), "true")

    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(name)


@docker_test
def test_a_dead_kernels_container_of_another_user_is_left_alone(
    make_sandbox: MakeSandbox, docker_client: Any
) -> None:
    """Under JupyterHub every user's kernels share one engine: a kernel reaps only its own
    user's leftovers (``co.uid``), never another user's, even one whose kernel is gone."""
    sandbox = make_sandbox()
    run(sandbox, "true")
    mine = container_of(docker_client, sandbox).labels
    assert mine["co.uid"] == str(os.getuid())
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid whose process is gone, as the other user's crashed kernel's
    other_uid = str(os.getuid() + 4242)
    labels = {**mine, "co.pid": str(gone.pid), "co.uid": other_uid, "co.user": "someone-else"}
    labels["co.session"] = f"other{uuid.uuid4().hex}"
    theirs = docker_client.containers.run(
        TEST_IMAGE, ["sleep", "infinity"], detach=True, labels=labels, init=True
    )
    try:
        run(make_sandbox(), "true")  # a new sandbox reaps its user's orphans first

        theirs.reload()
        assert theirs.status == "running"
    finally:
        theirs.remove(force=True)


@docker_test
def test_containers_removed_while_a_kernel_reaps_do_not_stop_it(
    make_sandbox: MakeSandbox, docker_client: Any
) -> None:
    """Kernels start and stop side by side on one engine: a container another kernel
    removes between the reaper's listing and its look at each one is gone, not an error
    (it was 'Could not create the sandbox container: No such container')."""
    labels = {
        "co.kernel": "1",
        "co.uid": str(os.getuid()),
        "co.host": "another-host",  # never reaped here: only listed, then removed by its owner
    }
    stop = threading.Event()
    churned: list[int] = []

    def churn() -> None:
        while not stop.is_set():
            c = docker_client.containers.create(TEST_IMAGE, ["true"], labels=labels)
            c.remove(force=True)
            churned.append(1)

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(12):
            sandbox = make_sandbox()
            assert run(sandbox, "echo up").output == "up\n"
            asyncio.run(sandbox.close())
    finally:
        stop.set()
        thread.join(timeout=60)
    assert len(churned) > 12


@docker_test
def test_close_removes_the_container_and_is_idempotent(
    make_sandbox: MakeSandbox, docker_client: Any
) -> None:
    sandbox = make_sandbox()
    run(sandbox, "true")
    assert container_of(docker_client, sandbox).status == "running"

    asyncio.run(sandbox.close())
    asyncio.run(sandbox.close())

    with pytest.raises(docker.errors.NotFound):
        container_of(docker_client, sandbox)
    asyncio.run(make_sandbox().close())  # never used: nothing to remove


@docker_test
def test_a_removed_container_is_replaced(make_sandbox: MakeSandbox, docker_client: Any) -> None:
    statuses: list[str] = []
    sandbox = make_sandbox(on_status=statuses.append)
    run(sandbox, "echo before > /tmp/state")
    container_of(docker_client, sandbox).remove(force=True)

    result = run(sandbox, "cat /tmp/state 2>/dev/null; echo after")

    assert result.output == "after\n"
    assert container_of(docker_client, sandbox).status == "running"
    assert statuses == ["The sandbox container is gone; creating a new one…"]


@docker_test
def test_describe_reports_without_creating_anything(
    make_sandbox: MakeSandbox, docker_client: Any
) -> None:
    sandbox = make_sandbox(network="bridge", memory="512m")

    before = sandbox.describe()

    assert before["backend"] == "docker"
    assert before["engine_reachable"] is True
    assert before["image"] == TEST_IMAGE
    assert before["image_present"] is True
    assert before["container"] == {
        "name": sandbox.container_name,
        "id": None,
        "status": "not created",
        "running": False,
    }
    assert before["network"] == "bridge"
    assert before["limits"] == {"memory": "512m", "cpus": 1.0, "pids": 256, "max_timeout": 600}
    with pytest.raises(docker.errors.NotFound):
        container_of(docker_client, sandbox)
    run(sandbox, "true")
    after = sandbox.describe()["container"]
    assert isinstance(after, dict)
    assert after["running"] is True
    assert after["id"] == container_of(docker_client, sandbox).short_id


@docker_test
def test_create_sandbox_is_cheap_and_lazy(docker_client: Any, workspace: Path) -> None:
    session = f"lazy{uuid.uuid4().hex}"
    sandbox = create_sandbox(
        mode="auto", image=TEST_IMAGE, workspace=workspace, session_id=session, kernel_id="k"
    )
    assert isinstance(sandbox, DockerSandbox)
    assert isinstance(sandbox, SandboxProtocol)
    mine = {"label": f"co.session={session}"}
    assert own_containers(docker_client, mine) == []
    try:
        assert run(sandbox, "echo hi").output == "hi\n"
        [container] = own_containers(docker_client, mine)
        assert container.status == "running"
    finally:
        asyncio.run(sandbox.close())


@docker_test
def test_missing_image_that_cannot_be_pulled(make_sandbox: MakeSandbox) -> None:
    statuses: list[str] = []
    image = f"co-sandbox-test:missing-{uuid.uuid4().hex[:8]}"
    sandbox = make_sandbox(image=image, on_status=statuses.append)

    with pytest.raises(SandboxUnavailable) as raised:
        run(sandbox, "true")

    message = str(raised.value)
    assert f"The sandbox image {image} is not present and pulling it failed" in message
    assert "sandbox_image" in message
    assert "scripts/build-sandbox-image.sh" in message
    assert statuses[0] == f"Pulling {image}…"


ENGINE_DOWN = """
import asyncio, json
from pathlib import Path
from co_kernel.sandbox import SandboxUnavailable, create_sandbox
report = {}
for mode in ("docker", "auto"):
    sandbox = create_sandbox(mode=mode, image="python:3.12-slim", workspace=Path("."),
                             session_id="down", kernel_id="k")
    try:
        asyncio.run(sandbox.run("true", timeout=5))
    except SandboxUnavailable as e:
        report[mode] = str(e)
report["describe"] = sandbox.describe()["engine_reachable"]
print(json.dumps(report))
"""


def test_engine_down_says_how_to_fix_it(tmp_path: Path) -> None:
    env = dict(os.environ, DOCKER_HOST=f"unix://{tmp_path}/no-docker.sock")
    done = subprocess.run(
        [sys.executable, "-c", ENGINE_DOWN], env=env, capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout)
    for mode in ("docker", "auto"):
        assert report[mode].startswith("Docker is not reachable")
        assert "sudo systemctl start docker" in report[mode]
        assert "set sandbox = subprocess in your own settings" in report[mode]
        assert "a project file cannot" in report[mode] and "CO_SANDBOX=subprocess" in report[mode]
    assert "never falls back" in report["auto"]
    assert report["describe"] is False


def test_create_sandbox_rejects_bad_settings(tmp_path: Path) -> None:
    common: dict[str, Any] = {
        "image": TEST_IMAGE,
        "workspace": tmp_path,
        "session_id": "s",
        "kernel_id": "k",
    }
    with pytest.raises(ValueError, match="set sandbox to one of docker, subprocess, auto"):
        create_sandbox(mode="podman", **common)
    with pytest.raises(ValueError, match="sandbox_network must be one of none, bridge"):
        create_sandbox(mode="docker", network="host", **common)


@docker_test
def test_container_is_removed_when_the_kill_cannot_run(
    make_sandbox: MakeSandbox, docker_client: Any
) -> None:
    sandbox = make_sandbox()
    run(sandbox, "true")
    first = container_of(docker_client, sandbox)

    async def scenario() -> CommandResult:
        # Room to see the command start and pause the container on a loaded machine: a
        # timeout that fired first killed the command through a container not yet paused.
        task = asyncio.create_task(sandbox.run("sleep 307", timeout=10))
        await running(first, "sleep 307")
        # A paused container refuses every exec, including the one that kills.
        await asyncio.to_thread(first.pause)
        return await task

    result = asyncio.run(scenario())

    assert result.timed_out
    assert (
        "[the sandbox container was removed to stop it; the next command gets a new one]"
        in result.output
    )
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(first.id)
    assert run(sandbox, "echo fresh").output == "fresh\n"
    assert container_of(docker_client, sandbox).id != first.id
