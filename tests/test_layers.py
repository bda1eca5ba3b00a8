"""The import layers of co_kernel (README "Development", `[tool.importlinter]`) hold."""

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
    assert "Contracts: 3 kept, 0 broken." in run.stdout, run.stdout


def test_an_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    """The contract is live: a copy of the package where a tool imports the turn fails it."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(
        REPO / "co_kernel",
        copy / "co_kernel",
        ignore=shutil.ignore_patterns("labextension", "__pycache__"),
    )
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    (copy / "co_kernel" / "labextension").mkdir()
    todos = copy / "co_kernel" / "tools" / "todos.py"
    todos.write_text(
        todos.read_text()
        + "\n\ndef _late() -> None:\n    from ..turn import run_turn  # noqa: F401\n"
    )
    # The copy shadows the installed package: grimp finds co_kernel on PYTHONPATH first.
    run = _lint_imports(copy, env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
    assert run.returncode != 0, run.stdout
    assert "co_kernel.tools.todos -> co_kernel.turn" in run.stdout, run.stdout
