"""papermill parameters for Co notebooks: ``papermill -k co in.ipynb out.ipynb -p topic France``.

papermill injects a cell that sets the parameters, written by the translator registered for
the kernel's name or language. Co's is a ``%%python`` cell that assigns the values in the
kernel's Python namespace, so later prompts use them as ``{topic}`` (or attach ``@topic``).

papermill (2.x) loads no translators from other packages, only engines (entry-point group
``papermill.engine``, read when papermill is imported). So Co declares an engine named
``co``, papermill's own nbclient engine unchanged, and importing it registers the
translator: ``-k co`` then works with no other flag.
"""

from __future__ import annotations

from typing import Any

import nbformat
from papermill.engines import NBClientEngine
from papermill.translators import PythonTranslator, papermill_translators

__all__ = ["CoEngine", "CoTranslator"]

_MAGIC = "%%python"


class CoTranslator(PythonTranslator):
    """Parameters as a ``%%python`` cell; values are written as Python literals."""

    @classmethod
    def codify(cls, parameters: dict[str, Any], comment: str = "Parameters") -> str:
        return f"{_MAGIC}\n{super().codify(parameters, comment)}"

    @classmethod
    def inspect(cls, parameters_cell: Any) -> list[Any]:
        """The parameters a ``%%python`` parameters cell declares (``papermill --help-notebook``)."""
        source = parameters_cell.source
        first, _, rest = source.partition("\n")
        if first.strip() == _MAGIC:
            parameters_cell = nbformat.v4.new_code_cell(rest)
        return super().inspect(parameters_cell)


class CoEngine(NBClientEngine):
    """papermill's nbclient engine as it is; its entry point is what registers the translator."""


papermill_translators.register("co", CoTranslator)
