"""The activity panel tells where each call stands: real JupyterLab, Chromium, kernel, SQLite.

A call held at approval reads as waiting (not as done), then as approved, denied or timed
out once decided; each session names its notebook; every column stays whole, in
JupyterLab's main area and in Notebook 7's narrow side panel (``test_notebook7.py``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from ..support.scripted import shell
from .jupyterlab import (
    assert_activity_columns_intact,
    co_lab,
    open_notebook,
    open_palette_command,
    run_cell,
    write_notebook,
)

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Long enough that a table that cuts its cells would cut it.
LONG = "touch approved && echo " + "the-target-of-this-call-is-long-" * 5
CALL = ".co-Activity-calls tbody tr[data-tool=run_shell_command]"


def show_tab(page: Any, label: str) -> None:
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=label).first.click()


def refreshed(page: Any, selector: str, count: int = 1, timeout: float = 60) -> Any:
    """Refresh the panel until ``count`` rows match ``selector``; those rows."""
    rows = page.locator(f".co-Activity {selector}")
    deadline = time.monotonic() + timeout
    while rows.count() < count:
        assert time.monotonic() < deadline, f"no {count} row(s) {selector} in the panel"
        page.locator(".co-Activity-refresh").click()
        page.wait_for_timeout(500)
    return rows


def answer(cell: Any, label: str) -> None:
    """Click ``label`` on the card that waits (a decided card's buttons are disabled)."""
    button = cell.get_by_role("button", name=label, exact=True).and_(cell.locator("button:enabled"))
    button.wait_for(timeout=60_000)
    button.click()


def decision_cells(page: Any) -> list[tuple[str, str, str]]:
    """(verdict class, decision text, status text) of each shell call, oldest first."""
    cells = page.locator(f".co-Activity {CALL}").evaluate_all(
        "rows => rows.map(r => [r.querySelector('.co-Activity-decision').className,"
        " r.cells[5].textContent, r.cells[6].textContent])"
    )
    return [tuple(c) for c in reversed(cells)]


def test_a_call_reads_waiting_then_approved_denied_timed_out_with_its_notebook(
    tmp_path: Path,
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    script = [
        {"tool_calls": [shell(LONG)]},
        {"tool_calls": [shell("touch denied")]},
        {"tool_calls": [shell("touch late")]},
        {"text": "Done with the three."},
    ]
    with co_lab(tmp_path, [], script, CO_APPROVAL_TIMEOUT="45") as co:
        page, root = co.page, co.notebook.parent
        (root / "work").mkdir()
        write_notebook(root / "work" / "analysis.ipynb", ["Make three files"])
        open_notebook(page, co.lab.url("lab/tree/work/analysis.ipynb", reset=""))
        cell = run_cell(page, 0)
        cell.get_by_role("button", name="Approve", exact=True).wait_for(timeout=90_000)

        # Held at approval: waiting, nothing done, and the session names its notebook.
        open_palette_command(page, "Co: Open Activity").click()
        waiting = refreshed(page, f"{CALL}[data-status=waiting]")
        assert decision_cells(page) == [
            ("co-Activity-decision co-verdict-waiting", "waiting for approval · nobody yet", "waiting")
        ]  # fmt: skip
        assert LONG in waiting.first.inner_text()
        session = page.locator(".co-Activity-sessions tbody tr").first
        assert session.locator("td").nth(1).inner_text() == "work/analysis.ipynb"
        assert "work/analysis.ipynb" in page.locator("select[name=session]").inner_text()
        assert_activity_columns_intact(page.locator(".co-Activity"))
        page.screenshot(path=str(ARTIFACTS / "activity-waiting.png"))
        assert not (root / "work" / "approved").exists()

        show_tab(page, "analysis.ipynb")
        answer(cell, "Approve")
        page.get_by_text("touch denied").first.wait_for(timeout=60_000)  # the second call
        answer(cell, "Deny")
        page.get_by_text("touch late").first.wait_for(timeout=60_000)  # the third

        show_tab(page, "Co Activity")
        refreshed(page, CALL, count=3)
        assert decision_cells(page)[2][1:] == ("waiting for approval · nobody yet", "waiting")
        assert decision_cells(page)[:2] == [
            ("co-Activity-decision co-verdict-approved", "approved · by you", "done"),
            ("co-Activity-decision co-verdict-denied", "denied · by you", "denied"),
        ]
        # Nobody answers the third: it times out.
        refreshed(page, f'{CALL}[data-decision="timed out"]', timeout=120)
        assert decision_cells(page) == [
            ("co-Activity-decision co-verdict-approved", "approved · by you", "done"),
            ("co-Activity-decision co-verdict-denied", "denied · by you", "denied"),
            ("co-Activity-decision co-verdict-timed-out", "timed out (denied) · nobody answered", "denied"),
        ]  # fmt: skip
        assert_activity_columns_intact(page.locator(".co-Activity"))
        page.screenshot(path=str(ARTIFACTS / "activity-decided.png"))
        show_tab(page, "analysis.ipynb")
        cell.get_by_text("Done with the three.").wait_for(timeout=60_000)
        folder = root / "work"  # the kernel runs in its notebook's folder
        assert (folder / "approved").exists()
        assert not (folder / "denied").exists() and not (folder / "late").exists()
