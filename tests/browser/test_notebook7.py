"""Co's extension in Notebook 7 (the `notebook` package): a real server, headless Chromium.

Notebook 7 has no status bar, and its main area holds only the page's own widget: Co's
status (model, tokens, YOLO, what waits for approval) sits in each Co notebook's
toolbar, and "Co: Open Activity" opens "Co Activity" in the right side panel.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import ensure_kernelspec
from ..support.lab_server import REPO, JupyterServer, start_server
from .conftest import FAILED
from .jupyterlab import assert_activity_columns_intact, chromium_page, scripted_env

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = REPO / "test-artifacts"
LOAD = 90_000  # ms: the first load on a small CI machine
PANEL = "window.jupyterapp.shell.currentWidget"


def co_notebook(path: Path, cells: list[str]) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "co", "display_name": "Co", "language": "co"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, path)
    return path.name


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer([]) as server:
        yield server


@pytest.fixture(scope="module")
def notebook7(
    tmp_path_factory: pytest.TempPathFactory, model: ScriptedModelServer
) -> Iterator[JupyterServer]:
    ensure_kernelspec()
    tmp_path = tmp_path_factory.mktemp("notebook7")
    root = tmp_path / "notebooks"
    root.mkdir()
    home = tmp_path / "co-home"
    home.mkdir()
    env = scripted_env(home, model)
    server = start_server(root, env=env, app="notebook", base=tmp_path / "jupyter")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(request: pytest.FixtureRequest) -> Iterator[Any]:
    with chromium_page() as page:
        page.set_default_timeout(60_000)
        yield page
        if request.node.stash.get(FAILED, False):
            shot(page, f"failed-{request.node.name}")


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"notebook7-{name}.png"))


def open_notebook(page: Any, server: JupyterServer, name: str) -> None:
    """Open a notebook and wait until its Co kernel is up and idle."""
    page.goto(server.url(f"notebooks/{name}"))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=LOAD)
    page.wait_for_function(
        f"() => {PANEL}?.sessionContext?.session?.kernel?.status === 'idle'", timeout=LOAD
    )


def run_cell(page: Any, index: int) -> None:
    page.locator(".jp-Cell .jp-InputArea-editor").nth(index).click()
    page.keyboard.press("Shift+Enter")


def test_toolbar_shows_model_tokens_yolo_and_what_waits(
    page: Any, notebook7: JupyterServer, model: ScriptedModelServer
) -> None:
    model.extend(
        [
            {
                "tool_calls": [
                    {"name": "run_shell_command", "arguments": {"cmd": "echo n7 > n7.txt"}}
                ],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 200},
            },
            {
                "text": "Written in Notebook 7.",
                "usage": {"prompt_tokens": 1100, "completion_tokens": 20},
            },
        ]
    )
    name = co_notebook(notebook7.root / "n7.ipynb", ["Write a file", "%yolo on"])
    open_notebook(page, notebook7, name)
    item = page.locator(".jp-NotebookPanel-toolbar .co-ToolbarStatus")
    item.wait_for()
    page.wait_for_function(
        "() => document.querySelector('.co-ToolbarStatus .co-StatusBar-text')?.textContent"
        " === 'Co · compat:scripted · 0 tokens'"
    )

    run_cell(page, 0)
    approve = page.get_by_role("button", name="Approve", exact=True)
    approve.wait_for()
    waiting = item.locator(".co-StatusBar-waiting")
    waiting.wait_for()
    assert waiting.inner_text() == "waiting for approval: run_shell_command"
    page.wait_for_function(f"() => {PANEL}.sessionContext.session.kernel.status === 'busy'")
    shot(page, "waiting")

    approve.click()
    page.wait_for_selector("text=Written in Notebook 7.")
    page.wait_for_function(
        "() => document.querySelector('.co-ToolbarStatus .co-StatusBar-text')?.textContent"
        " === 'Co · compat:scripted · 2.3k tokens · price unknown'"
    )
    assert waiting.count() == 0
    assert (notebook7.root / "n7.txt").exists()

    run_cell(page, 1)  # %yolo on
    item.locator(".co-StatusBar-yolo").wait_for()
    shot(page, "toolbar-yolo")
    assert not model.errors, model.errors


def test_agent_activity_opens_in_the_right_panel(
    page: Any, notebook7: JupyterServer, model: ScriptedModelServer
) -> None:
    model.extend(
        [
            {"tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": "echo a > a.txt"}}]},
            {"text": "Done."},
        ]
    )
    name = co_notebook(notebook7.root / "activity.ipynb", ["Write a"])
    open_notebook(page, notebook7, name)
    run_cell(page, 0)
    page.get_by_role("button", name="Approve", exact=True).click()
    page.wait_for_selector("text=Done.")

    # As a person does it: the command palette, then the command.
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:activate-command-palette')")
    palette = page.locator(".lm-CommandPalette-input:visible")
    palette.wait_for()
    palette.fill("Co: Open Activity")
    page.locator(".lm-CommandPalette-item:visible", has_text="Co: Open Activity").first.click()

    panel = page.locator("#jp-right-stack .co-Activity")
    panel.wait_for()
    assert panel.is_visible()
    row = panel.locator(
        ".co-Activity-calls tbody tr[data-tool=run_shell_command][data-decision=approved]"
    )
    row.first.wait_for()
    assert "echo a > a.txt" in row.first.inner_text()
    # Narrow as the side panel is, the panel names itself and keeps every column whole:
    # its tables scroll sideways inside it. The session names its notebook.
    title = panel.locator(".co-Activity-title")
    assert title.is_visible() and title.inner_text() == "Co Activity"
    right = page.locator("#jp-right-stack").bounding_box()
    box = panel.bounding_box()
    assert right is not None and box is not None
    assert box["x"] + box["width"] <= right["x"] + right["width"] + 1
    session = panel.locator(".co-Activity-sessions tbody tr").first
    assert session.locator("td").nth(1).inner_text() == "activity.ipynb"
    assert_activity_columns_intact(panel)
    # The notebook is still the page: the panel sits beside it, not instead of it.
    assert page.locator(".jp-NotebookPanel .jp-Cell").first.is_visible()
    shot(page, "activity")
    assert not model.errors, model.errors
