"""Start Co kernels for the tests by forking one process that has already imported them.

Each test kernel would otherwise spend about 1.8 s of CPU importing ipykernel, pydantic-ai
and Co before it answers: the largest share of the suite's CPU on a 2-core machine. A
fork server (one per pytest process) imports all that once, single-threaded, and forks a
child per kernel. The child is a real kernel process: it gets the launch's environment,
working directory and its own session (process group), then runs ``python -P -m co_kernel``'s
``__main__``, then joins its threads and runs its atexit handlers as the interpreter's
exit does, but skips finalization (``_exit_without_finalizing``).

What it changes, and so which tests must not use it (``CoKernel(..., fork=False)``): the
child's warm-up finds its modules imported already, and its parent is the fork server,
not the test process. Tests of start-up itself launch kernels with a fresh interpreter.

The test side talks to the server over a pipe, one JSON line per request:
``spawn`` (argv, env, cwd) → pid; ``poll`` pid → exit code or null. ``ForkedProcess``
wraps that in the part of ``subprocess.Popen`` that jupyter_client's ``LocalProvisioner``
uses, so the provisioner's signalling, killing and waiting are its own, unchanged.

Processes a test starts reach the same server through a UNIX socket named in their
environment: a Jupyter server, papermill, nbconvert, the notebook recorder and nbval. Their Co kernelspec names ``ForkingProvisioner`` (registered as a
jupyter_client provisioner by an entry point in a folder on their ``PYTHONPATH``), and
is otherwise the one that ships. ``jupyter console`` and the hub's users get the real
one: the console's kernel shares its terminal, and the users' kernels run as them.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from jupyter_client.provisioning import LocalProvisioner

REPO = Path(__file__).resolve().parents[2]
KERNEL_MODULE = "co_kernel"

# What a Co kernel imports by its first answer besides the modules of Co's kernel side
# (all of which the server imports) and the kernel's warm-up (which it runs): measured in
# a kernel after a turn, a tool call and %status, and in the kernels of a whole run.
# Importing starts no thread: the server checks before each fork.
PRELOAD = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.debugger",
    "IPython.core.debugger",
    "tornado.platform.asyncio",
    "docker",
    "requests",
    "jiter",
    "genai_prices.data",
    "openai.resources.chat.completions",
    "openai.lib.streaming.chat",
    # A kernel with MCP servers: the client Co imports on connecting (mcp/_servers.py), and
    # jsonschema, which the MCP SDK imports to check the first tool result (1.4 to 2.9 s
    # of CPU together for each such kernel otherwise, the more without rfc3987).
    "fastmcp.client.transports",
    "pydantic_ai.mcp",
    "jsonschema",
    # The MCP servers of the tests, which run here too (tests/support/fork_run.py).
    "mcp.server.mcpserver",
)
KERNEL_SIDE = tuple(
    f"co_kernel.{name}"
    for name in ("kernel", "status", "turn", "tools", "mcp", "memory", "magics", "sandbox", "store",
                 "telemetry", "frontend", "notebook", "replay")
)  # fmt: skip
"""The packages of Co's kernel side, every module of which the server imports."""
SKIPPED = ("__main__", "record_notebook")
"""Modules run as programs, not imported."""


def _preload() -> None:
    import importlib
    import pkgutil

    for name in (*PRELOAD, *KERNEL_SIDE):
        importlib.import_module(name)
    # Every module of the packages the kernel has loaded: what later turns, magics and
    # tools import on first use.
    packages = [m for name, m in list(sys.modules.items()) if name.startswith("co_kernel.")]
    for package in packages:
        for module in pkgutil.iter_modules(
            getattr(package, "__path__", []), f"{package.__name__}."
        ):
            if not module.name.endswith(SKIPPED):
                importlib.import_module(module.name)
    from co_kernel.kernel._kernel import _warm_imports

    _warm_imports()


def is_kernel_command(cmd: list[str]) -> bool:
    """``python -P -m co_kernel ...`` as the kernelspec starts it (any python path)."""
    return len(cmd) >= 4 and cmd[1:4] == ["-P", "-m", KERNEL_MODULE]


# --- the server process ------------------------------------------------------------------


