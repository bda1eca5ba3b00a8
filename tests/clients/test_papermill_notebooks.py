"""The regression notebooks under papermill, run as a person runs them: from the repository's
root (a copy of its `notebooks/`), `papermill notebooks/NN.ipynb out.ipynb`, no `--cwd`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec
from ..support.notebooks import write_notebook
from . import REPO, client_env

NOTEBOOKS = REPO / "notebooks"
# Those that show errors on purpose (cells tagged raises-exception) and say so first.
SHOWING_ERRORS = {"01-magics", "05-memory"}
RUNNING_CLEAN = sorted(
    p.stem for p in NOTEBOOKS.glob("*.ipynb") if p.stem not in SHOWING_ERRORS
)  # fmt: skip


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A repository root holding a copy of `notebooks/` as committed (runs write beside them)."""
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("scratch", "recordings", "__pycache__", ".ipynb_checkpoints")
    shutil.copytree(NOTEBOOKS, root / "notebooks", ignore=ignore)
    return root


def _papermill(
    root: Path, co_home: Path, server: ScriptedModelServer, *args: str
) -> subprocess.CompletedProcess[str]:
    env = client_env(co_home, server)
    # A person runs notebooks from folders they trust (headless: `trusted_folders`), with
    # the sandbox image they have.
    env["CO_TRUSTED_FOLDERS"] = json.dumps([str(root / "notebooks")])
    env.pop("CO_SANDBOX", None)
    if image := os.environ.get("CO_SANDBOX_IMAGE"):
        env["CO_SANDBOX_IMAGE"] = image
    papermill = Path(sys.executable).with_name("papermill")
    return subprocess.run(
        [str(papermill), *args], env=env, cwd=root, capture_output=True, text=True, timeout=400
    )


def _outputs(cell: nbformat.NotebookNode) -> str:
    return json.dumps(cell.get("outputs", []))


def _error_cells(nb: nbformat.NotebookNode) -> list[str]:
    """The sources of the cells with an error output."""
    return [
        cell.source
        for cell in nb.cells
        if any(o.output_type == "error" for o in cell.get("outputs", []))
    ]


