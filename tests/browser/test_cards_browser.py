"""Co's cards as a person sees them in JupyterLab: real server, Chromium, clicks.

A decided approval card says what was decided and has no buttons; the arguments and the
change show once, coloured; the status item's panel has styled buttons and closes once
nothing waits; a page reloaded while a cell waits keeps the kernel's state and ends the
cell with its execution count and cards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..support.lab_cells import wait_for_prompt
from .jupyterlab import co_lab, open_notebook, run_cell

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TRANSPARENT = "rgba(0, 0, 0, 0)"


def background(locator: Any) -> str:
    return locator.evaluate("node => getComputedStyle(node).backgroundColor")


def open_tool_card(cell: Any) -> Any:
    card = cell.locator(".co-ToolCard").first
    if card.get_attribute("open") is None:
        card.locator("summary").click()
    return card


def test_decided_card_one_coloured_diff_and_history_table(tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    edit = {"path": "notes.md", "old": "old line", "new": "new line"}
    script = [
        {"tool_calls": [{"name": "edit_file", "arguments": edit}]},
        {"expect": {"tool_result_contains": "notes.md"}, "text": "Edited the notes."},
    ]
    with co_lab(tmp_path, ["Edit the notes", "%history"], script) as co:
        page = co.page
        (co.notebook.parent / "notes.md").write_text("# Notes\nold line\n")
        open_notebook(page, co.lab.url(f"lab/tree/{co.notebook.name}", reset=""))
        cell = run_cell(page, 0)
        card = cell.locator(".co-approval-card")
        card.get_by_role("button", name="Approve", exact=True).wait_for(timeout=90_000)

        # Waiting: the card shows the change in colour; the tool card does not repeat it.
        added = card.get_by_text("+new line", exact=True)
        assert background(added) != TRANSPARENT
        assert background(card.get_by_text("-old line", exact=True)) != TRANSPARENT
        tool = open_tool_card(cell)
        tool.locator(".co-ToolCard-hint").wait_for()
        assert tool.locator(".co-ToolCard-args, .co-ToolCard-change").count() == 0
        assert cell.get_by_text("+new line", exact=True).count() == 1
        page.screenshot(path=str(ARTIFACTS / "cards-waiting.png"))

        card.get_by_role("button", name="Approve", exact=True).click()
        cell.get_by_text("Edited the notes.").wait_for(timeout=60_000)
        wait_for_prompt(cell, "[1]:")
        assert (co.notebook.parent / "notes.md").read_text() == "# Notes\nnew line\n"

        # Decided: one line saying what was decided, no buttons, no second copy.
        card.get_by_text("✅ Approved", exact=True).wait_for(timeout=30_000)
        assert "asked to run edit_file" in card.inner_text()
        assert "wants to run" not in card.inner_text()
        assert card.locator("button").count() == 0
        tool = open_tool_card(cell)
        tool.locator(".co-ToolCard-change .co-Diff-add").wait_for()
        assert background(tool.locator(".co-Diff-add")) != TRANSPARENT
        assert cell.get_by_text("+new line", exact=True).count() == 1
        page.screenshot(path=str(ARTIFACTS / "cards-decided.png"))

        # %history: its first table's header names the conversation; no empty header row.
        history = run_cell(page, 1)
        history.locator("table").first.wait_for(timeout=60_000)
        headers = history.locator("table").first.locator("th").all_inner_texts()
        assert headers[0] == "Conversation" and headers[1].strip()
        page.screenshot(path=str(ARTIFACTS / "cards-history.png"))


def test_reload_while_waiting_keeps_status_and_ends_the_cell(tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    script = [
        {
            "tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": "touch made"}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 200},
        },
        {
            "expect": {"tool_result_contains": "exit code 0"},
            "text": "Made it.",
            "usage": {"prompt_tokens": 1100, "completion_tokens": 20},
        },
    ]
    with co_lab(tmp_path, ["Make a file"], script) as co:
        page = co.page
        page.on("dialog", lambda dialog: dialog.accept())  # "leave unsaved page?"
        open_notebook(page, co.lab.url(f"lab/tree/{co.notebook.name}", reset=""))
        cell = run_cell(page, 0)
        cell.get_by_role("button", name="Approve", exact=True).wait_for(timeout=90_000)

        page.reload()
        cell = page.locator(".jp-Notebook .jp-Cell").first
        cell.wait_for(timeout=90_000)
        # The kernel is busy with the waiting cell, and says so; the Co item has its model.
        page.get_by_text("Co | Busy").wait_for(timeout=60_000)
        page.wait_for_function(
            "() => document.querySelector('.co-StatusBar-text')?.textContent"
            " === 'Co · compat:scripted · 0 tokens'",
            timeout=60_000,
        )
        assert page.get_by_text("Co | Unknown").count() == 0

        page.locator(".co-StatusBar-waiting").wait_for(timeout=60_000)
        page.locator(".co-StatusBar").click()
        panel = page.locator(".co-Pending")
        panel.get_by_text("touch made").wait_for(timeout=30_000)
        buttons = [panel.locator(f".co-Pending-{c}") for c in ("approve", "deny", "approve_all")]
        colours = [background(b) for b in buttons]
        assert TRANSPARENT not in colours and len(set(colours)) == 3, colours
        assert all(b.evaluate("node => getComputedStyle(node).opacity") == "1" for b in buttons)
        page.screenshot(path=str(ARTIFACTS / "cards-panel.png"))

        buttons[0].click()
        panel.wait_for(state="detached", timeout=30_000)  # closes once nothing waits

        # The rest of the turn: its answer, its decided cards, and the execution count.
        cell.get_by_text("Made it.").wait_for(timeout=60_000)
        cell.locator('.co-ToolCard[data-status="ok"][data-decision="approved"]').wait_for(
            timeout=30_000
        )
        # The decided approval card: the widget's or, on this untrusted page, its HTML.
        cell.locator(".co-approval-card, .co-approval").get_by_text(
            "✅ Approved", exact=True
        ).wait_for(timeout=30_000)
        wait_for_prompt(cell, "[1]:")
        # The turn's tokens, though its execute_reply went to the page before the reload.
        page.wait_for_function(
            "() => document.querySelector('.co-StatusBar-text')?.textContent"
            " === 'Co · compat:scripted · 2.3k tokens · price unknown'",
            timeout=60_000,
        )
        page.screenshot(path=str(ARTIFACTS / "cards-reloaded.png"))
        assert (co.notebook.parent / "made").exists()
