"""A person approves and denies in JupyterLab: real server, real Chromium, real clicks."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from co_kernel.testing import ScriptedModelServer
from tests.kernel_harness import ensure_kernelspec

from ..lab_server import start_server
from .jupyterlab import chromium_page, run_cell, save_notebook, scripted_env, write_notebook

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
MIME_TOOL_CALL = "application/vnd.co.tool-call+json"


def shell(cmd: str) -> dict[str, Any]:
    return {"name": "run_shell_command", "arguments": {"cmd": cmd}}


def wait_for_prompt(cell: Any, expected: str, timeout: float = 30) -> None:
    prompt = cell.locator(".jp-InputPrompt")
    deadline = time.monotonic() + timeout
    while prompt.inner_text().strip() != expected:
        assert time.monotonic() < deadline, f"prompt is {prompt.inner_text()!r}"
        time.sleep(0.1)


def saved_decisions(path: Path) -> list[tuple[str, str]]:
    notebook = json.loads(path.read_text())
    return [
        (output["data"][MIME_TOOL_CALL]["status"], output["data"][MIME_TOOL_CALL]["decision"])
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        if MIME_TOOL_CALL in output.get("data", {})
    ]


def test_approve_then_deny_in_jupyterlab(tmp_path: Path) -> None:
    ensure_kernelspec()
    ARTIFACTS.mkdir(exist_ok=True)
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    home = tmp_path / "co-home"
    home.mkdir()
    notebook = notebooks / "approvals.ipynb"
    write_notebook(notebook, ["Create a marker file", "Now delete the marker"])
    script = [
        {"text": "I will create it.", "tool_calls": [shell("touch marker")]},
        {"expect": {"tool_result_contains": "exit code 0"}, "text": "The marker is there."},
        {"tool_calls": [shell("rm marker")]},
        {"expect": {"tool_result_contains": "denied"}, "text": "Fine, I left it alone."},
    ]
    with ScriptedModelServer(script) as server:
        env = scripted_env(home, server)
        lab = start_server(notebooks, env=env, base=tmp_path / "jupyter")
        try:
            with chromium_page() as page:
                page.goto(lab.url(f"lab/tree/{notebook.name}", reset=""))
                page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
                # The kernel must be up before Shift+Enter, or the run request is lost.
                page.get_by_text("Co | Idle").wait_for(timeout=90_000)

                first = run_cell(page, 0)
                approve = page.get_by_role("button", name="Approve", exact=True)
                approve.wait_for(timeout=90_000)
                assert first.locator(".jp-InputPrompt").inner_text().strip() == "[*]:"
                page.screenshot(path=str(ARTIFACTS / "approval-waiting.png"))
                approve.click()
                first.get_by_text("The marker is there.").wait_for(timeout=30_000)
                wait_for_prompt(first, "[1]:")
                assert (notebooks / "marker").exists()
                assert first.get_by_text("✅ Approved", exact=True).is_visible()
                assert approve.is_disabled()
                page.screenshot(path=str(ARTIFACTS / "approval-approved.png"))

                second = run_cell(page, 1)
                deny = second.get_by_role("button", name="Deny", exact=True)
                deny.wait_for(timeout=30_000)
                deny.click()
                second.get_by_text("Fine, I left it alone.").wait_for(timeout=30_000)
                wait_for_prompt(second, "[2]:")
                assert (notebooks / "marker").exists(), "a denied rm must not run"
                assert second.get_by_text("🚫 Denied", exact=True).is_visible()
                page.screenshot(path=str(ARTIFACTS / "approval-denied.png"))

                # Saved, the notebook keeps each decision without any widget state.
                save_notebook(page, notebook)
                assert saved_decisions(notebook) == [("ok", "approved"), ("denied", "denied")]
        finally:
            lab.stop()
        assert server.errors == []


def test_always_allow_in_jupyterlab(tmp_path: Path) -> None:
    """The card's "Always allow <rule>" runs the call and the next matching one asks not."""
    ensure_kernelspec()
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    home = tmp_path / "co-home"
    home.mkdir()
    notebook = notebooks / "always.ipynb"
    write_notebook(notebook, ["Make two files"])
    script = [
        {"tool_calls": [shell("touch one")]},
        {"tool_calls": [shell("touch two")]},
        {"text": "Both made."},
    ]
    with ScriptedModelServer(script) as server:
        lab = start_server(notebooks, env=scripted_env(home, server), base=tmp_path / "jupyter")
        try:
            with chromium_page() as page:
                page.goto(lab.url(f"lab/tree/{notebook.name}", reset=""))
                page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
                page.get_by_text("Co | Idle").wait_for(timeout=90_000)

                cell = run_cell(page, 0)
                always = cell.get_by_role(
                    "button", name="Always allow run_shell_command(touch*)", exact=True
                )
                always.wait_for(timeout=90_000)
                always.click()
                cell.get_by_text("Both made.").wait_for(timeout=30_000)
                wait_for_prompt(cell, "[1]:")
                assert (notebooks / "one").exists() and (notebooks / "two").exists()
                # One card only: the second call matched the new session rule.
                assert cell.get_by_role("button", name="Approve", exact=True).count() == 1
        finally:
            lab.stop()
        assert server.errors == []
