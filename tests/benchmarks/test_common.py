"""The benchmarks' shared environment: processes they start import this checkout."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _common() -> ModuleType:
    # benchmarks/ is a folder of scripts, not a package: load its shared module by path.
    spec = importlib.util.spec_from_file_location(
        "_bench_common", REPO / "benchmarks" / "_common.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _imported_from(env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "import co_kernel, sys; print(co_kernel.__file__)"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def test_a_kernel_started_in_another_folder_imports_this_checkout(tmp_path: Path) -> None:
    common = _common()
    # As the run commands say: `PYTHONPATH=. python benchmarks/...` from the repository.
    ours = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": "."}
    env = common.kernel_env(tmp_path / "home", "http://127.0.0.1:9/v1", base=ours)
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(REPO)
    assert all(Path(p).is_absolute() for p in env["PYTHONPATH"].split(os.pathsep))
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    assert _imported_from(env, elsewhere) == str(REPO / "co_kernel" / "__init__.py")
    assert env["CO_HOME"] == str(tmp_path / "home")


def test_the_helper_keeps_other_entries_once_and_absolute(tmp_path: Path) -> None:
    common = _common()
    extra = tmp_path / "lib"
    env = common.with_repo_on_pythonpath(
        {"PYTHONPATH": os.pathsep.join([str(extra), str(REPO), ""]), "X": "1"}
    )
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO), str(extra)]
    assert env["X"] == "1"
