"""`pip install co-kernel` alone registers the kernel: the wheel carries the kernelspec."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from co_kernel.cli import kernelspec_dict

from ..labextension.test_build import _build_wheel, _no_node_env, _run
from ..support.lab_server import REPO

COMMITTED = REPO / "jupyter-data" / "kernels" / "co" / "kernel.json"


def test_committed_kernel_json_is_what_the_app_writes() -> None:
    assert json.loads(COMMITTED.read_text()) == kernelspec_dict("python"), (
        "jupyter-data/kernels/co/kernel.json is out of date with co_kernel/cli/_app.py: "
        "regenerate it from kernelspec_dict('python')"
    )


@pytest.mark.slow
def test_wheel_installed_in_a_fresh_venv_lists_the_co_kernelspec(tmp_path: Path) -> None:
    env = _no_node_env()
    wheel = _build_wheel(REPO, tmp_path / "dist", env)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], env)
    # The fresh venv has no pip: this one installs into its prefix, the way its own would.
    _run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--ignore-installed", "-q",
         "--prefix", str(venv), str(wheel)],
        env,
    )  # fmt: skip
    spec_dir = venv / "share" / "jupyter" / "kernels" / "co"
    assert json.loads((spec_dir / "kernel.json").read_text()) == kernelspec_dict("python")
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (spec_dir / logo).read_bytes() == (REPO / "co_kernel/resources" / logo).read_bytes()

    # Jupyter with that venv's data dir on its path finds the kernelspec there (this
    # checkout's venv has one too: the venv's comes first and is the one listed).
    listing = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter"), "kernelspec", "list", "--json"],
        env={**env, "JUPYTER_PATH": str(venv / "share" / "jupyter")},
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    co = json.loads(listing.stdout)["kernelspecs"]["co"]
    assert co["resource_dir"] == str(spec_dir)
    assert co["spec"]["display_name"] == "Co"
