"""A person approves and denies in JupyterLab: real server, real Chromium, real clicks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.lab_cells import wait_for_prompt
from ..support.scripted import shell
from .jupyterlab import co_lab, open_notebook, run_cell, save_notebook

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
MIME_TOOL_CALL = "application/vnd.co.tool-call+json"


def saved_decisions(path: Path) -> list[tuple[str, str]]:
    notebook = json.loads(path.read_text())
    return [
        (output["data"][MIME_TOOL_CALL]["status"], output["data"][MIME_TOOL_CALL]["decision"])
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        if MIME_TOOL_CALL in output.get("data", {})
    ]


def test_approve_then_deny_in_jupyterlab(tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    script = [
        {"text": "I will create it.", "tool_calls": [shell("touch marker")]},
        {"expect": {"tool_result_contains": "exit code 0"}, "text": "The marker is there."},
        {"tool_calls": [shell("rm marker")]},
        {"expect": {"tool_result_contains": "denied"}, "text": "Fine, I left it alone."},
    ]
    cells = ["Create a marker file", "Now delete the marker"]
    with co_lab(tmp_path, cells, script) as co:
        page, marker = co.page, co.notebook.parent / "marker"
        open_notebook(page, co.lab.url(f"lab/tree/{co.notebook.name}", reset=""))

        first = run_cell(page, 0)
        approve = page.get_by_role("button", name="Approve", exact=True)
        approve.wait_for(timeout=90_000)
        assert first.locator(".jp-InputPrompt").inner_text().strip() == "[*]:"
        page.screenshot(path=str(ARTIFACTS / "approval-waiting.png"))
        approve.click()
        first.get_by_text("The marker is there.").wait_for(timeout=30_000)
        wait_for_prompt(first, "[1]:")
        assert marker.exists()
        assert first.get_by_text("✅ Approved", exact=True).is_visible()
        assert approve.count() == 0, "a decided card keeps no buttons"
        page.screenshot(path=str(ARTIFACTS / "approval-approved.png"))

        second = run_cell(page, 1)
        deny = second.get_by_role("button", name="Deny", exact=True)
        deny.wait_for(timeout=30_000)
        deny.click()
        second.get_by_text("Fine, I left it alone.").wait_for(timeout=30_000)
        wait_for_prompt(second, "[2]:")
        assert marker.exists(), "a denied rm must not run"
        assert second.get_by_text("🚫 Denied", exact=True).is_visible()
        page.screenshot(path=str(ARTIFACTS / "approval-denied.png"))

        # Saved, the notebook keeps each decision without any widget state.
        save_notebook(page, co.notebook)
        assert saved_decisions(co.notebook) == [("ok", "approved"), ("denied", "denied")]


def test_always_allow_in_jupyterlab(tmp_path: Path) -> None:
    """The card's "Always allow <rule>" runs the call and the next matching one asks not."""
    script = [
        {"tool_calls": [shell("touch one")]},
        {"tool_calls": [shell("touch two")]},
        {"text": "Both made."},
    ]
    with co_lab(tmp_path, ["Make two files"], script) as co:
        page, folder = co.page, co.notebook.parent
        open_notebook(page, co.lab.url(f"lab/tree/{co.notebook.name}", reset=""))

        cell = run_cell(page, 0)
        always = cell.get_by_role(
            "button", name="Always allow run_shell_command(touch*)", exact=True
        )
        always.wait_for(timeout=90_000)
        always.click()
        cell.get_by_text("Both made.").wait_for(timeout=30_000)
        wait_for_prompt(cell, "[1]:")
        assert (folder / "one").exists() and (folder / "two").exists()
        # One card only: the second call matched the new session rule. Decided, it says so.
        assert cell.locator(".co-approval-card").count() == 1
        assert "Always allowed" in cell.locator(".co-approval-card").inner_text()
