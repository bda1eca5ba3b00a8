"""Record a regression notebook's outputs the way `pytest --nbval` will check them.

    .venv/bin/python scripts/record_notebook.py notebooks/01-magics.ipynb [...]

This runs every code cell exactly as nbval does (`co_kernel.replay.record_notebook`, which
users run on their own notebooks), in a fresh `CO_HOME` and the environment
`notebooks/conftest.py` gives it, and writes the outputs and execution counts back into
the notebook. Each notebook selects its own replay script (`%model replay:...`), so no
model is asked. Review the diff before committing it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

from co_kernel.replay.record_notebook import execute_as_nbval


def _conftest(folder: Path) -> Any:
    """The notebooks' conftest, for the environment nbval gives each notebook's kernel."""
    spec = importlib.util.spec_from_file_location("_notebooks_conftest", folder / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(path: Path) -> int:
    """Run every code cell of the notebook at ``path`` and store its outputs; return error replies."""
    conftest = _conftest(path.parent)
    home = conftest.new_co_home(path.stem)
    try:
        return execute_as_nbval(path, conftest.notebook_env(os.environ, home))
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.notebooks:
        record(path)
        print(f"recorded {path}")


if __name__ == "__main__":
    main()
