"""The prebuilt extension: current with its sources, in the wheel, enabled after install.

The wheel and editable builds run with a PATH that has no Node.js on it, the way a
user's machine may be: the committed build is all they need.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from ..support.lab_server import EXTENSION_NAME, LABEXTENSION, REPO

VENV_BIN = Path(sys.executable).parent


def _source_hash_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "source_hash", REPO / "labextension" / "source_hash.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_build_is_current_with_its_sources() -> None:
    hashing = _source_hash_module()
    recorded = hashing.STAMP.read_text().strip()
    assert hashing.source_hash() == recorded, (
        "co_kernel/labextension/ is older than labextension/ sources: run "
        "labextension/build.sh and commit co_kernel/labextension/ and its stamp"
    )


def test_source_hash_sees_a_change_in_the_typescript(tmp_path: Path) -> None:
    hashing = _source_hash_module()
    copy = tmp_path / "labextension"
    for name in hashing.INPUTS:
        source = REPO / "labextension" / name
        if source.is_dir():
            subprocess.run(["cp", "-r", str(source), str(copy / name)], check=True)
        else:
            copy.mkdir(exist_ok=True)
            (copy / name).write_bytes(source.read_bytes())
    assert hashing.source_hash(copy) == hashing.source_hash()
    card = copy / "src" / "cards" / "toolcard.ts"
    card.write_text(card.read_text() + "\n// changed\n")
    assert hashing.source_hash(copy) != hashing.source_hash()


def test_build_declares_both_extensions_and_the_shortcuts() -> None:
    package = json.loads((LABEXTENSION / "package.json").read_text())
    assert package["name"] == EXTENSION_NAME
    build = package["jupyterlab"]["_build"]
    assert {"extension", "mimeExtension", "style", "load"} <= set(build)
    assert (LABEXTENSION / build["load"]).is_file()
    schema = json.loads((LABEXTENSION / "schemas" / EXTENSION_NAME / "plugin.json").read_text())
    keys = {s["command"]: s["keys"] for s in schema["jupyter.lab.shortcuts"]}
    assert keys == {
        "co:approve": ["Alt Y"],
        "co:deny": ["Alt N"],
        "co:approve-all": ["Alt Shift Y"],
        "notebook:undo-cell-action": ["Accel Z"],
        "notebook:redo-cell-action": ["Accel Shift Z"],
    }


def _no_node_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "CO_"))}
    env["PATH"] = str(VENV_BIN)  # no /usr/bin: no node, no npm
    env.update(extra)
    return env


def _plain(text: str) -> str:
    """Without the ANSI colours Jupyter's list commands print."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _run(argv: list[str], env: dict[str, str], cwd: Path = REPO) -> str:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def _build_wheel(source: Path, dist: Path, env: dict[str, str]) -> Path:
    """`pip wheel` of a checkout, offline (no build isolation); returns the wheel."""
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source)],
        env,
    )  # fmt: skip
    (wheel,) = dist.glob("co_kernel-*.whl")
    return wheel


@pytest.mark.slow
def test_wheel_builds_without_node_and_installs_an_enabled_extension(tmp_path: Path) -> None:
    env = _no_node_env()
    wheel = _build_wheel(REPO, tmp_path / "dist", env)
    names = set(zipfile.ZipFile(wheel).namelist())
    data = "co_kernel-0.1.0.data/data/"
    for expected in (
        "co_kernel/labextension/static/style.js",
        "co_kernel/server/__init__.py",
        f"{data}share/jupyter/labextensions/{EXTENSION_NAME}/package.json",
        f"{data}share/jupyter/labextensions/{EXTENSION_NAME}/install.json",
        f"{data}share/jupyter/labextensions/{EXTENSION_NAME}/static/style.js",
        f"{data}share/jupyter/labextensions/{EXTENSION_NAME}/schemas/{EXTENSION_NAME}/plugin.json",
        f"{data}etc/jupyter/jupyter_server_config.d/co_kernel.json",
        f"{data}etc/jupyter/jupyter_console_config.json",
    ):
        assert expected in names, expected
    assert not any("node_modules" in n or n.endswith(".ts") for n in names)

    prefix = tmp_path / "prefix"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            # Without it pip uninstalls the checkout's editable install from this venv.
            "--ignore-installed",
            "-q",
            "--prefix",
            str(prefix),
            str(wheel),
        ],
        env,
    )
    _assert_enabled(prefix)


def _node_modules() -> Path:
    """The checkout's npm packages, for a build; skips (or fails) a test without them."""
    node_modules = REPO / "labextension" / "node_modules"
    if shutil.which("npm") is None or not node_modules.is_dir():
        reason = "needs npm and labextension/node_modules (scripts/test.sh installs them)"
        if os.environ.get("CO_TEST_REQUIRE_NODE"):  # scripts/test.sh: never silently skipped
            pytest.fail(reason)
        pytest.skip(reason)
    return node_modules


