"""papermill parameters for Co notebooks: ``papermill -k co in.ipynb out.ipynb -p topic France``.

papermill injects a cell that sets the parameters, written by the translator registered for
the kernel's name or language. Co's is a ``%%python`` cell that assigns the values in the
kernel's Python namespace, so later prompts use them as ``{topic}`` (or attach ``@topic``).

papermill (2.x) loads no translators from other packages, only engines (entry-point group
``papermill.engine``, read when papermill is imported). So Co declares an engine named
``co``, and importing it registers the translator: ``-k co`` then works with no other flag.

A Co notebook names files beside it (its replay script, ``data/``, ``.co/settings.json``),
as a notebook in JupyterLab does, whose kernel starts in the notebook's folder and is told
the notebook's path (``JPY_SESSION_NAME``). papermill's own engine starts the kernel in
whatever folder papermill was started in, and tells it nothing, so a Co notebook run from
anywhere else could not find its files. Co's engine is therefore also papermill's default:
for a Co kernel it names the notebook and starts the kernel in its folder, unless the
person chose a working directory (``--cwd``); any other kernel runs exactly as papermill's
nbclient engine runs it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, papermill_engines
from papermill.log import logger
from papermill.translators import PythonTranslator, papermill_translators
from papermill.utils import merge_kwargs, remove_args

__all__ = ["CoEngine", "CoTranslator"]

_MAGIC = "%%python"
_LANGUAGE = "co"


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the folder was removed: papermill must still start
        return None


_STARTED_IN = _cwd()
"""The folder papermill was started in (it imports this module as it starts): papermill
changes into ``--cwd`` only around the run, so a run in another folder was asked for."""


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


def _is_co(kernel_name: str) -> bool:
    """Whether ``kernel_name`` is a Co kernel (its kernelspec's language, whatever its name)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        return KernelSpecManager().get_kernel_spec(kernel_name).language == _LANGUAGE
    except NoSuchKernel:
        return False


def _local_notebook(input_path: Any) -> Path | None:
    """The notebook's file when papermill read it from this machine (not a URL, not stdin)."""
    if not isinstance(input_path, str | os.PathLike):
        return None
    if "://" in str(input_path):
        return None
    if _STARTED_IN is None:
        return None
    # papermill read a relative path before changing into `--cwd`: from where it started.
    path = Path(_STARTED_IN) / input_path
    return path.resolve() if path.is_file() else None


def _kernel_start(notebook: Path) -> dict[str, Any]:
    """How a Co kernel starts for ``notebook``: told its path, in its folder unless papermill
    was asked to run elsewhere (``--cwd``)."""
    env = dict(os.environ)
    env["JPY_SESSION_NAME"] = str(notebook)  # as a Jupyter server names a kernel's notebook
    if _cwd() != _STARTED_IN:
        return {"env": env}
    return {"env": env, "cwd": str(notebook.parent)}


class CoEngine(NBClientEngine):
    """papermill's nbclient engine; a Co kernel starts in its notebook's folder."""

    @classmethod
    def execute_managed_notebook(
        cls,
        nb_man: Any,
        kernel_name: str,
        log_output: bool = False,
        stdout_file: Any = None,
        stderr_file: Any = None,
        start_timeout: int = 60,
        execution_timeout: int | None = None,
        **kwargs: Any,
    ) -> Any:
        notebook = _local_notebook(kwargs.get("input_path"))
        if notebook is None or not _is_co(kernel_name):
            return super().execute_managed_notebook(
                nb_man, kernel_name, log_output, stdout_file, stderr_file, start_timeout,
                execution_timeout, **kwargs,
            )  # fmt: skip
        # As NBClientEngine (papermill 2.x) runs it, the kernel started as _kernel_start says.
        kwargs = remove_args(["input_path"], **kwargs)
        safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
        final_kwargs = merge_kwargs(
            safe_kwargs,
            timeout=execution_timeout if execution_timeout else kwargs.get("timeout"),
            startup_timeout=start_timeout,
            kernel_name=kernel_name,
            log=logger,
            log_output=log_output,
            stdout_file=stdout_file,
            stderr_file=stderr_file,
        )
        client = PapermillNotebookClient(nb_man, **final_kwargs)
        return client.execute(**_kernel_start(notebook))


papermill_translators.register(_LANGUAGE, CoTranslator)
# Without `--engine`, papermill takes the engine registered under no name.
papermill_engines.register(None, CoEngine)
