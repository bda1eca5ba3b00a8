"""Start Co kernels for the tests by forking one process that has already imported them.

Each test kernel would otherwise spend about 1.8 s of CPU importing ipykernel, pydantic-ai
and Co before it answers: the largest share of the suite's CPU on a 2-core machine. A
fork server (one per pytest process) imports all that once, single-threaded, and forks a
child per kernel. The child is a real kernel process: it gets the launch's environment,
working directory and its own session (process group), then runs ``python -m co_kernel``'s
``__main__`` and exits through the interpreter's normal shutdown (atexit, threads).

What it changes, and so which tests must not use it (``CoKernel(..., fork=False)``): the
child's warm-up finds its modules imported already, and its parent is the fork server,
not the test process. Tests of start-up itself launch kernels with a fresh interpreter.

The test side talks to the server over a pipe, one JSON line per request:
``spawn`` (argv, env, cwd) → pid; ``poll`` pid → exit code or null. ``ForkedProcess``
wraps that in the part of ``subprocess.Popen`` that jupyter_client's ``LocalProvisioner``
uses, so the provisioner's signalling, killing and waiting are its own, unchanged.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

REPO = Path(__file__).resolve().parents[1]
KERNEL_MODULE = "co_kernel"

# What a Co kernel imports by its first answer besides the modules of Co's kernel side
# (all of which the server imports) and the kernel's warm-up (which it runs): measured in
# a kernel after a turn, a tool call and %status. Importing starts no thread: the server
# checks before each fork.
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
)
KERNEL_SIDE = tuple(
    f"co_kernel.{name}"
    for name in ("kernel", "status", "turn", "tools", "mcp", "memory", "magics", "sandbox", "store",
                 "telemetry", "frontend", "notebook", "testing")
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
    from co_kernel.kernel import _warm_imports

    _warm_imports()


def is_kernel_command(cmd: list[str]) -> bool:
    """``python -m co_kernel ...`` as the kernelspec starts it (any python path)."""
    return len(cmd) >= 3 and cmd[1:3] == ["-m", KERNEL_MODULE]


# --- the server process ------------------------------------------------------------------


def _serve(requests: Any, replies: Any) -> dict[str, Any] | None:
    """Answer requests until the pipe closes; in a forked child, return its launch."""
    exit_codes: dict[int, int] = {}
    for line in requests:
        request = json.loads(line)
        if request["op"] == "spawn":
            if threading.active_count() != 1:
                raise RuntimeError("the kernel fork server must not fork with threads running")
            pid = os.fork()
            if pid == 0:
                return request
            answer: dict[str, Any] = {"pid": pid}
        else:  # poll
            pid = request["pid"]
            if pid not in exit_codes:
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done, status = pid, 0
                if done:
                    exit_codes[pid] = os.waitstatus_to_exitcode(status)
            answer = {"code": exit_codes.get(pid)}
        replies.write(json.dumps(answer) + "\n")
        replies.flush()
    return None


def _become_kernel(launch: dict[str, Any], request_fd: int, reply_fd: int) -> None:
    """In the forked child: take on the launch's process state, then run the kernel."""
    os.setsid()  # as Popen(start_new_session=True): interrupts go to the kernel's group
    os.close(request_fd)
    os.close(reply_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # Dispositions as a fresh interpreter has them (SIGPIPE stays ignored, as CPython sets it).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(launch["cwd"])
    os.environ.clear()
    os.environ.update(launch["env"])
    # What jupyter_client's launcher tells a kernel: its parent, which it polls and
    # outlives by no more than a moment (here the fork server, which ends with the tests).
    os.environ["JPY_PARENT_PID"] = str(os.getppid())
    # `python -m` puts the working directory first on the path; PYTHONPATH comes next.
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [launch["cwd"], *extra, *(p for p in sys.path[1:] if p not in extra)]
    # IPKernelApp read JPY_PARENT_PID when the server imported it: say it on the command line.
    sys.argv = [
        launch["argv"][0],
        *launch["argv"][3:],
        f"--IPKernelApp.parent_handle={os.getppid()}",
    ]
    import runpy

    try:
        runpy.run_module(KERNEL_MODULE, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
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
    import atexit

    threading._shutdown()  # type: ignore[attr-defined]  # non-daemon threads, as at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main() -> None:
    _preload()
    # What the server imported is shared with every child, page by page, until written:
    # frozen, the collector never scans it (scanning writes to each object's header),
    # so a child's collections neither copy those pages nor spend time on them.
    gc.collect()
    gc.freeze()
    request_fd, reply_fd = int(sys.argv[1]), int(sys.argv[2])
    with (
        os.fdopen(request_fd, "r", closefd=False) as requests,
        os.fdopen(reply_fd, "w", closefd=False) as replies,
    ):
        launch = _serve(requests, replies)
    if launch is not None:
        _become_kernel(launch, request_fd, reply_fd)


# --- the test side -------------------------------------------------------------------------


class ForkServer:
    """The fork server of this test process, started on first use."""

    _instance: ForkServer | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        to_server_r, self._to_server = os.pipe()
        self._from_server, from_server_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # as the kernelspec sets it
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.kernel_forkserver", str(to_server_r), str(from_server_w)],
            pass_fds=(to_server_r, from_server_w),
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        os.close(to_server_r)
        os.close(from_server_w)
        self._writer = os.fdopen(self._to_server, "w")
        self._reader = os.fdopen(self._from_server, "r")
        self._lock = threading.Lock()
        atexit.register(self.close)

    @classmethod
    def shared(cls) -> ForkServer:
        with cls._instance_lock:
            if cls._instance is None or cls._instance._process.poll() is not None:
                cls._instance = cls()
            return cls._instance

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


class ForkedProcess:
    """A kernel forked by the server, with the ``Popen`` surface ``LocalProvisioner`` uses."""

    stdin = stdout = stderr = None

    def __init__(self, server: ForkServer, argv: list[str], env: dict[str, str], cwd: str) -> None:
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
        if not is_kernel_command(cmd):
            return await super().launch_kernel(cmd, **kwargs)
        env = kwargs.get("env") or dict(os.environ)
        cwd = str(kwargs.get("cwd") or os.getcwd())
        self.process = ForkedProcess(ForkServer.shared(), cmd, env, cwd)
        self.pid = self.pgid = self.process.pid
        self.cwd = cwd
        return self.connection_info


if __name__ == "__main__":
    main()
