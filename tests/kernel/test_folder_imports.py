"""The kernel imports nothing from the folder it starts in; the person's Python imports the
folder's own modules only once they trust it.

A folder prepared as a malicious download would be: shadows of the standard library
(``difflib``, which Co imports at start, ``colorsys``, which the person's Python imports
later), of Co's dependencies (``nh3``, ``markdown_it``, ``rich``, ``pydantic_ai``) and of
``co_kernel`` itself, each leaving a marker (its name, the pid) when it runs. None runs:
not at start (the kernelspec's own command line, a fresh interpreter), not on Co's lazy
imports after start (a turn, a console turn, magics), not on the person's ``import`` of
those names, before or after trust; also when a sandboxed ``!`` cell wrote the file.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from co_kernel.cli import kernelspec_dict
from co_kernel.replay import ScriptedModelServer
from tests.sandbox.conftest import SANDBOX_UID, TEST_IMAGE, docker_client  # noqa: F401 - fixture
from tests.support.kernel_harness import CoKernel, ensure_kernelspec

SHADOWS = ("difflib", "colorsys", "nh3", "markdown_it", "rich", "pydantic_ai", "co_kernel")
"""Planted as ``NAME.py`` (the first two and ``nh3``) or ``NAME/__init__.py``."""

_MARK = """import os as _os
with open(_os.path.join({markers!r}, {name!r} + "-" + str(_os.getpid())), "w") as _f:
    _f.write(_os.getcwd())
"""

# A planted `co_kernel` that ran would hand over to the real one, as the one found in the
# wild did, so the kernel still starts and the marker alone tells.
_HAND_OVER = """import os, runpy, sys
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != os.path.realpath(here)]
for name in [n for n in sys.modules if n == "co_kernel" or n.startswith("co_kernel.")]:
    del sys.modules[name]
runpy.run_module("co_kernel", run_name="__main__", alter_sys=True)
"""


def _source(name: str, markers: Path) -> str:
    return _MARK.format(markers=str(markers), name=name)


def _plant(folder: Path, markers: Path) -> None:
    for name in SHADOWS:
        if name in ("difflib", "colorsys", "nh3"):
            (folder / f"{name}.py").write_text(_source(name, markers))
        else:
            (folder / name).mkdir()
            (folder / name / "__init__.py").write_text(_source(name, markers))
    (folder / "co_kernel" / "__main__.py").write_text(_HAND_OVER)


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


def _ran(markers: Path) -> list[str]:
    return sorted(os.listdir(markers))


def _exercise(kernel: CoKernel, model_server: ScriptedModelServer, workspace: Path) -> None:
    """What makes Co import lazily after start, and the person's imports of those names."""
    model_server.extend([{"text": "**Bold** answer with `code`."}, {"text": "Console answer."}])
    assert kernel.execute("hello", timeout=120).status == "ok"
    assert kernel.execute("and in a terminal", mode="console", timeout=120).status == "ok"
    for magic in ("%status", "%help", "%trust show", "%history"):
        assert kernel.execute(magic, timeout=60).status == "ok", magic
    cell = kernel.execute(
        "%%python\nimport sys, difflib, colorsys, nh3, markdown_it, rich, pydantic_ai\n"
        "mods = (difflib, colorsys, nh3, markdown_it, rich, pydantic_ai)\n"
        f"print([m.__name__ for m in mods if str(m.__file__).startswith({str(workspace)!r})])\n"
        f"print([p for p in sys.path if p in ('', '.', {str(workspace)!r})])",
        timeout=60,
    )
    assert cell.status == "ok", cell.text()
    assert cell.stdout == "[]\n[]\n", cell.stdout


@pytest.mark.parametrize("fork", [False, True], ids=["fresh", "forked"])
def test_modules_planted_beside_the_notebook_never_run(
    start_kernel, model_server: ScriptedModelServer, workspace: Path, markers: Path, fork: bool
) -> None:
    _plant(workspace, markers)
    # fork=False: the registered kernelspec's command line, as Jupyter starts it for a person.
    kernel = start_kernel(fork=fork, trusted=False)
    assert _ran(markers) == [], "ran at start"
    _exercise(kernel, model_server, workspace)
    assert _ran(markers) == [], "ran on a later import"
    # Trusted, the folder's modules are the person's to import, yet never in place of the
    # standard library, an installed package or Co.
    assert "You trust" in kernel.execute("%trust", timeout=60).text()
    _exercise(kernel, model_server, workspace)
    assert _ran(markers) == [], "ran after trust"


def test_the_registered_kernelspec_starts_python_with_a_safe_path() -> None:
    ensure_kernelspec()
    argv = KernelSpecManager().get_kernel_spec("co").argv
    assert argv[1:4] == ["-P", "-m", "co_kernel"], argv
    assert argv[1:] == kernelspec_dict()["argv"][1:]  # type: ignore[index]


