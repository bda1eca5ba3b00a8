"""Co under a real JupyterHub with two Linux users.

One hub on 127.0.0.1 (PAM login, LocalProcessSpawner, configurable-http-proxy) and two
users made for the test, each with their own scripted model (their own settings file).
Through the hub's proxy each user starts Co kernels, approves a turn and runs ``!`` cells
in a Docker sandbox at the same time as the other. The checks are the other user's
view: files they cannot read, an activity panel and ``co-kernel logs`` that show only
their own, sandbox containers that the other's kernels leave alone.
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import pytest
import requests

from co_kernel.replay import ScriptedModelServer

from ..sandbox.conftest import own_containers
from ..support.kernel_harness import WIDGET_VIEW, CellResult, WidgetClicker
from ..support.net import free_port
from ..support.scripted import shell
from .jupyterhub import (
    SANDBOX_IMAGE,
    HubLogin,
    LinuxUser,
    linux_users,
    log_in,
    running_hub,
    single_user_env,
)
from .server_kernel import ServerKernel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.docker,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("useradd") is None,
        reason="makes Linux users for the hub: needs root and useradd",
    ),
]

DATA = Path(".local/share/co")
"""Co's data directory under a home (platformdirs' user data dir; no CO_HOME)."""


def script_for(user: LinuxUser) -> list[dict[str, Any]]:
    """A turn with two approvals: a memory, then a command that runs in the sandbox."""
    return [
        {"tool_calls": [{"name": "save_memory", "arguments": {"text": f"{user.name} likes tea"}}]},
        {
            "expect": {"tool_result_contains": "Saved memory"},
            "tool_calls": [shell(f"echo made-by-{user.name} > made.txt && id -u")],
        },
        {"expect": {"tool_result_contains": str(user.uid)}, "text": f"Done for {user.name}."},
    ]


@dataclass
class Person:
    """A test user, logged in, with their model and their kernels."""

    user: LinuxUser
    model: ScriptedModelServer
    login: HubLogin | None = None
    kernels: list[ServerKernel] = field(default_factory=list)
    cells: dict[str, CellResult] = field(default_factory=dict)
    container: dict[str, Any] = field(default_factory=dict)
    """The sandbox container of the user's first kernel after both turns: id, status, labels."""

    @property
    def work(self) -> Path:
        return self.user.home / "work"

    def kernel(self, notebook: str) -> ServerKernel:
        assert self.login is not None
        kernel = ServerKernel(self.login.server_url, self.login.headers(), f"work/{notebook}")
        self.kernels.append(kernel)
        return kernel


@dataclass
class World:
    a: Person
    b: Person
    engine: Any
    python: Path
    """The users' environment's Python."""
    a_before_b: dict[str, str]
    """A's container (id, status) before B's kernel made its own."""


def containers_of(engine: Any, user: LinuxUser) -> list[Any]:
    return own_containers(engine, {"label": f"co.user={user.name}"})


def write_settings(person: Person) -> None:
    """The user's own ~/.config/co/settings.json names their model (docs/deploying.md, 2)."""
    user = person.user
    settings = {"model": "compat:scripted", "base_url": person.model.base_url}
    done = user.run(
        ["sh", "-c", 'mkdir -p "$HOME/.config/co" work && cat > "$HOME/.config/co/settings.json"'],
        input=json.dumps(settings),
    )
    assert done.returncode == 0, done.stderr


def approve_when_both_wait(both_waiting: threading.Barrier) -> Any:
    """Approve each card; the first only once the other user's first card is shown too."""
    clicker = WidgetClicker(["Approve", "Approve"])

    def on_message(kernel: ServerKernel, msg: dict[str, Any]) -> None:
        is_card = msg["msg_type"] == "display_data" and WIDGET_VIEW in msg["content"]["data"]
        if is_card and clicker.cards == 0:
            both_waiting.wait(timeout=120)
        clicker(kernel, msg)

    return on_message


