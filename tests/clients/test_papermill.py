"""papermill runs Co notebooks with parameters (`papermill -k co in out -p name value`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec
from ..support.notebooks import write_notebook
from . import client_env


def _notebook(path: Path) -> None:
    params = nbformat.v4.new_code_cell('%%python\ntopic = "Spain"\nyear = 1900')
    params.metadata["tags"] = ["parameters"]
    write_notebook(path, [params, "Tell me about {topic} in {year}."])


def _papermill(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    papermill = Path(sys.executable).with_name("papermill")
    return subprocess.run(
        [str(papermill), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=240
    )


def test_parameters_reach_the_prompt(tmp_path: Path, co_home: Path) -> None:
    ensure_kernelspec()
    source, out = tmp_path / "report.ipynb", tmp_path / "report-france.ipynb"
    _notebook(source)
    with ScriptedModelServer([{"text": "Paris is the capital."}]) as server:
        run = _papermill(
            "-k", "co", str(source), str(out), "-p", "topic", "France", "-p", "year", "2024",
            env=client_env(co_home, server), cwd=tmp_path,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        sent = json.dumps(server.requests[-1]["messages"])
    assert "Tell me about France in 2024." in sent
    executed = nbformat.read(out, as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    assert injected[0].source.splitlines()[0] == "%%python"
    assert "topic = 'France'" in injected[0].source or 'topic = "France"' in injected[0].source
    answer = executed.cells[-1].outputs
    assert any("Paris is the capital." in json.dumps(o) for o in answer)


def test_help_notebook_lists_the_parameters_of_a_python_parameters_cell(
    tmp_path: Path, co_home: Path
) -> None:
    source = tmp_path / "report.ipynb"
    _notebook(source)
    with ScriptedModelServer([]) as server:
        run = _papermill(
            "--help-notebook", str(source), env=client_env(co_home, server), cwd=tmp_path
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "topic" in run.stdout and "year" in run.stdout, run.stdout
