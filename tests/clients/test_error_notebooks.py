"""Saved notebooks carry Co's errors as `error` outputs: nbclient and papermill."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec
from ..support.notebooks import write_notebook
from . import client_env

BAD_KEY = {"fault": {"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}}}


def _notebook(path: Path) -> None:
    write_notebook(path, ["What is the capital of France?", "%nosuchmagic", "%python 6*7"])


def _check_turn_error(outputs: list) -> None:
    [error] = [o for o in outputs if o.output_type == "error"]
    assert error.ename == "CoError"
    text = "\n".join(error.traceback)
    assert "HTTP 401" in text and "Incorrect API key provided" in text
    assert "Traceback (most recent call last)" not in text
    shown = [o for o in outputs if o.output_type != "error"]
    assert not any("Incorrect API key provided" in str(o) for o in shown), "said once"


def test_nbclient_saves_each_failed_cell_with_its_error_output(
    tmp_path: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    path = tmp_path / "failing.ipynb"
    _notebook(path)
    with ScriptedModelServer([BAD_KEY]) as server:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, kernel_name="co", allow_errors=True, timeout=180)
        client.execute(env=client_env(co_home, server), cwd=str(tmp_path))
    nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)
    turn, magic, python = (cell.outputs for cell in saved.cells)
    _check_turn_error(turn)
    assert [o.ename for o in magic if o.output_type == "error"] == ["MagicError"]
    assert [o.output_type for o in python] == ["execute_result"]
    assert python[0].data["text/plain"] == "42"


def test_papermill_stops_at_the_failed_turn_and_saves_its_error(
    tmp_path: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    source, out = tmp_path / "failing.ipynb", tmp_path / "out.ipynb"
    _notebook(source)
    papermill = Path(sys.executable).with_name("papermill")
    with ScriptedModelServer([BAD_KEY]) as server:
        run = subprocess.run(
            [str(papermill), "-k", "co", str(source), str(out)],
            env=client_env(co_home, server), cwd=tmp_path, capture_output=True, text=True,
            timeout=240,
        )  # fmt: skip
    assert run.returncode != 0
    # After papermill's own stack, the error output's lines: the readable message alone.
    _, _, shown = run.stderr.partition('Exception encountered at "In [1]":')
    assert "Incorrect API key provided" in shown and 'File "' not in shown, run.stderr[-3000:]
    saved = nbformat.read(out, as_version=4)
    failed = [c for c in saved.cells if any(o.output_type == "error" for o in c.get("outputs", []))]
    assert [c.source for c in failed] == ["What is the capital of France?"]
    _check_turn_error(failed[0].outputs)


def test_nbconvert_says_why_a_cell_failed(tmp_path: Path, co_home: Path) -> None:
    """`jupyter nbconvert --execute` stops at the first failed cell with its reason: nbclient
    builds the message from the execute_reply's traceback, which Co fills."""
    ensure_kernelspec()
    for source, reason in (
        ("%nosuchmagic", "Unknown magic"),
        ("%python 1/0", "ZeroDivisionError"),
    ):
        path = tmp_path / f"fails-{len(reason)}.ipynb"
        write_notebook(path, [source])
        with ScriptedModelServer([]) as server:
            done = subprocess.run(
                [sys.executable, "-m", "nbconvert", "--execute", "--to", "notebook", str(path)],
                env=client_env(co_home, server),
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=180,
            )
        assert done.returncode != 0
        message = done.stderr[done.stderr.find("CellExecutionError") :]
        assert reason in message, done.stderr[-2000:]
