"""One colour and one wording per decision in JupyterLab: real server, Chromium, clicks.

The same call waits on the card in the cell and in the status item's panel: each answer's
button has the same words and the same colour in both (Deny red, not grey; Approve all
orange, not red). Denied, the tool card calls the change what was proposed and not
applied; saved and reloaded, its one-line summary keeps the call's own argument order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.lab_cells import wait_for_prompt
from .jupyterlab import co_lab, open_notebook, run_cell, save_notebook
from .test_cards_browser import TRANSPARENT, background, open_tool_card

pytestmark = pytest.mark.browser

CHOICES = {"approve": "Approve", "deny": "Deny", "approve_all": "Approve all"}


def test_one_colour_and_word_per_decision_and_a_denied_change_says_so(tmp_path: Path) -> None:
    # The model's own order: path first. A saved notebook sorts keys (content, path).
    write = {"path": "notes.md", "content": "# Notes\nnew line\n"}
    script = [
        {"tool_calls": [{"name": "write_file", "arguments": write}]},
        {"expect": {"tool_result_contains": "denied"}, "text": "Left it alone."},
    ]
    with co_lab(tmp_path, ["Write the notes"], script) as co:
        page = co.page
        (co.notebook.parent / "notes.md").write_text("# Notes\nold line\n")
        open_notebook(page, co.lab.url(f"lab/tree/{co.notebook.name}", reset=""))
        cell = run_cell(page, 0)
        card = cell.locator(".co-approval-card")
        card.get_by_role("button", name="Approve", exact=True).wait_for(timeout=90_000)
        on_card = {
            choice: background(card.get_by_role("button", name=label, exact=True))
            for choice, label in CHOICES.items()
        }

        page.locator(".co-StatusBar-waiting").wait_for(timeout=60_000)
        page.locator(".co-StatusBar").click()
        panel = page.locator(".co-Pending")
        panel.get_by_text("notes.md").first.wait_for(timeout=30_000)
        in_panel = {
            choice: background(panel.locator(f".co-Pending-{choice}")) for choice in CHOICES
        }
        labels = {c: panel.locator(f".co-Pending-{c}").inner_text() for c in CHOICES}
        assert labels == CHOICES
        assert in_panel == on_card, (in_panel, on_card)
        assert TRANSPARENT not in on_card.values() and len(set(on_card.values())) == 3
        page.keyboard.press("Escape")

        card.get_by_role("button", name="Deny", exact=True).click()
        cell.get_by_text("Left it alone.").wait_for(timeout=60_000)
        wait_for_prompt(cell, "[1]:")
        assert (co.notebook.parent / "notes.md").read_text() == "# Notes\nold line\n"
        tool = open_tool_card(cell)
        heading = tool.locator(".co-ToolCard-change .co-ToolCard-heading")
        assert heading.inner_text().startswith("Proposed change, not applied (+"), (
            heading.inner_text()
        )

        save_notebook(page, co.notebook)
        page.reload()
        line = page.locator(".jp-Notebook .jp-Cell").first.locator(".co-ToolCard-argsLine")
        line.wait_for(timeout=90_000)
        assert line.inner_text().startswith("(path='notes.md', content="), line.inner_text()