class _Connection:
    """One client of the server: the owner's pipe pair, or a socket of another process.

    A socket's client sends its standard output and error with each spawn request
    (``SCM_RIGHTS``): the kernel writes where a kernel it started itself would, such as a
    Jupyter server's log or papermill's stderr.
    """

    def __init__(self, read_fd: int, write_fd: int, *, peer: socket.socket | None = None) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self.peer = peer
        self.buffer = b""
        self.fds: list[int] = []

    def lines(self) -> list[bytes] | None:
        """The complete request lines now readable; None once the peer has closed."""
        if self.peer is None:
            data = os.read(self.read_fd, 65536)
        else:
            data, fds, _, _ = socket.recv_fds(self.peer, 65536, 3)
            self.fds.extend(fds)
        if not data:
            return None
        self.buffer += data
        *complete, self.buffer = self.buffer.split(b"\n")
        return complete

    def take_fds(self) -> list[int]:
        fds, self.fds = self.fds, []
        return fds

    def reply(self, answer: dict[str, Any]) -> None:
        data = (json.dumps(answer) + "\n").encode()
        while data:
            data = data[os.write(self.write_fd, data) :]

    def close(self) -> None:
        if self.peer is not None:
            self.peer.close()  # through the socket object, which would close its fd again
        fds = self.fds if self.peer is not None else [self.read_fd, self.write_fd, *self.fds]
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _serve(owner: _Connection, listener: socket.socket) -> dict[str, Any] | None:
    """Answer requests until the owner's pipe closes; in a forked child, return its launch.

    The owner is the test process that started the server. Other processes of the same
    test run (a Jupyter server, nbval, papermill) reach it through ``listener``, a UNIX
    socket named in their environment (``SOCKET_ENV``), through ``ForkingProvisioner``.
    """
    exit_codes: dict[int, int] = {}
    connections = {owner.read_fd: owner}
    with selectors.DefaultSelector() as selector:
        selector.register(owner.read_fd, selectors.EVENT_READ)
        selector.register(listener, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is listener:
                    peer, _ = listener.accept()
                    fd = peer.fileno()
                    connections[fd] = _Connection(fd, fd, peer=peer)
                    selector.register(fd, selectors.EVENT_READ)
                    continue
                connection = connections[key.fd]
                try:
                    lines = connection.lines()
                except OSError:
                    lines = None
                if lines is None:
                    if connection is owner:
                        return None
                    selector.unregister(key.fd)
                    connections.pop(key.fd).close()
                    continue
                for line in lines:
                    request = json.loads(line)
                    if request["op"] == "spawn":
                        if threading.active_count() != 1:
                            raise RuntimeError(
                                "the kernel fork server must not fork with threads running"
                            )
                        stdio = connection.take_fds()
                        pid = os.fork()
                        if pid == 0:
                            selector.close()
                            listener.close()
                            for other in connections.values():
                                other.close()
                            return {**request, "stdio": stdio}
                        for fd in stdio:
                            os.close(fd)
                        answer: dict[str, Any] = {"pid": pid}
                    else:  # poll
                        _reap(exit_codes)
                        answer = {"code": exit_codes.get(request["pid"])}
                    connection.reply(answer)


def _reap(exit_codes: dict[int, int]) -> None:
    """Collect the exit codes of every child that has ended (none is left a zombie)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        exit_codes[pid] = os.waitstatus_to_exitcode(status)


def _take_on(launch: dict[str, Any], streams: tuple[int, ...]) -> None:
    """In the forked child: the process state of a fresh process started for ``launch``.

    A session of its own (as ``Popen(start_new_session=True)``: signals to the launcher's
    group are the launcher's to pass on), the launcher's file descriptors sent with the
    request on ``streams``, signal dispositions as a fresh interpreter has them (SIGPIPE
    stays ignored, as CPython sets it), and the launch's working directory and environment.
    """
    os.setsid()
    for target, fd in zip(streams, launch.get("stdio", []), strict=False):
        os.dup2(fd, target)
        os.close(fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(launch["cwd"])
    os.environ.clear()
    os.environ.update(launch["env"])


def _become_kernel(launch: dict[str, Any]) -> None:
    """In the forked child: take on the launch's process state, then run the kernel."""
    # The launching process's stdout and stderr, as Popen inherits them; no stdin.
    _take_on(launch, (1, 2))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # What jupyter_client's launcher tells a kernel: its parent, which it polls and
    # outlives by no more than a moment (here the fork server, which ends with the tests).
    os.environ["JPY_PARENT_PID"] = str(os.getppid())
    # As `python -P -m` makes it: PYTHONPATH first (its empty and relative parts resolved
    # against the working directory, as Python does), and no working directory of its own.
    # The server runs under -P too (sys.flags.safe_path, which IPython reads, is inherited).
    extra = [
        os.path.normpath(os.path.join(launch["cwd"], p))
        for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
    ]
    base = [p for p in sys.path if p not in _SERVER_PATH]
    sys.path[:] = [*dict.fromkeys(extra), *(p for p in base if p not in extra)]
    # IPKernelApp read JPY_PARENT_PID when the server imported it: say it on the command line.
    sys.argv = [
        launch["argv"][0],
        *launch["argv"][4:],
        f"--IPKernelApp.parent_handle={os.getppid()}",
    ]
    import runpy

    try:
        runpy.run_module(KERNEL_MODULE, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    _exit_without_finalizing(code)


def _become_program(launch: dict[str, Any]) -> None:
    """In the forked child: run a helper program of the tests (``tests/support/fork_run.py``).

    ``program`` is a script's path, or ``["-m", module]``; it gets the launcher's standard
    input, output and error, working directory and environment.
    """
    _take_on(launch, (0, 1, 2))
    import runpy

    program = launch["program"]
    try:
        if isinstance(program, list):  # -m module
            sys.argv = [program[1], *launch["argv"]]
            # What `python -m` puts first (the server, under -P, has no such entry).
            sys.path.insert(0, launch["cwd"])
            runpy.run_module(program[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = [program, *launch["argv"]]
            sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
            runpy.run_path(program, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    _exit_without_finalizing(code)


def _exit_code(exc: SystemExit) -> int:
    """The status the interpreter would exit with for ``exc`` (printing a message as it does)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _exit_without_finalizing(code: int) -> None:
    """End as the interpreter's exit does up to finalization: join the threads, run atexit.

    What it skips, tearing down every module and a last full collection, touches all of
    the server's inherited objects and so copies each page the child shares with the
    server: about 0.6 s of CPU per kernel, a third of a short kernel test's.
    """
    threading._shutdown()  # type: ignore[attr-defined]  # non-daemon threads, as at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


_SERVER_PATH: frozenset[str] = frozenset()
"""The entries of the server's own PYTHONPATH (this checkout), not a kernel's."""


def main() -> None:
    global _SERVER_PATH
    _SERVER_PATH = frozenset(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    _preload()
    # What the server imported is shared with every child, page by page, until written:
    # frozen, the collector never scans it (scanning writes to each object's header),
    # so a child's collections neither copy those pages nor spend time on them.
    gc.collect()
    gc.freeze()
    owner = _Connection(int(sys.argv[1]), int(sys.argv[2]))
    listener = socket.socket(fileno=int(sys.argv[3]))
    launch = _serve(owner, listener)
    if launch is not None:
        if "program" in launch:
            _become_program(launch)
        else:
            _become_kernel(launch)


# --- the test side -------------------------------------------------------------------------


SOCKET_ENV = "TEST_CO_FORK_SOCKET"
"""Names the server's socket in the environment of the processes a test starts."""
PROVISIONER = "co-test-fork"
"""The entry-point name of ``ForkingProvisioner`` (``jupyter_client.kernel_provisioners``)."""


class ForkServer:
    """The fork server of this test process, started on first use."""

    _instance: ForkServer | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        to_server_r, self._to_server = os.pipe()
        self._from_server, from_server_w = os.pipe()
        self.folder = Path(tempfile.mkdtemp(prefix="co-fork-server-"))
        self.socket_path = str(self.folder / "socket")
        # Bound and listening before the server has imported anything: a process that
        # connects early waits in the backlog instead of failing.
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.socket_path)
        listener.listen(64)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # as the kernelspec sets it
        argv = [str(to_server_r), str(from_server_w), str(listener.fileno())]
        self._process = subprocess.Popen(
            [sys.executable, "-P", "-m", "tests.support.kernel_forkserver", *argv],
            pass_fds=(to_server_r, from_server_w, listener.fileno()),
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        listener.close()
        os.close(to_server_r)
        os.close(from_server_w)
        self._writer = os.fdopen(self._to_server, "w")
        self._reader = os.fdopen(self._from_server, "r")
        self._lock = threading.Lock()
        self.entry_points = self._write_entry_point()
        atexit.register(self.close)

    @classmethod
    def shared(cls) -> ForkServer:
        with cls._instance_lock:
            if cls._instance is None or cls._instance._process.poll() is not None:
                cls._instance = cls()
            return cls._instance

    def _write_entry_point(self) -> Path:
        """A folder whose distribution registers ``ForkingProvisioner`` for jupyter_client."""
        folder = self.folder / "entry-points"
        dist = folder / "co_test_fork-0.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: co-test-fork\nVersion: 0\n")
        (dist / "entry_points.txt").write_text(
            "[jupyter_client.kernel_provisioners]\n"
            f"{PROVISIONER} = tests.support.kernel_forkserver:ForkingProvisioner\n"
        )
        return folder

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` for a process whose Co kernels (a kernelspec with ``PROVISIONER``) fork here."""
        path = [str(self.entry_points), str(REPO), env.get("PYTHONPATH", "")]
        return {
            **env,
            SOCKET_ENV: self.socket_path,
            "PYTHONPATH": os.pathsep.join(p for p in path if p),
        }

    def client_environment(self, env: dict[str, str]) -> dict[str, str]:
        """``environment(env)``, and a Co kernelspec (with ``PROVISIONER``) first on its path.

        For a client that looks the kernelspec up itself (papermill, nbconvert, the
        recorder): its kernels fork here, and it is otherwise the kernelspec that ships.
        """
        share = self.folder / "share" / "jupyter"
        if not (share / "kernels" / "co").exists():
            write_co_kernelspec(share, fork=True)
        path = [str(share), env.get("JUPYTER_PATH", "")]
        return {**self.environment(env), "JUPYTER_PATH": os.pathsep.join(p for p in path if p)}

    def request(self, **request: Any) -> dict[str, Any]:
        with self._lock:
            self._writer.write(json.dumps(request) + "\n")
            self._writer.flush()
            line = self._reader.readline()
        if not line:
            raise RuntimeError(f"the kernel fork server exited ({self._process.poll()})")
        return json.loads(line)

    def close(self) -> None:
        """Close the pipe: the server's loop ends and it exits (its kernels see it go)."""
        for stream in (self._writer, self._reader):
            with contextlib.suppress(OSError):
                stream.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


class ForkClient:
    """The test run's fork server as another process reaches it (a Jupyter server, nbval)."""

    _instances: ClassVar[dict[str, ForkClient]] = {}
    _instances_lock = threading.Lock()

    def __init__(self, path: str) -> None:
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.connect(path)
        self._reader = self._socket.makefile("r")
        self._lock = threading.Lock()
        atexit.register(self._socket.close)

    @classmethod
    def shared(cls, path: str) -> ForkClient:
        with cls._instances_lock:
            if path not in cls._instances:
                cls._instances[path] = cls(path)
            return cls._instances[path]

    def request(self, **request: Any) -> dict[str, Any]:
        data = (json.dumps(request) + "\n").encode()
        with self._lock:
            if request["op"] == "spawn":  # with this process's stdout and stderr
                sent = socket.send_fds(self._socket, [data], [1, 2])
                self._socket.sendall(data[sent:])
            else:
                self._socket.sendall(data)
            line = self._reader.readline()
        if not line:
            raise RuntimeError("the kernel fork server of the test run has gone")
        return json.loads(line)


def forking() -> bool:
    """Whether test kernels fork from a server (``CO_TEST_FORK=0`` starts each afresh)."""
    return os.environ.get("CO_TEST_FORK", "1") != "0"


def client_environment(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a client process whose Co kernels fork from this test process's server."""
    return ForkServer.shared().client_environment(env) if forking() else env


def python_command(*args: str) -> list[str]:
    """``python ARGS`` for a helper program of the tests (a script, or ``-m`` and a module),
    run as a child of this test process's fork server through ``tests/support/fork_run.py``."""
    if not forking():
        return [sys.executable, *args]
    launcher = str(REPO / "tests" / "support" / "fork_run.py")
    return [sys.executable, launcher, ForkServer.shared().socket_path, *args]


def write_co_kernelspec(share: Path, *, fork: bool) -> None:
    """The Co kernelspec in ``share``/kernels as `co-kernel install` writes it: kernel.json
    and the logos; with ``fork``, its kernels start through ``ForkingProvisioner``."""
    from co_kernel.cli import KERNEL_NAME, kernelspec_dict

    spec = kernelspec_dict()
    if fork:
        provisioner = {"kernel_provisioner": {"provisioner_name": PROVISIONER}}
        spec = {**spec, "metadata": {**spec.get("metadata", {}), **provisioner}}
    spec_dir = share / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=2))
    for logo in (REPO / "co_kernel" / "resources").iterdir():
        shutil.copy(logo, spec_dir / logo.name)


def _server_of_this_process() -> ForkServer | ForkClient | None:
    """This test process's own server; in a process it started, the run's, if named."""
    if ForkServer._instance is None and os.environ.get(SOCKET_ENV):
        return ForkClient.shared(os.environ[SOCKET_ENV])
    return ForkServer.shared() if forking() else None


class ForkedProcess:
    """A kernel forked by the server, with the ``Popen`` surface ``LocalProvisioner`` uses."""

    stdin = stdout = stderr = None

    def __init__(
        self, server: ForkServer | ForkClient, argv: list[str], env: dict[str, str], cwd: str
    ) -> None:
        self._server = server
        self.pid: int = server.request(op="spawn", argv=argv, env=env, cwd=cwd)["pid"]
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.request(op="poll", pid=self.pid)["code"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkingProvisioner(LocalProvisioner):  # type: ignore[misc]
    """``LocalProvisioner`` whose Co kernels come from the fork server."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        server = _server_of_this_process() if is_kernel_command(cmd) else None
        if server is None:
            return await super().launch_kernel(cmd, **kwargs)
        env = kwargs.get("env") or dict(os.environ)
        cwd = str(kwargs.get("cwd") or os.getcwd())
        self.process = ForkedProcess(server, cmd, env, cwd)
        self.pid = self.pgid = self.process.pid
        self.cwd = cwd
        return self.connection_info


if __name__ == "__main__":
    main()
