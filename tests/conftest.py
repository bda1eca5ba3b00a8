"""Shared fixtures: a scripted model server and real Co kernels pointed at it."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from co_kernel.replay import ScriptedModelServer

from .browser.jupyterlab import close_shared_browser
from .support.kernel_harness import CoKernel

# CI (CI=true) replays the same examples every run, so a submission is judged by its code,
# not by which inputs a run happened to draw; a developer's runs keep drawing new ones and
# find what is left (the shell-rule properties found two spellings that way).
# No deadline anywhere: a per-example time limit is a timing assertion, and these machines
# are noisy (a busy run once took 635 ms for a 20 ms example).
settings.register_profile("dev", deadline=None)
settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_configure(config: pytest.Config) -> None:
    # Run as a background job of a script (`... &`), this process ignores SIGINT, and so
    # would every program a test starts: a test stopping `co-kernel tail` with Ctrl+C would
    # wait out its timeout instead. The programs under test get Ctrl+C as from a terminal.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # A module's browser tests share one Chromium; the next module's tests may run asyncio.
    if nextitem is None or nextitem.path != item.path:
        close_shared_browser()


@pytest.fixture(scope="session", autouse=True)
def _isolated_co_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Code under test in this process never reads or writes the developer's own Co files
    (settings, sessions, memories, telemetry) nor the machine's managed settings; tests that
    need a home of their own set one."""
    with pytest.MonkeyPatch.context() as patch:
        home = tmp_path_factory.mktemp("co-home-of-the-test-run")
        patch.setenv("CO_HOME", str(home))
        # Nor a deployer's /etc/co/settings.json: a test that needs one writes its own.
        patch.setenv("CO_MANAGED_SETTINGS", str(home / "no-managed-settings.json"))
        yield


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([]) as server:
        yield server


@pytest.fixture
def co_home(tmp_path: Path) -> Path:
    home = tmp_path / "co-home"
    home.mkdir()
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def start_kernel(
    model_server: ScriptedModelServer, co_home: Path, workspace: Path
) -> Iterator[Callable[..., CoKernel]]:
    """Start Co kernels talking to the scripted server; all are shut down afterwards."""
    started: list[CoKernel] = []

    def start(
        env: dict[str, str] | None = None,
        *,
        cwd: Path | None = None,
        model: bool = True,
        wait_ready: bool = True,
        fork: bool = True,
        trusted: bool = True,
        log: Path | None = None,
    ) -> CoKernel:
        """``trusted``: the person trusts the workspace (``trusted_folders`` in their
        environment), so the ``.co/`` files a test writes there apply; trust's own tests
        pass False."""
        full = {"CO_HOME": str(co_home), "CO_SANDBOX": "subprocess"}
        if trusted:
            full["CO_TRUSTED_FOLDERS"] = json.dumps([str(cwd or workspace)])
        if model:
            full.update({"CO_MODEL": "compat:scripted", "CO_BASE_URL": model_server.base_url})
        full.update(env or {})
        kernel = CoKernel(full, cwd or workspace, wait_ready=wait_ready, fork=fork, log=log)
        started.append(kernel)
        return kernel

    yield start
    for kernel in started:
        kernel.shutdown()


@pytest.fixture
def kernel(start_kernel: Callable[..., CoKernel]) -> CoKernel:
    return start_kernel()