def test_python_imports_the_persons_module_only_once_the_folder_is_trusted(
    start_kernel, workspace: Path
) -> None:
    (workspace / "mymod.py").write_text("from helper import PART\nVALUE = PART * 2\n")
    (workspace / "helper.py").write_text("PART = 21\n")
    kernel = start_kernel(trusted=False)

    refused = kernel.execute("%%python\nimport mymod", timeout=60)
    assert refused.status == "error"
    assert refused.reply["content"]["ename"] == "ModuleNotFoundError"
    text = refused.text()
    assert "`mymod` is in this notebook's folder" in text and "`%trust`" in text, text
    # The kernel and its namespace are intact.
    assert kernel.execute("%%python\nx = 1\nprint(x + 1)", timeout=60).stdout == "2\n"

    assert "imports its modules only once you trust it" in kernel.execute("%trust show").text()
    assert "You trust" in kernel.execute("%trust", timeout=60).text()
    assert "You trust it: `%%python` imports its modules" in kernel.execute("%trust show").text()
    cell = kernel.execute("%%python\nimport mymod\nprint(mymod.VALUE)", timeout=60)
    assert cell.status == "ok" and cell.stdout == "42\n", cell.text()
    # importlib's own way in counts as the person's import too.
    cell = kernel.execute(
        "%%python\nimport importlib\nprint(importlib.import_module('helper').PART)"
    )
    assert cell.stdout == "21\n", cell.text()

    # Withdrawn trust applies from the next import on.
    assert "no longer trust" in kernel.execute("%trust revoke", timeout=60).text()
    (workspace / "later.py").write_text("print('later ran')\n")
    late = kernel.execute("%%python\nimport later", timeout=60)
    assert late.status == "error" and "later ran" not in late.text(), late.text()
    assert "`later` is in this notebook's folder" in late.text()


@pytest.mark.docker
def test_a_sandboxed_cell_cannot_plant_what_the_next_kernel_imports(
    start_kernel,
    model_server: ScriptedModelServer,
    workspace: Path,
    markers: Path,
    docker_client,  # noqa: F811 - fixture use
) -> None:
    if os.getuid() == 0:
        os.chown(workspace, SANDBOX_UID, SANDBOX_UID)
    env = {"CO_SANDBOX": "docker", "CO_SANDBOX_IMAGE": TEST_IMAGE, "CO_SANDBOX_WORKSPACE": "bind"}
    kernel = start_kernel(env, fork=False)
    for name in ("nh3", "difflib"):
        payload = base64.b64encode(_source(name, markers).encode()).decode()
        cell = kernel.execute(f"!echo {payload} | base64 -d > {name}.py", timeout=180)
        assert cell.status == "ok", cell.text()
        assert (workspace / f"{name}.py").exists()  # the sandbox wrote it into the folder
    kernel.shutdown()

    # The next start, a turn and the person's Python: none of it runs the files.
    kernel = start_kernel(env, fork=False)
    model_server.extend([{"text": "Fine."}])
    assert kernel.execute("hello", timeout=120).status == "ok"
    cell = kernel.execute("%%python\nimport difflib, nh3\nprint(difflib.__file__)", timeout=60)
    assert cell.status == "ok" and str(workspace) not in cell.stdout, cell.text()
    assert _ran(markers) == []


def test_a_kernelspec_from_before_safe_path_still_keeps_the_folder_out_later(
    tmp_path: Path, workspace: Path, markers: Path, co_home: Path
) -> None:
    """A person's kernelspec written by an older `co-kernel install` (no -P): the import of
    Co itself came from wherever `-m` found it, but nothing imported after start does."""
    kernels = tmp_path / "kernels"
    spec = {
        **kernelspec_dict(),
        "argv": [sys.executable, "-m", "co_kernel", "-f", "{connection_file}"],
    }
    (kernels / "co-old").mkdir(parents=True)
    (kernels / "co-old" / "kernel.json").write_text(json.dumps(spec))
    (workspace / "colorsys.py").write_text(_source("colorsys", markers))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env.update(CO_HOME=str(co_home), CO_SANDBOX="subprocess")
    km = KernelManager(
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]), kernel_name="co-old"
    )
    km.start_kernel(env=env, cwd=str(workspace))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        printed: list[str] = []

        def output(msg: dict[str, object]) -> None:
            content = msg["content"]
            if msg["msg_type"] == "stream" and isinstance(content, dict):
                printed.append(str(content["text"]))

        code = (
            "%%python\nimport sys, colorsys\n"
            f"print(colorsys.__file__.startswith({str(workspace)!r}), "
            f"[p for p in sys.path if p in ('', {str(workspace)!r})])"
        )
        reply = kc.execute_interactive(code, output_hook=output, timeout=60)
        assert reply["content"]["status"] == "ok", printed
        assert "".join(printed) == "False []\n"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert _ran(markers) == []


def test_forked_test_kernels_get_the_path_a_kernelspec_start_gets(start_kernel) -> None:
    """The tests' fork server gives its kernels what `python -P -m co_kernel` has, or the
    tests above would prove nothing about the kernels people start."""
    probe = "%%python\nimport sys, json\nprint(json.dumps([sys.path, sys.flags.safe_path]))"
    seen = [json.loads(start_kernel(fork=fork).execute(probe).stdout) for fork in (False, True)]
    assert seen[0] == seen[1]
    assert seen[0][1] is True
