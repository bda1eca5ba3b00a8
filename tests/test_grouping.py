"""How the suite spreads over xdist workers (conftest.py at the checkout's root).

The tests of a module that share a module-scoped fixture (a JupyterLab server, a hub, a
set of kernels) must run on one worker, or each worker they reach sets it up again. With
pytest 9.2 and xdist 3.8 that grouping silently stopped (pytest-dev/pytest-xdist#1386) and the
suite paid for it in every run, with nothing failing; this test fails instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SHARED = """
import os
import pytest

@pytest.fixture(scope="module")
def expensive():
    with open("setups.txt", "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")

@pytest.mark.parametrize("n", range(8))
def test_shared(expensive, n):
    with open("shared.txt", "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""

FREE = """
import os
import time
import pytest

@pytest.mark.parametrize("n", range(8))
def test_free(n):
    time.sleep(0.2)
    with open("free.txt", "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_a_module_fixtures_tests_share_one_worker_and_the_rest_spread(tmp_path: Path) -> None:
    shutil.copy(REPO / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_shared.py").write_text(SHARED)
    (tmp_path / "test_free.py").write_text(FREE)
    # Only xdist of the installed plugins: loading them all (nbval, hypothesis...) cost
    # the three processes about 17 s of CPU, and the grouping depends on none of them.
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist",
         "-n", "2", "--dist", "loadgroup", "test_shared.py", "test_free.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "16 passed" in run.stdout, run.stdout[-3000:]
    workers = {
        name: (tmp_path / f"{name}.txt").read_text().split()
        for name in ("setups", "shared", "free")
    }
    assert len(workers["shared"]) == 8
    assert len(set(workers["shared"])) == 1, "the module's tests were spread over workers"
    assert workers["setups"] == workers["shared"][:1], "the module fixture was set up once"
    assert len(set(workers["free"])) == 2, "tests without a shared fixture still spread"
