"""One short scenario in every client people run Co in: what each shows and saves.

The scenario: a prompt the scripted model answers, a prompt whose tool call needs
approval, a `!` cell, a magic and a mistake (an unknown magic, tagged
``raises-exception`` so that nbclient and nbconvert carry on past it; papermill fails
the run on any error output, and says so). In JupyterLab, Notebook 7 and ``jupyter console`` a person approves the call;
nbclient (``jupyter execute``), papermill and ``jupyter nbconvert --execute`` run
headless, nobody is asked, and ``approval_mode`` (``deny`` by default) decides.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pexpect
import pytest

from co_kernel.frontend import MIME_TOOL_CALL
from co_kernel.replay import ScriptedModelServer

from ..browser.jupyterlab import chromium_page, scripted_env
from ..support.kernel_harness import ensure_kernelspec
from ..support.lab_server import start_server
from . import client_env, terminal_env

pytestmark = pytest.mark.slow

CELLS = [
    "What is the capital of France?",
    "Write hello into hello.txt",
    "!echo sandbox-ok",
    "%model",
    "%stauts",
]
SCRIPT = [
    {"text": "Paris is the capital of France."},
    {"tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": "echo hello > hello.txt"}}]},
    {"text": "Done with the file."},
]
VENV_BIN = Path(sys.executable).parent
_ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def write_scenario(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "co", "display_name": "Co", "language": "co"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.cells[-1].metadata["tags"] = ["raises-exception"]
    nbformat.write(nb, path)
    return path


def _output_text(output: dict[str, Any]) -> str:
    if output["output_type"] == "stream":
        return str(output["text"])
    if output["output_type"] == "error":
        return f"{output['ename']}: {output['evalue']}"
    data = output.get("data", {})
    return str(data.get("text/markdown") or data.get("text/plain") or "")


def check_saved(path: Path, *, approved: bool) -> None:
    """The saved notebook holds every cell's outcome, the decision included."""
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.source for c in cells] == CELLS
    texts = ["\n".join(_output_text(o) for o in c.outputs) for c in cells]
    assert "Paris is the capital of France." in texts[0], texts[0]
    [card] = [
        o["data"][MIME_TOOL_CALL] for o in cells[1].outputs if MIME_TOOL_CALL in o.get("data", {})
    ]
    if approved:
        assert (card["status"], card["decision"]) == ("ok", "approved"), card
    else:
        assert card["status"] == "denied" and "denied" in card["decision"], card
    assert "Done with the file." in texts[1], texts[1]
    assert "sandbox-ok" in texts[2], texts[2]
    assert "compat:scripted" in texts[3], texts[3]
    [error] = [o for o in cells[4].outputs if o["output_type"] == "error"]
    assert "Unknown magic %stauts" in error["evalue"], error
    assert all(c.execution_count for c in cells), [c.execution_count for c in cells]


# -- headless: nobody to ask ---------------------------------------------------------

HEADLESS = {
    "nbclient": lambda src, out: [
        str(VENV_BIN / "jupyter-execute"), f"--output={out.stem}", str(src)
    ],
    "papermill": lambda src, out: [
        str(VENV_BIN / "papermill"), "-k", "co", "--cwd", str(src.parent), str(src), str(out)
    ],
    "nbconvert": lambda src, out: [
        str(VENV_BIN / "jupyter-nbconvert"), "--to", "notebook", "--execute", str(src),
        f"--output={out.name}",
    ],
}  # fmt: skip


