"""What installing Co brings, and what the test tools cost."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_test_tools_are_a_dependency_group_not_an_extra() -> None:
    """`pip install co-kernel[test]` reaches nobody; the GPL test tool stays out of Co."""
    config = tomllib.loads(PYPROJECT.read_text())
    assert "test" not in config["project"]["optional-dependencies"]
    group = config["dependency-groups"]["test"]
    assert any(req.startswith("pytest") for req in group)
    installed = importlib.metadata.metadata("co-kernel")
    assert "test" not in (installed.get_all("Provides-Extra") or [])
    required = " ".join(installed.get_all("Requires-Dist") or [])
    for name in ("rfc3987", "pytest", "playwright", "pyright"):
        assert name not in required, f"{name} is in co-kernel's own metadata"


def test_importing_jsonschema_builds_no_grammar() -> None:
    """Every Jupyter server, nbclient and console the tests start imports jsonschema: with
    rfc3987 installed it does not load rfc3987-syntax's Lark grammars (about 2 s of CPU
    each time, measured in session 10). Checked by what is imported, not by a clock."""
    probe = "import sys, jsonschema; print(sorted(m for m in sys.modules if m.split('.')[0] in ('lark', 'rfc3987_syntax')))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_pandas_and_matplotlib_are_an_extra_that_co_never_imports() -> None:
    """`co-kernel[data]` brings them for the person's analysis; Co runs without them: no
    module of Co imports either, at import time or when the Python tools load."""
    config = tomllib.loads(PYPROJECT.read_text())
    extra = " ".join(config["project"]["optional-dependencies"]["data"])
    core = " ".join(config["project"]["dependencies"])
    for name in ("pandas", "matplotlib"):
        assert name in extra and name not in core
    probe = (
        "import sys, co_kernel.kernel, co_kernel.kernel._dispatch, co_kernel.tools.python, "
        "co_kernel.tools.files, co_kernel.notebook; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'matplotlib')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
