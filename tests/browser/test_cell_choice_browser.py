"""One proposal of several cells, approved in part, in JupyterLab and Notebook 7:
real server, headless Chromium.

The scripted model proposes three cells in one call. A script's click on a cell's control
changes nothing; the person rejects the middle one with a real click and approves: exactly
cells 1 and 3 appear, and one Ctrl+Z (command mode) removes both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .jupyterlab import co_lab, open_notebook, run_cell
from .test_notebook7 import open_notebook as open_notebook7
from .test_notebook7 import run_cell as run_cell7
from .test_notebook_cells_browser import CELLS, call, sources, wait_until

pytestmark = pytest.mark.browser

THREE = [
    {"kind": "markdown", "source": "## First"},
    {"kind": "markdown", "source": "## Middle, rejected"},
    {"kind": "markdown", "source": "## Third"},
]

SCRIPT = [
    call("insert_cells", index=1, cells=THREE),
    {
        "expect": {"tool_result_contains": "Inserted 2 of the 3 proposed cells at index 1"},
        "text": "Added two.",
    },
]

TOGGLE = ".co-part-toggle[data-part='{}']"
PART = "cell {} of 3: new Markdown cell"
"""How the card names a cell: once, one way (its diff drops the notebook's numbering)."""


def choose_and_approve(page: Any, scope: Any) -> list[str]:
    """On the waiting card: a scripted click on cell 1's control (nothing happens), a real
    click rejecting cell 2, then a real Approve. Returns the sources before it applied."""
    approve = scope.get_by_role("button", name="Approve", exact=True)
    approve.wait_for(timeout=60_000)
    for i in range(3):
        assert scope.locator(TOGGLE.format(i)).inner_text() == f"✓ Apply {PART.format(i + 1)}"
    # The diffs do not name the cells a second way, by where they land ("new cell 2").
    assert not [t for t in scope.locator(".co-part pre").all_inner_texts() if "new cell" in t]
    # A page script clicks cell 1's control, and a synthetic event on cell 3's: ignored.
    page.evaluate(
        """() => {
            document.querySelector(".co-part-toggle[data-part='0']").click();
            document.querySelector(".co-part-toggle[data-part='2']").dispatchEvent(
                new MouseEvent('click', {bubbles: true}));
        }"""
    )
    assert scope.locator(TOGGLE.format(0)).inner_text() == f"✓ Apply {PART.format(1)}"
    assert scope.locator(TOGGLE.format(2)).inner_text() == f"✓ Apply {PART.format(3)}"
    scope.locator(TOGGLE.format(1)).click()
    assert scope.locator(TOGGLE.format(1)).inner_text() == (
        f"✗ Rejected {PART.format(2)} (click to apply it)"
    )
    before = sources(page)
    approve.click()
    return before


def test_reject_one_cell_of_three_in_jupyterlab(tmp_path: Path) -> None:
    with co_lab(tmp_path, ["Add three headings", "draft"], SCRIPT) as co:
        page = co.page
        open_notebook(page, co.url)
        first = run_cell(page, 0)
        before = choose_and_approve(page, first)
        first.get_by_text("Added two.").wait_for(timeout=30_000)
        assert sources(page) == [before[0], "## First", "## Third", *before[1:]]
        assert "Applied 2 of 3 cells (cells 1, 3)" in first.inner_text()
        # The tool card's badge says the same, outlined as an approval, not an error.
        badge = first.locator(".co-ToolCard-decision")
        assert badge.inner_text() == "applied 2 of 3 cells (cells 1, 3)"
        assert badge.get_attribute("data-allowed") == "true"

        # One undo step removes both: Ctrl+Z in command mode.
        page.keyboard.press("Escape")
        page.locator(CELLS).nth(0).locator(".jp-InputPrompt").click()
        page.keyboard.press("Control+z")
        wait_until(lambda: sources(page) == before)


def test_reject_one_cell_of_three_in_notebook7(tmp_path: Path) -> None:
    with co_lab(tmp_path, ["Add three headings", "draft"], SCRIPT, app="notebook") as co:
        page = co.page
        page.set_default_timeout(60_000)
        open_notebook7(page, co.lab, co.notebook.name)
        run_cell7(page, 0)
        before = choose_and_approve(page, page)
        page.get_by_text("Added two.").wait_for()
        assert sources(page) == [before[0], "## First", "## Third", *before[1:]]
        page.keyboard.press("Escape")
        page.locator(CELLS).nth(0).locator(".jp-InputPrompt").click()
        page.keyboard.press("Control+z")
        wait_until(lambda: sources(page) == before)