@pytest.mark.docker
@pytest.mark.parametrize("name", RUNNING_CLEAN)
def test_a_notebook_runs_under_papermill_from_the_repository_root(
    name: str, checkout: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    out = checkout / f"{name}-out.ipynb"
    with ScriptedModelServer([]) as server:
        run = _papermill(checkout, co_home, server, f"notebooks/{name}.ipynb", str(out))
        asked = len(server.requests)
    assert run.returncode == 0, run.stderr[-3000:]
    executed = nbformat.read(out, as_version=4)
    assert _error_cells(executed) == []
    # Its replay script, found beside the notebook, answered; no other model was asked.
    assert asked == 0
    for switch in (c for c in executed.cells if c.source.startswith("%model replay:")):
        assert "Switched to" in _outputs(switch), _outputs(switch)
    # What the run wrote went beside the notebook, not into the folder papermill started in.
    assert sorted(p.name for p in checkout.iterdir()) == [f"{name}-out.ipynb", "notebooks"]


def test_the_parameter_changes_what_the_data_notebook_computes(
    checkout: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    source = "notebooks/08-data-analysis.ipynb"
    committed = nbformat.read(checkout / source, as_version=4)
    [parameters] = [c for c in committed.cells if "parameters" in c.metadata.get("tags", [])]
    assert parameters.source.startswith("%%python\n") and 'column = "revenue"' in parameters.source
    with ScriptedModelServer([]) as server:
        run = _papermill(
            checkout, co_home, server, source, "orders.ipynb", "-p", "column", "orders"
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Passed unknown parameter" not in run.stderr
    executed = nbformat.read(checkout / "orders.ipynb", as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and injected[0].source.endswith('column = "orders"\n')
    # The orders of the month with the fewest (the CSV beside the notebook), where the
    # committed outputs show the revenue's.
    rows = [row.split(",") for row in (checkout / "notebooks/data/sales.csv").read_text().split()]
    fewest = min(int(row[2]) for row in rows[1:])
    assert json.loads(_outputs(executed.cells[-1]))[0]["data"]["text/plain"] == f"('Aug', {fewest})"
    assert json.loads(_outputs(committed.cells[-1]))[0]["data"]["text/plain"] == "('Aug', 33100)"


@pytest.mark.parametrize("name", sorted(SHOWING_ERRORS))
def test_a_notebook_showing_errors_says_so_and_how_to_run_it(
    name: str, checkout: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    nb = nbformat.read(checkout / "notebooks" / f"{name}.ipynb", as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    assert "shows errors on purpose" in first.source
    assert f"`pytest --nbval notebooks/{name}.ipynb`" in first.source
    tagged = [c.source for c in nb.cells if "raises-exception" in c.metadata.get("tags", [])]
    assert tagged and _error_cells(nb) == tagged
    # What the first cell says of papermill: every cell runs, the exit status is 1, and the
    # only errors are those of the tagged cells.
    out = checkout / f"{name}-out.ipynb"
    with ScriptedModelServer([]) as server:
        run = _papermill(checkout, co_home, server, f"notebooks/{name}.ipynb", str(out))
    assert run.returncode == 1, run.stderr[-3000:]
    assert "PapermillExecutionError" in run.stderr
    executed = nbformat.read(out, as_version=4)
    assert _error_cells(executed) == tagged
    assert all(c.get("execution_count") for c in executed.cells if c.cell_type == "code"), (
        "every cell ran"
    )


def test_a_replay_script_is_found_beside_the_notebook_when_the_kernel_runs_elsewhere(
    checkout: Path, co_home: Path, tmp_path: Path
) -> None:
    """`--cwd` runs the kernel in another folder: the tour's replay script, beside it, is
    still found; a path out of the notebook's folder is not looked for there."""
    ensure_kernelspec()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (checkout / "outside.replay.jsonl").write_text(json.dumps({"text": "from outside"}) + "\n")
    escaping = checkout / "notebooks" / "escaping.ipynb"
    write_notebook(escaping, ["%model replay:../outside.replay.jsonl"])
    with ScriptedModelServer([]) as server:
        tour = _papermill(
            checkout, co_home, server, "notebooks/00-tour.ipynb", "tour.ipynb",
            "--cwd", str(elsewhere),
        )  # fmt: skip
        escaped = _papermill(
            checkout, co_home, server, "notebooks/escaping.ipynb", "escaping.ipynb",
            "--cwd", str(elsewhere),
        )  # fmt: skip
    assert tour.returncode == 0, tour.stderr[-3000:]
    executed = nbformat.read(checkout / "tour.ipynb", as_version=4)
    assert _error_cells(executed) == []
    script = checkout / "notebooks" / "00-tour.replay.jsonl"
    assert f"Switched to **replay:{script}**" in _outputs(executed.cells[1])
    # What the notebook recorded went where its kernel ran, as the person asked.
    assert (elsewhere / "recordings" / "tour.replay.jsonl").is_file()
    assert escaped.returncode == 1
    assert f"Replay script not found: {elsewhere / '../outside.replay.jsonl'}" in escaped.stderr


def test_the_kernel_is_told_which_notebook_papermill_runs(tmp_path: Path, co_home: Path) -> None:
    """As a Jupyter server names a kernel's notebook: `read_notebook` reads that file."""
    ensure_kernelspec()
    folder = tmp_path / "reports"
    folder.mkdir()
    intro = nbformat.v4.new_markdown_cell("# Quarterly numbers\n\nRevenue fell in August.")
    write_notebook(folder / "q3.ipynb", [intro, "Summarise this notebook."])
    steps = [
        {"tool_calls": [{"name": "read_notebook", "arguments": {}}]},
        {"text": "It says revenue fell in August."},
    ]
    with ScriptedModelServer(steps) as server:
        run = _papermill(tmp_path, co_home, server, "reports/q3.ipynb", "out.ipynb")
        requests = list(server.requests)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.dumps(requests[-1]["messages"][-1])
    assert "Revenue fell in August." in result and "q3.ipynb" in result, result
