"""A waiting approval survives a reload (issue 27): real server, real Chromium, real kernel.

The notebook is never saved, so the reloaded page has no card: the Co status item says
what waits, its panel answers through the kernel's ``co.approvals`` comm, and so does
Alt+Y.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from co_kernel.testing import ScriptedModelServer
from tests.kernel_harness import ensure_kernelspec

from ..lab_server import start_server
from .jupyterlab import chromium_page, scripted_env, write_notebook

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def shell(cmd: str) -> dict[str, Any]:
    return {"name": "run_shell_command", "arguments": {"cmd": cmd}}


def wait_for_file(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} was not written"
        time.sleep(0.1)


def test_reload_unsaved_then_approve_from_the_status_item(tmp_path: Path) -> None:
    ensure_kernelspec()
    ARTIFACTS.mkdir(exist_ok=True)
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    home = tmp_path / "co-home"
    home.mkdir()
    notebook = notebooks / "pending.ipynb"
    write_notebook(notebook, ["Make two files"])
    script = [
        {"tool_calls": [shell("touch first")]},
        {"tool_calls": [shell("touch second")]},
        {"text": "Both made."},
    ]
    with ScriptedModelServer(script) as server:
        lab = start_server(notebooks, env=scripted_env(home, server), base=tmp_path / "jupyter")
        try:
            with chromium_page() as page:
                page.on("dialog", lambda dialog: dialog.accept())  # "leave unsaved page?"
                page.goto(lab.url(f"lab/tree/{notebook.name}", reset=""))
                page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
                page.get_by_text("Co | Idle").wait_for(timeout=90_000)
                cell = page.locator(".jp-Notebook .jp-Cell").first
                cell.locator(".cm-content").click()
                page.keyboard.press("Shift+Enter")
                cell.get_by_role("button", name="Approve", exact=True).wait_for(timeout=90_000)

                page.reload()
                page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
                # No card on the page: the status item still says what waits.
                assert page.get_by_role("button", name="Approve", exact=True).count() == 0
                waiting = page.locator(".co-StatusBar-waiting")
                waiting.wait_for(timeout=60_000)
                assert waiting.inner_text() == "waiting for approval: run_shell_command"
                page.locator(".co-StatusBar").click()
                panel = page.locator(".co-Pending")
                panel.get_by_text("✋ Co wants to run run_shell_command").wait_for(timeout=30_000)
                assert "touch first" in panel.inner_text()
                page.screenshot(path=str(ARTIFACTS / "pending-panel.png"))
                panel.locator(".co-Pending-approve").click()
                wait_for_file(notebooks / "first")

                # The next call of the same turn: the open panel shows it, and Alt+Y
                # from the notebook answers it without any card on the page.
                panel.get_by_text("touch second").wait_for(timeout=60_000)
                page.keyboard.press("Escape")
                page.locator(".jp-Notebook .jp-InputPrompt").first.click()
                page.keyboard.press("Alt+y")
                wait_for_file(notebooks / "second")
                waiting.wait_for(state="detached", timeout=60_000)
        finally:
            lab.stop()
        assert server.errors == []


def test_all_tabs_closed_the_unseen_call_is_denied_and_the_next_page_says_so(
    tmp_path: Path,
) -> None:
    ensure_kernelspec()
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    home = tmp_path / "co-home"
    home.mkdir()
    notebook = notebooks / "unseen.ipynb"
    write_notebook(notebook, ["Make a file"])
    script = [
        {"tool_calls": [shell("touch made")]},
        {"expect": {"tool_result_contains": "Nobody answered"}, "text": "Not made."},
    ]
    with ScriptedModelServer(script) as server:
        env = {**scripted_env(home, server), "CO_APPROVAL_TIMEOUT_UNSEEN": "2"}
        lab = start_server(notebooks, env=env, base=tmp_path / "jupyter")
        try:
            with chromium_page() as page:
                page.on("dialog", lambda dialog: dialog.accept())
                page.goto(lab.url(f"lab/tree/{notebook.name}", reset=""))
                page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
                page.get_by_text("Co | Idle").wait_for(timeout=90_000)
                cell = page.locator(".jp-Notebook .jp-Cell").first
                cell.locator(".cm-content").click()
                page.keyboard.press("Shift+Enter")
                cell.get_by_role("button", name="Approve", exact=True).wait_for(timeout=90_000)
                page.goto("about:blank")  # every tab closed: nobody sees the card

                deadline = time.monotonic() + 60
                while len(server.requests) < 2:  # the model heard of the denial
                    assert time.monotonic() < deadline, "the unseen call was never denied"
                    time.sleep(0.2)
                page.goto(lab.url(f"lab/tree/{notebook.name}"))
                page.get_by_text(
                    "Co: run_shell_command was timed out: no open page showed it for 2 s."
                ).wait_for(timeout=90_000)
                page.screenshot(path=str(ARTIFACTS / "pending-unseen.png"))
                assert not (notebooks / "made").exists()
        finally:
            lab.stop()
        assert server.errors == []
