"""Notebook files for the tests that run or open one, as a person's Jupyter saves them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import nbformat

__all__ = ["write_notebook"]

_KERNELS = {"co": ("Co", "co"), "python3": ("Python 3 (ipykernel)", "python")}


def write_notebook(
    path: Path, cells: Sequence[str | nbformat.NotebookNode], kernel: str = "co"
) -> str:
    """Write a notebook of these cells (a string is a code cell's source) for the kernel
    ``co`` or ``python3``; returns its file name."""
    display, language = _KERNELS[kernel]
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": display, "language": language}
    nb.cells = [nbformat.v4.new_code_cell(c) if isinstance(c, str) else c for c in cells]
    nbformat.write(nb, path)
    return path.name
