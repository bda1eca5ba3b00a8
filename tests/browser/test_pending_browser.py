"""A waiting approval survives a reload: real server, real Chromium, real kernel.

Saved or not, the reloaded page (or a second tab) shows the card in its cell: unsaved,
the kernel's ``co.approvals`` comm brings it. The Co status item says what waits and its
panel answers too, and so does Alt+Y. The rest of the turn reaches its cell on a page that
did not send the request (a reload, a second tab). A restart draws the waiting card
cancelled.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from ..support.scripted import shell
from .jupyterlab import CoLab, co_lab, open_notebook, run_cell, save_notebook

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def wait_for_file(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} was not written"
        time.sleep(0.1)


def test_reload_unsaved_then_approve_from_the_status_item(tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    script = [
        {"tool_calls": [shell("touch first")]},
        {"tool_calls": [shell("touch second")]},
        {"text": "Both made."},
    ]
    with co_lab(tmp_path, ["Make two files"], script) as co:
        page, folder = co.page, co.notebook.parent
        page.on("dialog", lambda dialog: dialog.accept())  # "leave unsaved page?"
        open_notebook(page, co.lab.url(f"lab/tree/{co.notebook.name}", reset=""))
        cell = run_cell(page, 0)
        cell.get_by_role("button", name="Approve", exact=True).wait_for(timeout=90_000)

        page.reload()
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
        # The card comes back into its cell, and the status item says what waits.
        cell.get_by_role("button", name="Approve", exact=True).wait_for(timeout=60_000)
        waiting = page.locator(".co-StatusBar-waiting")
        waiting.wait_for(timeout=60_000)
        assert waiting.inner_text() == "waiting for approval: run_shell_command"
        page.locator(".co-StatusBar").click()
        panel = page.locator(".co-Pending")
        panel.get_by_text("✋ Co wants to run run_shell_command").wait_for(timeout=30_000)
        assert "touch first" in panel.inner_text()
        page.screenshot(path=str(ARTIFACTS / "pending-panel.png"))
        panel.locator(".co-Pending-approve").click()
        panel.wait_for(state="detached", timeout=30_000)  # nothing waits: it closes
        wait_for_file(folder / "first")

        # The next call of the same turn: the status item's panel shows it, and Alt+Y
        # from the notebook answers it without any card on the page.
        cell.locator('.co-ToolCard[data-status="waiting"]').wait_for(timeout=60_000)
        waiting.wait_for(timeout=60_000)
        time.sleep(1)  # the comm's list of what waits arrives beside the card
        page.locator(".co-StatusBar").click()
        panel.get_by_text("touch second").wait_for(timeout=60_000)
        page.keyboard.press("Escape")
        page.locator(".jp-Notebook .jp-InputPrompt").first.click()
        page.keyboard.press("Alt+y")
        wait_for_file(folder / "second")
        waiting.wait_for(state="detached", timeout=60_000)
        # The rest of the turn reaches the cell, found by its id (it held nothing).
        cell.get_by_text("Both made.").wait_for(timeout=60_000)
        # Both calls' cards: the first one's update finds no card shown before the
        # reload, and joins the cell as a new output.
        done = cell.locator('.co-ToolCard[data-status="ok"]')
        done.nth(1).wait_for(timeout=30_000)
        assert done.count() == 2


def test_all_tabs_closed_the_unseen_call_is_denied_and_the_next_page_says_so(
    tmp_path: Path,
) -> None:
    script = [
        {"tool_calls": [shell("touch made")]},
        {"expect": {"tool_result_contains": "Nobody answered"}, "text": "Not made."},
    ]
    with co_lab(tmp_path, ["Make a file"], script, CO_APPROVAL_TIMEOUT_UNSEEN="2") as co:
        page = co.page
        page.on("dialog", lambda dialog: dialog.accept())
        open_notebook(page, co.lab.url(f"lab/tree/{co.notebook.name}", reset=""))
        cell = run_cell(page, 0)
        cell.get_by_role("button", name="Approve", exact=True).wait_for(timeout=90_000)
        page.goto("about:blank")  # every tab closed: nobody sees the card

        deadline = time.monotonic() + 60
        while len(co.server.requests) < 2:  # the model heard of the denial
            assert time.monotonic() < deadline, "the unseen call was never denied"
            time.sleep(0.2)
        page.goto(co.url)
        page.get_by_text(
            "Co: run_shell_command — timed out (denied): no open page showed it for 2 s."
        ).wait_for(timeout=90_000)
        page.screenshot(path=str(ARTIFACTS / "pending-unseen.png"))
        assert not (co.notebook.parent / "made").exists()


ONCE = [
    {"text": "I will log it.", "tool_calls": [shell("echo ran >> runs.txt")]},
    {"expect": {"tool_result_contains": "exit code 0"}, "text": "Logged it once."},
]


def assert_turn_finished_in(cell: Any) -> None:
    """The answer, the tool chip and the card of the turn in ONCE, final, in ``cell``."""
    cell.get_by_text("Logged it once.").wait_for(timeout=60_000)
    cell.locator('.co-ToolCard[data-status="ok"][data-decision="approved"]').wait_for(
        timeout=30_000
    )
    assert cell.locator('.co-ToolCard[data-status="waiting"]').count() == 0
    cell.get_by_text("✅ Approved", exact=True).wait_for(timeout=30_000)
    assert cell.get_by_role("button", name="Approve", exact=True).count() == 0


def ask(co: CoLab) -> Any:
    """Open the notebook, run its first cell, wait for the card; the cell."""
    open_notebook(co.page, co.lab.url(f"lab/tree/{co.notebook.name}", reset=""))
    cell = run_cell(co.page, 0)
    cell.get_by_role("button", name="Approve", exact=True).wait_for(timeout=90_000)
    return cell


def test_reload_unsaved_while_a_call_waits_its_card_is_in_the_cell_and_decides(
    tmp_path: Path,
) -> None:
    with co_lab(tmp_path, ["Log a run"], ONCE) as co:
        co.page.on("dialog", lambda dialog: dialog.accept())  # "leave unsaved page?"
        ask(co)
        co.page.reload()  # never saved: the file holds no output of the turn
        cell = open_notebook(co.page, co.url, idle=False)
        approve = cell.get_by_role("button", name="Approve", exact=True)
        approve.wait_for(timeout=90_000)
        assert "Co wants to run run_shell_command" in cell.inner_text()
        assert "echo ran >> runs.txt" in cell.inner_text()
        co.page.screenshot(path=str(ARTIFACTS / "pending-reload-unsaved-card.png"))
        approve.click()
        assert_turn_finished_in(cell)
        assert (co.notebook.parent / "runs.txt").read_text() == "ran\n"


def test_second_tab_of_an_unsaved_notebook_shows_the_waiting_card_and_denies_it(
    tmp_path: Path,
) -> None:
    script = [
        ONCE[0],
        {"expect": {"tool_result_contains": "denied"}, "text": "Not logged."},
    ]
    with co_lab(tmp_path, ["Log a run"], script) as co:
        asking = ask(co)  # not saved
        second = co.page.context.new_page()
        other = open_notebook(second, co.url, idle=False)
        deny = other.get_by_role("button", name="Deny", exact=True)
        deny.wait_for(timeout=90_000)
        deny.click()
        other.get_by_text("Not logged.").wait_for(timeout=60_000)
        asking.get_by_text("Not logged.").wait_for(timeout=60_000)
        assert other.get_by_role("button", name="Approve", exact=True).count() == 0
        assert not (co.notebook.parent / "runs.txt").exists()


def test_reload_saved_then_approve_on_the_card_the_answer_reaches_the_cell(
    tmp_path: Path,
) -> None:
    with co_lab(tmp_path, ["Log a run"], ONCE) as co:
        ask(co)
        save_notebook(co.page, co.notebook)

        co.page.reload()
        cell = open_notebook(co.page, co.url, idle=False)
        approve = cell.get_by_role("button", name="Approve", exact=True)
        approve.wait_for(timeout=90_000)
        approve.click()
        assert_turn_finished_in(cell)
        co.page.screenshot(path=str(ARTIFACTS / "pending-reload-saved.png"))
        assert (co.notebook.parent / "runs.txt").read_text() == "ran\n"


def test_two_tabs_approve_in_the_second_both_show_the_end_and_it_ran_once(
    tmp_path: Path,
) -> None:
    with co_lab(tmp_path, ["Log a run"], ONCE) as co:
        first = co.page
        asking = ask(co)
        save_notebook(first, co.notebook)

        second = first.context.new_page()  # a second tab of the same browser profile
        other = open_notebook(second, co.url, idle=False)
        approve = other.get_by_role("button", name="Approve", exact=True)
        approve.wait_for(timeout=90_000)
        # A card, not the monospace text record.
        assert other.locator(".co-approval-card").is_visible()
        assert other.get_by_text("Decision: waiting").count() == 0
        approve.click()
        assert_turn_finished_in(other)
        assert_turn_finished_in(asking)
        # The asking tab's Alt+Y after the decision decides nothing more.
        first.bring_to_front()
        asking.locator(".jp-InputPrompt").click()
        first.keyboard.press("Alt+y")
        second.screenshot(path=str(ARTIFACTS / "pending-second-tab.png"))
        assert (co.notebook.parent / "runs.txt").read_text() == "ran\n"
        assert other.get_by_text("Logged it once.").count() == 1


def test_restart_while_a_card_waits_draws_it_cancelled_and_resume_lists_the_turn(
    tmp_path: Path,
) -> None:
    with co_lab(tmp_path, ["Please log a run", "%resume"], ONCE[:1]) as co:
        page = co.page
        cell = ask(co)
        page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
        page.locator(".lm-Menu-itemLabel").get_by_text("Restart Kernel…", exact=True).click()
        page.locator(".jp-Dialog").get_by_role("button", name="Confirm Kernel Restart").click()

        cell.get_by_text("Cancelled (the kernel restarted)").wait_for(timeout=60_000)
        # A card, not the monospace text record.
        cancelled = cell.locator('.co-approval[data-decision="cancelled"]')
        assert "Co asked to run run_shell_command" in cancelled.inner_text()
        assert cell.locator("pre", has_text="Cancelled").count() == 0
        cell.locator('.co-ToolCard[data-status="interrupted"]').wait_for(timeout=30_000)
        assert cell.get_by_text("Waiting for your decision").count() == 0
        assert cell.locator(".widget-button").count() == 0
        page.screenshot(path=str(ARTIFACTS / "pending-restart.png"))

        page.get_by_text("Co | Idle").wait_for(timeout=90_000)
        resume = run_cell(page, 1)
        resume.locator(".jp-OutputArea").get_by_text("Please log a run").wait_for(timeout=60_000)
        assert "1 turn(s)" in resume.inner_text()
        assert not (co.notebook.parent / "runs.txt").exists()