@pytest.mark.parametrize("client", sorted(HEADLESS))
def test_headless_clients_save_every_outcome_and_the_denial(
    client: str, tmp_path: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    source = write_scenario(tmp_path / "scenario.ipynb")
    out = tmp_path / f"scenario-{client}.ipynb"
    with ScriptedModelServer(SCRIPT) as server:
        run = subprocess.run(
            HEADLESS[client](source, out), env=client_env(co_home, server), cwd=tmp_path,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if client == "papermill":
            # papermill fails a run whose notebook has an error output, tag or not, and
            # says which cell; the notebook is saved all the same.
            assert run.returncode == 1, run.stderr[-3000:]
            assert 'Exception encountered at "In [5]"' in run.stderr, run.stderr[-3000:]
            assert "Unknown magic %stauts" in run.stderr, run.stderr[-3000:]
        else:
            assert run.returncode == 0, run.stderr[-3000:]
        assert server.errors == []
        told = json.dumps(server.requests[-1]["messages"])
    check_saved(out, approved=False)
    assert not (tmp_path / "hello.txt").exists(), "denied: the command never ran"
    assert "denied" in told, "the model learnt that the call was denied"


# -- jupyter console: a person answers y -----------------------------------------------


def test_console_shows_every_outcome_and_asks_before_the_tool(
    tmp_path: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    with ScriptedModelServer(SCRIPT) as server:
        env = terminal_env(tmp_path / "home", co_home, server)
        child = pexpect.spawn(
            str(VENV_BIN / "jupyter-console"), ["--kernel", "co", "--simple-prompt"],
            env=env, cwd=str(tmp_path), encoding="utf-8", timeout=90, dimensions=(40, 100),
        )  # fmt: skip
        shown: list[str] = []
        try:
            child.expect(r"In \[\d+\]: ")
            for cell in CELLS:
                child.sendline(cell)
                if cell == CELLS[1]:
                    child.expect(re.escape("[y] Approve / [n] Deny / [a] Approve all"))
                    asked = child.before
                    child.sendline("y")
                child.expect(r"In \[\d+\]: ")
                shown.append(_ANSI.sub("", child.before))
            child.sendeof()  # Ctrl-D: `exit` would be a prompt to Co
            if child.expect([r"\(\[y\]/n\)", pexpect.EOF]) == 0:
                child.sendline("y")
                child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        assert server.errors == []
    assert "Paris is the capital of France." in shown[0], shown[0]
    assert "wants to run run_shell_command" in _ANSI.sub("", asked), asked
    assert "Done with the file." in shown[1], shown[1]
    assert (tmp_path / "hello.txt").read_text().strip() == "hello"
    assert "sandbox-ok" in shown[2], shown[2]
    assert "compat:scripted" in shown[3], shown[3]
    assert "Unknown magic %stauts" in shown[4], shown[4]


# -- JupyterLab and Notebook 7: a person clicks Approve ----------------------------------

PANEL = "window.jupyterapp.shell.currentWidget"
LOAD = 90_000  # ms


@pytest.mark.browser
@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_browser_clients_show_and_save_every_outcome(
    app: str, tmp_path: Path, co_home: Path
) -> None:
    ensure_kernelspec()
    root = tmp_path / "notebooks"
    root.mkdir()
    notebook = write_scenario(root / "scenario.ipynb")
    with ScriptedModelServer(SCRIPT) as server:
        env = scripted_env(co_home, server)
        jupyter = start_server(root, env=env, app=app, base=tmp_path / "jupyter")
        try:
            with chromium_page() as page:
                page.set_default_timeout(60_000)
                if app == "lab":
                    page.goto(jupyter.url(f"lab/tree/{notebook.name}", reset=""))
                else:
                    page.goto(jupyter.url(f"notebooks/{notebook.name}"))
                page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=LOAD)
                kernel = f"{PANEL}.sessionContext.session?.kernel"
                page.wait_for_function(f"() => {kernel}?.status === 'idle'", timeout=LOAD)
                # Not awaited: the command resolves once every cell has run, after the click.
                page.evaluate(
                    "() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }"
                )
                page.get_by_role("button", name="Approve", exact=True).click()
                last = f"{PANEL}.context.model.cells.get({len(CELLS) - 1})"
                page.wait_for_function(
                    f"() => {last}.executionCount !== null && {kernel}.status === 'idle'"
                )
                # The outputs' text content: JupyterLab skips rendering cells scrolled out
                # of view, whose inner text is then empty.
                shown = "\n".join(
                    page.locator(".jp-NotebookPanel .jp-OutputArea").all_text_contents()
                )
                page.evaluate(f"() => {PANEL}.context.save()")
        finally:
            jupyter.stop()
        assert server.errors == []
    for expected in (
        "Paris is the capital of France.",
        "run_shell_command",
        "Done with the file.",
        "sandbox-ok",
        "compat:scripted",
        "Unknown magic %stauts",
    ):
        assert expected in shown, (expected, shown)
    assert (root / "hello.txt").read_text().strip() == "hello"
    check_saved(notebook, approved=True)