def _link_node_modules(node_modules: Path, checkout: Path) -> None:
    # Hard links: no 500 MB copy; npm replaces files by renaming, never in place.
    subprocess.run(
        ["cp", "-al", str(node_modules), str(checkout / "labextension" / "node_modules")],
        check=True,
    )


@pytest.mark.slow
def test_wheel_build_runs_the_extension_build_when_it_is_missing(tmp_path: Path) -> None:
    """Without the committed build, hatch-jupyter-builder builds it with npm."""
    node_modules = _node_modules()
    skipped = {".git", ".venv", "node_modules", "lib", "test-artifacts", "dist", "build"}

    def ignore(folder: str, names: list[str]) -> set[str]:
        drop = {n for n in names if n in skipped or n.endswith("_cache") or n == "__pycache__"}
        if Path(folder) == REPO / "co_kernel":
            drop.add("labextension")  # the committed build: gone, so it must be rebuilt
        return drop

    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=ignore)
    _link_node_modules(node_modules, source)
    env = _no_node_env()
    env["PATH"] = os.pathsep.join([str(VENV_BIN), "/usr/local/bin", "/usr/bin", "/bin"])
    wheel = _build_wheel(source, tmp_path / "dist", env)
    names = set(zipfile.ZipFile(wheel).namelist())
    shared = f"co_kernel-0.1.0.data/data/share/jupyter/labextensions/{EXTENSION_NAME}/"
    assert f"{shared}static/style.js" in names
    assert any(n.startswith(f"{shared}static/remoteEntry.") for n in names)
    built = json.loads((source / "co_kernel" / "labextension" / "package.json").read_text())
    assert {"extension", "mimeExtension"} <= set(built["jupyterlab"]["_build"])


@pytest.mark.slow
def test_editable_install_without_node_enables_the_extension(tmp_path: Path) -> None:
    """What scripts/setup.sh's `pip install -e` does, on a machine without Node.js."""
    prefix = tmp_path / "prefix"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--ignore-installed",
            "-q",
            "--prefix",
            str(prefix),
            "-e",
            str(REPO),
        ],
        _no_node_env(),
    )
    _assert_enabled(prefix)


@pytest.mark.slow
def test_editable_install_of_a_fresh_clone_leaves_it_clean(tmp_path: Path) -> None:
    """What a contributor types in a new clone, with Node.js on PATH: a fresh venv and
    `pip install -e .`, whose build hook rebuilds the extension. The rebuild gives back
    the committed bytes (wherever the clone is) and keeps the sources' stamp, so
    `git status` stays empty. pip fetches the build backend (hatchling,
    hatch-jupyter-builder) from the configured package index, as it does for a person;
    --no-deps spares it Co's dependencies, which nothing here imports."""
    node_modules = _node_modules()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    _link_node_modules(node_modules, clone)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = _no_node_env()
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
    output = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "-e", "."],
                  env, cwd=clone)  # fmt: skip
    # The build ran (tsc wrote lib/, which git ignores): a skipped one would prove nothing.
    assert (clone / "labextension" / "lib" / "index.js").is_file(), output
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert status == "", f"`pip install -e .` changed the checkout:\n{status}"


def _assert_enabled(prefix: Path) -> None:
    """`jupyter labextension list` and `jupyter server extension list` see Co enabled."""
    # `jupyter server extension list` reads the user, environment and system config
    # dirs only, so the installed prefix's etc/jupyter stands in as the user's.
    listed_env = _no_node_env(
        JUPYTER_PATH=str(prefix / "share" / "jupyter"),
        JUPYTER_CONFIG_DIR=str(prefix / "etc" / "jupyter"),
        JUPYTER_DATA_DIR=str(prefix / "jupyter-data"),
        JUPYTER_PLATFORM_DIRS="1",
        PYTHONPATH=str(REPO),
    )
    labextensions = _plain(_run([str(VENV_BIN / "jupyter"), "labextension", "list"], listed_env))
    line = next(ln for ln in labextensions.splitlines() if EXTENSION_NAME in ln)
    assert "v0.1.0" in line and "enabled" in line and "OK" in line, labextensions
    assert "(python, co-kernel)" in line
    server_extensions = _plain(
        _run([str(VENV_BIN / "jupyter"), "server", "extension", "list"], listed_env)
    )
    assert re.search(r"co_kernel\.server\s+enabled", server_extensions), server_extensions
    assert re.search(r"co_kernel\.server\s+\S*\s*OK", server_extensions), server_extensions