def at_once(*jobs: Any) -> None:
    """Run the jobs on threads started together; re-raise the first failure."""
    errors: list[BaseException] = []

    def run(job: Any) -> None:
        try:
            job()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    if errors:
        raise errors[0]


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    socket = Path("/var/run/docker.sock")
    if not socket.is_socket() or socket.stat().st_gid == 0:
        pytest.skip("the users' kernels need the engine's socket through a group (docker)")
    engine = docker.from_env(timeout=30)
    # Homes the users can reach: pytest's tmp folders are root's own (0700).
    base = Path(tempfile.mkdtemp(prefix="co-hub-"))
    base.chmod(0o711)
    homes = base / "home"
    homes.mkdir(mode=0o711)
    homes.chmod(0o711)
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, base, ignore_errors=True)
        python = single_user_env(base / "env")
        if python is None:
            pytest.skip(
                f"no system python{sys.version_info.major}.{sys.version_info.minor} for the users' environment"
            )
        stack.callback(engine.close)
        # docs/deploying.md (LocalProcessSpawner): the users reach the engine through the
        # socket's group.
        engine_group = grp.getgrgid(socket.stat().st_gid).gr_name
        users = stack.enter_context(linux_users(homes, 2, groups=[engine_group]))
        a, b = (Person(u, stack.enter_context(ScriptedModelServer(script_for(u)))) for u in users)
        for person in (a, b):
            write_settings(person)
        environment = {"CO_SANDBOX": "docker", "CO_SANDBOX_IMAGE": SANDBOX_IMAGE}
        hub = stack.enter_context(running_hub(base / "hub", users, python, environment))

        @stack.callback
        def remove_containers() -> None:
            for user in users:
                # Not inspected: the kernels just closed are removing theirs meanwhile.
                mine = {"label": f"co.user={user.name}"}
                for c in engine.containers.list(all=True, sparse=True, filters=mine):
                    with contextlib.suppress(docker.errors.DockerException):
                        c.remove(force=True, v=True)

        @stack.callback
        def close_kernels() -> None:
            for person in (a, b):
                for kernel in person.kernels:
                    with contextlib.suppress(Exception):
                        kernel.close()

        for person in (a, b):
            person.login = log_in(hub, person.user)
        at_once(*(p.login.start_server for p in (a, b) if p.login))

        # A's sandbox first; then B's kernel starts and makes its own.
        ka = a.kernel("a.ipynb")
        a.cells["first"] = ka.execute("!id -u")
        [mine] = containers_of(engine, a.user)
        before = {"id": mine.id, "status": mine.status}
        kb = b.kernel("b.ipynb")
        b.cells["first"] = kb.execute("!id -u")

        # Both at once: a turn that waits for two approvals (both waiting together), then
        # a `!` cell, on each user's kernel.
        both_waiting = threading.Barrier(2)
        both_shell = threading.Barrier(2)

        def turn_and_shell(person: Person, kernel: ServerKernel) -> None:
            person.cells["turn"] = kernel.execute(
                "note that I like tea, then make made.txt",
                on_message=approve_when_both_wait(both_waiting),
                timeout=180,
            )
            both_shell.wait(timeout=120)
            person.cells["shell"] = kernel.execute("!cat made.txt; id -u", timeout=120)

        at_once(lambda: turn_and_shell(a, ka), lambda: turn_and_shell(b, kb))
        for person in (a, b):
            # The tests read this, not the engine: the last one makes and reaps containers.
            [container] = containers_of(engine, person.user)
            person.container = {
                "id": container.id,
                "status": container.status,
                "labels": container.labels,
            }
        yield World(a, b, engine, python, before)


def test_both_users_approve_a_turn_and_run_a_shell_cell_at_the_same_time(world: World) -> None:
    for person in (world.a, world.b):
        name, uid = person.user.name, person.user.uid
        turn, cell = person.cells["turn"], person.cells["shell"]
        assert turn.status == "ok", turn.text()
        assert f"Done for {name}." in turn.markdown()
        # The sandbox ran the approved command as the user, in the user's own workspace.
        made = person.work / "made.txt"
        assert made.read_text() == f"made-by-{name}\n"
        assert made.stat().st_uid == uid
        assert cell.status == "ok"
        assert cell.stdout == f"made-by-{name}\n{uid}\n"
        assert person.cells["first"].stdout == f"{uid}\n"
        assert person.model.errors == []


def test_sandbox_containers_carry_their_user_and_one_start_leaves_the_others_alone(
    world: World,
) -> None:
    # A's container lived through B's kernel start and both turns: same id, running.
    assert world.a_before_b["status"] == "running"
    assert world.a.container["id"] == world.a_before_b["id"]
    assert world.a.container["status"] == world.b.container["status"] == "running"
    for person in (world.a, world.b):
        labels = person.container["labels"]
        assert labels["co.uid"] == str(person.user.uid)
        assert labels["co.user"] == person.user.name


