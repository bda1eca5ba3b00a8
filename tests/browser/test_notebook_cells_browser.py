"""The agent reads and edits its notebook in JupyterLab and Notebook 7: real
server, headless Chromium.

The scripted model reads the notebook (it sees a cell the person typed and never saved),
proposes an insert (the card shows the diff; Approve inserts exactly that; Ctrl+Z in
command mode removes it again), proposes another that is denied (the document stays as
it was), and proposes an edit of a cell it read in an older version (refused, nothing
changes). Notebook 7 reads and inserts the same way; an approved run_cell shows its
outputs and the kernel's next execution count in its cell.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import pytest

from .jupyterlab import co_lab, open_notebook, run_cell
from .test_notebook7 import open_notebook as open_notebook7
from .test_notebook7 import run_cell as run_cell7

pytestmark = pytest.mark.browser

CELLS = ".jp-Notebook .jp-Cell"


def sources(page: Any) -> list[str]:
    return page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells"
        ".map(c => c.getSource())"
    )


def prompt_cell(page: Any, text: str) -> Any:
    """The cell whose input is ``text`` (its outputs may quote other cells)."""
    return page.locator(CELLS).filter(has=page.locator(".jp-InputArea", has_text=text))


def wait_until(check: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_read_insert_undo_deny_and_stale_in_jupyterlab(tmp_path: Path) -> None:
    new_cell = [{"kind": "markdown", "source": "## Revenue by month"}]
    stale = hashlib.sha256(b"an older text").hexdigest()[:8]
    script = [
        call("read_notebook"),
        {"expect": {"tool_result_contains": "typed, never saved"}, "text": "I read it."},
        call("insert_cells", index=1, cells=new_cell),
        {"expect": {"tool_result_contains": "Inserted 1 cell(s) at index 1"}, "text": "Added."},
        call("insert_cells", index=0, cells=new_cell),
        {"expect": {"tool_result_contains": "denied"}, "text": "Left as it was."},
        call("edit_cell", cell_id="cell-1", read_hash=stale, source="replaced"),
        {"expect": {"tool_result_contains": "changed since you read it"}, "text": "Stale."},
    ]
    prompts = ["Read my notebook", "draft", "Add a heading", "Add another", "Fix cell 1"]
    with co_lab(tmp_path, prompts, script) as co:
        page = co.page
        open_notebook(page, co.url)
        # The person types into cell 1 and does not save.
        page.locator(CELLS).nth(1).locator(".cm-content").click()
        page.keyboard.press("End")
        page.keyboard.type(" typed, never saved")
        first = run_cell(page, 0)
        first.get_by_text("I read it.").wait_for(timeout=60_000)
        assert "typed, never saved" not in co.notebook.read_text()

        # An insert: the card shows the diff; Approve inserts exactly that cell.
        run_cell(page, 2)
        third = prompt_cell(page, "Add a heading")
        approve = third.get_by_role("button", name="Approve", exact=True)
        approve.wait_for(timeout=60_000)
        shown = third.inner_text()
        assert "+++ new cell 1 (markdown)" in shown and "+## Revenue by month" in shown
        before = sources(page)
        approve.click()
        third.get_by_text("Added.").wait_for(timeout=30_000)
        after = sources(page)
        assert after == [*before[:1], "## Revenue by month", *before[1:]]

        # One undo step removes it: Ctrl+Z in command mode (Co binds it to JupyterLab's
        # undo of cell actions, as Z is).
        page.keyboard.press("Escape")
        page.locator(CELLS).nth(0).locator(".jp-InputPrompt").click()
        page.keyboard.press("Control+z")
        wait_until(lambda: sources(page) == before)

        # Denied: the document stays as it was.
        run_cell(page, 3)
        fourth = prompt_cell(page, "Add another")
        deny = fourth.get_by_role("button", name="Deny", exact=True)
        deny.wait_for(timeout=60_000)
        deny.click()
        fourth.get_by_text("Left as it was.").wait_for(timeout=30_000)
        assert sources(page) == before

        # A proposal against an older version of the cell is refused: no card, no change.
        run_cell(page, 4)
        fifth = prompt_cell(page, "Fix cell 1")
        fifth.get_by_text("Stale.").wait_for(timeout=60_000)
        assert fifth.get_by_role("button", name="Approve", exact=True).count() == 0
        # (Shift+Enter on the last cell added an empty one below it, as it always does.)
        assert sources(page) == [*before, ""]


def test_read_and_approved_insert_in_notebook7(tmp_path: Path) -> None:
    new_cell = [{"kind": "python", "source": "total = 1200"}]
    script = [
        call("read_notebook"),
        {"expect": {"tool_result_contains": "typed in Notebook 7"}, "text": "I read it."},
        call("insert_cells", index=2, cells=new_cell),
        {"expect": {"tool_result_contains": "Inserted 1 cell(s) at index 2"}, "text": "Added."},
    ]
    with co_lab(tmp_path, ["Read my notebook", "draft"], script, app="notebook") as co:
        page = co.page
        page.set_default_timeout(60_000)
        open_notebook7(page, co.lab, co.notebook.name)
        page.locator(".jp-Cell .jp-InputArea-editor").nth(1).click()
        page.keyboard.press("End")
        page.keyboard.type(" typed in Notebook 7")
        run_cell7(page, 0)
        page.get_by_text("I read it.").wait_for()
        before = sources(page)
        page.locator(".jp-Cell .jp-InputArea-editor").nth(0).click()
        page.keyboard.type(" and add a cell")
        run_cell7(page, 0)
        page.get_by_role("button", name="Approve", exact=True).click()
        page.get_by_text("Added.").wait_for()
        after = sources(page)
        assert after[2] == "%%python\ntotal = 1200"
        assert after[:2] == ["Read my notebook and add a cell", before[1]]


def test_run_cell_puts_its_outputs_into_the_cell_in_jupyterlab(tmp_path: Path) -> None:
    source = "%%python\nx = 6 * 7\nprint('x is', x)"
    script = [
        call(
            "run_cell", cell_id="cell-1", read_hash=hashlib.sha256(source.encode()).hexdigest()[:8]
        ),
        {"expect": {"tool_result_contains": "x is 42"}, "text": "It printed 42."},
    ]
    with co_lab(tmp_path, ["Run the next cell", source], script) as co:
        page = co.page
        open_notebook(page, co.url)
        first = run_cell(page, 0)
        approve = first.get_by_role("button", name="Approve", exact=True)
        approve.wait_for(timeout=60_000)
        assert "Runs cell 1 (python, id cell-1) on the host" in first.inner_text()
        approve.click()
        first.get_by_text("It printed 42.").wait_for(timeout=30_000)
        target = prompt_cell(page, "x = 6 * 7")
        target.locator(".jp-OutputArea-output", has_text="x is 42").wait_for(timeout=10_000)
        # Its prompt shows the kernel's next count, as when the person runs it: [1] is the
        # prompt cell's (once its turn has ended: the answer shows before the reply arrives).
        first.locator(".jp-InputPrompt", has_text="[1]:").wait_for(timeout=30_000)
        target.locator(".jp-InputPrompt", has_text="[2]:").wait_for(timeout=10_000)
