"""The import layers of co_kernel (`[tool.importlinter]` in pyproject.toml, CONTRIBUTING.md) hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _lint_imports(
    cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(lint), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


def test_the_import_contracts_are_kept() -> None:
    run = _lint_imports()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 5 kept, 0 broken." in run.stdout, run.stdout


def _lint_a_copy_where(tmp_path: Path, module: str, late_import: str) -> str:
    """lint-imports' report on a copy of the package where ``module`` (a path under
    co_kernel/) gains a function that imports ``late_import``; asserts the run fails."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(
        REPO / "co_kernel",
        copy / "co_kernel",
        ignore=shutil.ignore_patterns("labextension", "__pycache__"),
    )
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    (copy / "co_kernel" / "labextension").mkdir()
    source = copy / "co_kernel" / module
    source.write_text(
        source.read_text() + f"\n\ndef _late() -> None:\n    {late_import}  # noqa: F401\n"
    )
    # The copy shadows the installed package: grimp finds co_kernel on PYTHONPATH first.
    run = _lint_imports(copy, env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
    assert run.returncode != 0, run.stdout
    return run.stdout


def test_an_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    """The contract is live: a copy of the package where a tool imports the turn fails it."""
    report = _lint_a_copy_where(tmp_path, "tools/todos.py", "from ..turn import run_turn")
    assert "co_kernel.tools.todos -> co_kernel.turn" in report, report


def test_importing_another_packages_private_module_breaks_a_contract(tmp_path: Path) -> None:
    """A package reaches a neighbour through its public seam, never a ``_private`` module."""
    report = _lint_a_copy_where(
        tmp_path, "frontend/_footer.py", "from ..turn._frontend import TurnSummary"
    )
    assert "co_kernel layers KEPT" in report, report
    assert "co_kernel.frontend._footer -> co_kernel.turn._frontend" in report, report