def test_each_users_data_is_in_their_home_and_closed_to_the_other(world: World) -> None:
    for person, other in ((world.a, world.b), (world.b, world.a)):
        data = person.user.home / DATA
        names = {p.name for p in data.iterdir()}
        assert {"sessions.db", "memory.db", "telemetry.db"} <= names, names
        for path in (data, *data.iterdir()):
            st = path.stat()
            assert st.st_uid == person.user.uid, path
            assert stat.S_IMODE(st.st_mode) & 0o077 == 0, f"{path}: {oct(st.st_mode)}"
        for path in (data, data / "sessions.db", data / "memory.db", data / "telemetry.db"):
            done = other.user.run(["cat", str(path)])
            assert done.returncode != 0 and "Permission denied" in done.stderr, path
        # Each user's stores hold their own: their workspace, their memory, not the other's.
        workspaces = {r[0] for r in query(data / "sessions.db", "SELECT workspace FROM sessions")}
        assert workspaces == {str(person.work)}
        memories = [r[0] for r in query(data / "memory.db", "SELECT text FROM memories")]
        assert memories == [f"{person.user.name} likes tea"]
        targets = {r[0] for r in query(data / "telemetry.db", "SELECT target FROM agent_actions")}
        assert targets and other.user.name not in repr(targets)


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return conn.execute(sql).fetchall()


def first_session(person: Person) -> str:
    """The Co session id of the user's first kernel, from its container's labels."""
    return str(person.container["labels"]["co.session"])


def stored_sessions(person: Person) -> set[str]:
    """Every Co session in the user's session store (the last test adds kernels)."""
    return {r[0] for r in query(person.user.home / DATA / "sessions.db", "SELECT id FROM sessions")}


def only_theirs(seen: set[str], person: Person, other: Person) -> None:
    assert first_session(person) in seen
    assert seen <= stored_sessions(person)
    assert not seen & stored_sessions(other)


def test_activity_panel_and_logs_of_one_user_show_nothing_of_the_other(world: World) -> None:
    for person, other in ((world.a, world.b), (world.b, world.a)):
        assert person.login is not None and other.login is not None
        reply = person.login.server_api("GET", "co-kernel/activity")
        assert reply.status_code == 200, reply.text
        activity = reply.json()
        assert activity["db"] == str(person.user.home / DATA / "telemetry.db")
        only_theirs({r["session_id"] for r in activity["rows"]}, person, other)
        assert {r["tool"] for r in activity["rows"]} == {"save_memory", "run_shell_command"}
        assert other.user.name not in json.dumps(activity)
        # One user's token opens nothing of the other's server.
        denied = requests.get(
            other.login.server_url + "co-kernel/activity",
            headers=person.login.headers(),
            timeout=30,
        )
        assert denied.status_code in (403, 404) or "/hub/login" in denied.url

    # `co-kernel logs` (Datasette on the telemetry database) run as B, by B.
    b = world.b.user
    port = free_port()
    proc = None
    try:
        proc = subprocess.Popen(
            [str(world.python), "-m", "co_kernel.cli", "logs", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **b.popen_kwargs(),
        )
        base = f"http://127.0.0.1:{port}/telemetry"
        deadline = time.monotonic() + 60
        while True:
            try:
                calls = requests.get(f"{base}/agent_actions.json?_shape=array", timeout=10)
                if calls.status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, "co-kernel logs did not answer"
            time.sleep(0.3)
        only_theirs({r["session_id"] for r in calls.json()}, world.b, world.a)
        spans = requests.get(f"{base}/spans.json?_shape=array&_size=max", timeout=10).json()
        only_theirs({s["session_id"] for s in spans if s["session_id"]}, world.b, world.a)
        assert world.a.user.name not in calls.text + json.dumps(spans)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)


def test_a_dead_kernels_container_is_reaped_by_its_own_user_only(world: World) -> None:
    a, b, engine = world.a, world.b, world.engine
    orphan = engine.containers.get(a.container["id"])
    # A's kernel dies without cleaning up (as in a crash): its container is left behind.
    os.kill(int(orphan.labels["co.pid"]), signal.SIGKILL)

    # B's new kernel makes a sandbox, which reaps B's own leftovers only.
    cell = b.kernel("b2.ipynb").execute("!true")
    assert cell.status == "ok", cell.text()
    orphan.reload()
    assert orphan.status == "running"

    # A's next kernel does clean it up.
    cell = a.kernel("a2.ipynb").execute("!true")
    assert cell.status == "ok", cell.text()
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(orphan.id)
