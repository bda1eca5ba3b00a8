"""The notebook's Python side: `%%python` cells, the run_python tool, recent cells.

What the agent's code displays (``display()``, a matplotlib figure left open, the rich
representation of its last expression: a DataFrame's table, an image) is captured as the
MIME bundles IPython would have sent, and drawn in the prompt's cell under the tool's card
(``PythonRun.outputs``). They are drawn as IPython draws them, ``text/html`` included and
not sanitised: the code ran in the person's kernel with their approval, as a `%%python`
cell of theirs would, and code that runs on the host could publish any output itself.
Only ``text/markdown`` is turned into sanitised HTML, as for every output of Co
(``frontend._safe_html``), and every output passes the session's redactor.
"""

from __future__ import annotations

import collections
import io
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

from ._images import images_of_outputs, model_accepts_images
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
    outputs: list[dict[str, Any]] = field(default_factory=list)
    """What the agent's code displayed, in order: ``{"data": bundle, "metadata": ...,
    "display_id": ...}``; the last expression's rich form first, marked ``"result": True``."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Anything else a caller wants to keep."""

    def for_model(self, model: Any, accepts_images: bool | str, note: str = "") -> Any:
        """What the model reads of the run: what it printed, its value, the text of what it
        displayed, its images named, its error (and ``note``); the images themselves as
        image parts when the model reads them (setting ``model_accepts_images``)."""
        parts = [f"stdout:\n{self.stdout}"] if self.stdout else []
        if self.result is not None:
            parts.append(f"result: {self.result}")
        shown = _shown_text(self.outputs)
        if shown:
            parts.append("displayed:\n" + "\n".join(shown))
        images = images_of_outputs(self.outputs)
        send = bool(images) and model_accepts_images(model, accepts_images)
        if images:
            how = "attached as images" if send else "not sent: this model reads no images"
            parts.append(f"images ({how}):\n" + "\n".join(f"- {i.describe()}" for i in images))
        if self.error:
            parts.append(f"error:\n{self.error}")
        result = {
            "display": ("\n".join(parts) or "(no output)") + note,
            "stdout": self.stdout,
            "result": self.result,
            "error": self.error,
        }
        if not send:
            return result
        # The text, then the images: pydantic-ai sends them in the tool result where the API
        # can, else framed as the tool's in a user message (OpenAI chat completions).
        return [result["display"], *(image.binary() for image in images)]


def _shown_text(outputs: list[dict[str, Any]]) -> list[str]:
    """The text of each displayed output but the result's (already there) and images'
    (which travel as images or as a line)."""
    texts = []
    for output in outputs:
        if output.get("result"):
            continue
        data = output.get("data") or {}
        plain = data.get("text/plain")
        if isinstance(plain, str) and not any(k.startswith("image/") for k in data):
            texts.append(plain if len(plain) <= 2000 else plain[:1999] + "…")
    return texts


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
    """IPython's run_cell_async, with the steps it wants done by the caller: the transform
    before, and the ``post_execute`` / ``post_run_cell`` events after (as ipykernel does).
    matplotlib's inline backend draws the figures a cell left open on ``post_execute``."""
    exc_tuple = None
    try:
        transformed = shell.transform_cell(code)
    except Exception:
        transformed = code
        exc_tuple = sys.exc_info()
    result = None
    try:
        result = await shell.run_cell_async(
            code,
            store_history=store_history,
            silent=silent,
            transformed_cell=transformed,
            preprocessing_exc_tuple=exc_tuple,
        )
    finally:
        shell.events.trigger("post_execute")
        if not silent:
            shell.events.trigger("post_run_cell", result)
    return result


def _capturing_publisher() -> Any:
    """An IPython display publisher that keeps what is displayed instead of sending it."""
    from IPython.core.displaypub import DisplayPublisher

    class Capture(DisplayPublisher):
        def __init__(self) -> None:
            super().__init__()
            self.outputs: list[dict[str, Any]] = []

        def publish(
            self,
            data: dict[str, Any],
            metadata: dict[str, Any] | None = None,
            source: Any = None,
            *,
            transient: dict[str, Any] | None = None,
            update: bool = False,
        ) -> None:
            display_id = (transient or {}).get("display_id")
            output = {"data": data, "metadata": metadata or {}, "display_id": display_id}
            if update:
                # A display update replaces what that display showed; nothing shown, nothing to do.
                for i, shown in enumerate(self.outputs):
                    if display_id and shown["display_id"] == display_id:
                        self.outputs[i] = output
                return
            self.outputs.append(output)

        def clear_output(self, wait: bool = False) -> None:
            # No terminal escape codes into the captured stdout, as the base class would write.
            self.outputs.clear()

    return Capture()


def _rich_bundle(shell: Any, value: Any) -> dict[str, Any] | None:
    """The value's MIME bundle as IPython's displayhook would format it, when it has more
    than text (a DataFrame's table, an image, a rich repr); None for plain values."""
    try:
        data, metadata = shell.display_formatter.format(value)
    except Exception:
        return None
    if not isinstance(data, dict) or set(data) <= {"text/plain"}:
        return None
    return {"data": data, "metadata": metadata or {}, "display_id": None, "result": True}


class NotebookContext:
    """The kernel's IPython shell and a log of recent cells, shared by dispatch and tools."""

    def __init__(self, shell: Any, keep: int = 20, notebook_path: str | None = None) -> None:
        self.shell = shell
        self.cells: collections.deque[CellRecord] = collections.deque(maxlen=keep)
        self.last_error: PythonRun | None = None
        self.page = NotebookPage(notebook_path)
        """The pages that show the notebook (``co.notebook``); the dispatcher registers it.
        ``notebook_path``: the kernel's own notebook, as the server named it."""
        self.executing = False
        """True while the person's or the agent's Python runs in the shell: an interrupt
        then raises KeyboardInterrupt in that code, as in a plain IPython kernel."""
        self.next_count = 0
        """The count after the last one given to a cell the agent ran (``take_count``);
        the kernel moves its counter past it when the running cell ends."""

    def take_count(self) -> int:
        """The execution count a cell the agent runs (``run_cell``) shows: the next after
        the running cell's and those given before, as if the person had run it next.

        The kernel's counter itself moves only when the running cell ends (its outputs
        keep its own count meanwhile), then past every count given here, so the person's
        next cell shows a later one.
        """
        count = max(self.next_count, self.shell.execution_count + 1)
        self.next_count = count + 1
        return count

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
        capture, saved_pub = _capturing_publisher(), self.shell.display_pub
        self.shell.display_pub = capture
        rich = None
        try:
            res = await self._execute(source, store_history=False, silent=True)
            value = self.namespace.pop(_RESULT_NAME, None)
            err = res.error_before_exec or res.error_in_exec
            if err is None and has_value and value is not None:
                rich = _rich_bundle(self.shell, value)
        finally:
            self.shell.display_pub = saved_pub
            sys.stdout, sys.stderr = saved
            self.namespace.pop(_RESULT_NAME, None)
        run = PythonRun(stdout=tee_out.buffer_text.getvalue() + tee_err.buffer_text.getvalue())
        # The value's rich form first, as IPython's Out comes before what post_execute draws.
        run.outputs = [rich, *capture.outputs] if rich else list(capture.outputs)
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
