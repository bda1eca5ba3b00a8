"""The notebook's Python side: `%%python` cells, the run_python tool, recent cells."""

from __future__ import annotations

import collections
import io
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

from ._page import NotebookPage

__all__ = ["CellRecord", "NotebookContext", "PythonRun"]

_OUTPUT_CAP = 2000


@dataclass
class CellRecord:
    """One executed cell, as `notebook_context()` reports it."""

    kind: str
    """prompt, python, magic or shell."""
    source: str
    """The cell's input, truncated."""
    output: str = ""
    """A short text of what it showed."""
    error: str | None = None
    """`ename: evalue` when it failed."""


@dataclass
class PythonRun:
    """What running code in the namespace produced."""

    stdout: str = ""
    """Text printed while it ran."""
    result: str | None = None
    """repr of the last expression's value."""
    error: str | None = None
    """The traceback, as plain text, when it raised."""
    ename: str | None = None
    """Exception class name."""
    evalue: str | None = None
    """Exception message."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Anything else a caller wants to keep."""


class _Tee(io.TextIOBase):
    """Copy writes to a buffer while passing them on (or not) to the real stream."""

    def __init__(self, target: Any, echo: bool) -> None:
        self._target = target
        self._echo = echo
        self.buffer_text = io.StringIO()

    def write(self, text: str) -> int:
        self.buffer_text.write(text)
        if self._echo:
            self._target.write(text)
        return len(text)

    def flush(self) -> None:
        if self._echo:
            self._target.flush()


def _clip(text: str, cap: int = _OUTPUT_CAP) -> str:
    return text if len(text) <= cap else text[: cap - 1] + "…"


def _format_error(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    # Drop IPython's own frames: the person's code starts at the first <cell> frame.
    text = "".join(lines)
    return _clip(text, 6000)


async def _run(shell: Any, code: str, *, store_history: bool, silent: bool) -> Any:
    """IPython's run_cell_async, with the transform step it wants done by the caller."""
    exc_tuple = None
    try:
        transformed = shell.transform_cell(code)
    except Exception:
        transformed = code
        exc_tuple = sys.exc_info()
    return await shell.run_cell_async(
        code,
        store_history=store_history,
        silent=silent,
        transformed_cell=transformed,
        preprocessing_exc_tuple=exc_tuple,
    )


class NotebookContext:
    """The kernel's IPython shell and a log of recent cells, shared by dispatch and tools."""

    def __init__(self, shell: Any, keep: int = 20) -> None:
        self.shell = shell
        self.cells: collections.deque[CellRecord] = collections.deque(maxlen=keep)
        self.last_error: PythonRun | None = None
        self.page = NotebookPage()
        """The pages that show the notebook (``co.notebook``); the dispatcher registers it."""
        self.executing = False
        """True while the person's or the agent's Python runs in the shell: an interrupt
        then raises KeyboardInterrupt in that code, as in a plain IPython kernel."""

    async def _execute(self, code: str, *, store_history: bool, silent: bool) -> Any:
        self.executing = True
        try:
            return await _run(self.shell, code, store_history=store_history, silent=silent)
        finally:
            self.executing = False

    @property
    def namespace(self) -> dict[str, Any]:
        return self.shell.user_ns

    def record(self, record: CellRecord) -> None:
        record.source = _clip(record.source, 1000)
        record.output = _clip(record.output)
        self.cells.append(record)

    async def run_cell(self, code: str) -> PythonRun:
        """Run a `%%python` cell: normal rich outputs, tracebacks, `_` and `Out`."""
        tee_out = _Tee(sys.stdout, echo=True)
        saved = sys.stdout
        sys.stdout = tee_out
        try:
            res = await self._execute(code, store_history=True, silent=False)
        finally:
            sys.stdout = saved
        run = PythonRun(stdout=tee_out.buffer_text.getvalue())
        if res.result is not None:
            run.result = _safe_repr(res.result)
        err = res.error_before_exec or res.error_in_exec
        if err is not None:
            run.ename, run.evalue, run.error = type(err).__name__, str(err), _format_error(err)
            self.last_error = run
        output = run.stdout + (run.result or "")
        self.record(
            CellRecord("python", code, output, f"{run.ename}: {run.evalue}" if run.ename else None)
        )
        return run

    async def run_tool_code(self, code: str) -> PythonRun:
        """Run code for the agent: same namespace, output captured for the model."""
        source, has_value = _capture_last_expression(code)
        tee_out, tee_err = _Tee(sys.stdout, echo=False), _Tee(sys.stderr, echo=False)
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = tee_out, tee_err
        try:
            res = await self._execute(source, store_history=False, silent=True)
        finally:
            sys.stdout, sys.stderr = saved
            value = self.namespace.pop(_RESULT_NAME, None)
        run = PythonRun(stdout=tee_out.buffer_text.getvalue() + tee_err.buffer_text.getvalue())
        err = res.error_before_exec or res.error_in_exec
        if err is not None:
            run.ename, run.evalue, run.error = type(err).__name__, str(err), _format_error(err)
        elif has_value and value is not None:
            run.result = _safe_repr(value)
        return run


_RESULT_NAME = "__co_run_python_result__"


def _capture_last_expression(code: str) -> tuple[str, bool]:
    """Rewrite a trailing expression into an assignment, so its value is kept once."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code, False  # IPython reports the syntax error itself
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return code, False
    last = tree.body[-1]
    assign = ast.Assign(targets=[ast.Name(_RESULT_NAME, ast.Store())], value=last.value)
    tree.body[-1] = ast.copy_location(assign, last)
    return ast.unparse(ast.fix_missing_locations(tree)), True


def _safe_repr(value: Any) -> str:
    try:
        return _clip(repr(value))
    except Exception as exc:
        return f"<repr failed: {type(exc).__name__}>"
