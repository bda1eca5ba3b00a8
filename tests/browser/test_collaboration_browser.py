"""Real-time collaboration: two people in one notebook see Co's approved edit.

JupyterLab runs with ``jupyter-collaboration`` from its own environment, ``.venv-rtc``
(``scripts/setup-rtc.sh``; every other test and ``scripts/start.sh`` run without it). Two
browser contexts are two people on the same Co notebook. Person B types into a cell
(unsaved); person A asks Co, whose read sees B's words through the shared document,
answered by one page only. A approves the proposed insert with a real click: B sees the
cell without reloading, and A's Ctrl+Z takes it away for both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from co_kernel.replay import ScriptedModelServer

from ..support.lab_server import REPO
from .jupyterlab import chromium_page, co_lab, open_notebook, run_cell
from .test_notebook_cells_browser import CELLS, call, prompt_cell, sources, wait_until

pytestmark = pytest.mark.browser

RTC_PYTHON = REPO / ".venv-rtc" / "bin" / "python"


def _tool_results(server: ScriptedModelServer, name: str) -> list[str]:
    """The results of tool ``name`` in the last request the model received."""
    messages = server.requests[-1]["messages"]
    calls = {
        c["id"]: c["function"]["name"]
        for m in messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
    }
    return [
        m["content"]
        for m in messages
        if m.get("role") == "tool" and calls.get(m.get("tool_call_id")) == name
    ]


def _sent_replies(page: Any) -> list[str]:
    """What the page's extension answers the kernel's ``co.notebook`` requests, as sent on
    its kernel websocket from now on: ``read`` or ``edit`` for each reply."""
    replies: list[str] = []

    def on_frame(payload: str | bytes) -> None:
        data = payload.encode() if isinstance(payload, str) else payload
        if b'"dirty":' in data and b'"cells":' in data:
            replies.append("read")
        elif b'"ok":true' in data and b'"ids":' in data:
            replies.append("edit")

    page.on("websocket", lambda ws: ws.on("framesent", on_frame))
    return replies


def test_a_second_person_sees_an_approved_insert_and_its_undo(tmp_path: Path) -> None:
    if not RTC_PYTHON.exists():
        pytest.fail(f"{RTC_PYTHON} is missing: run scripts/setup-rtc.sh (scripts/test.sh does)")
    heading = [{"kind": "markdown", "source": "## Revenue by month"}]
    script = [
        call("read_notebook"),
        call("insert_cells", index=1, cells=heading),
        {"expect": {"tool_result_contains": "Inserted 1 cell(s) at index 1"}, "text": "Added."},
    ]
    prompts = ["Read my notebook and add a heading", "draft"]
    with co_lab(tmp_path, prompts, script, python=RTC_PYTHON) as co, chromium_page() as b:
        a = co.page
        from_a, from_b = _sent_replies(a), _sent_replies(b)
        open_notebook(a, co.url)
        open_notebook(b, co.url)
        assert a.evaluate(_COLLABORATIVE) and b.evaluate(_COLLABORATIVE)
        # B types into the second cell and does not save; A's page has it at once.
        b.locator(CELLS).nth(1).locator(".cm-content").click()
        b.keyboard.press("End")
        b.keyboard.type(" typed by B")
        wait_until(lambda: sources(a)[1] == "draft typed by B")
        before = sources(a)

        # One card (a strict locator: B put no copy of A's outputs into the document).
        first = run_cell(a, 0)
        approve = first.get_by_role("button", name="Approve", exact=True)
        approve.wait_for(timeout=60_000)
        approve.click()
        first.get_by_text("Added.").wait_for(timeout=30_000)
        expected = [before[0], "## Revenue by month", *before[1:]]
        assert sources(a) == expected
        # B sees the cell without reloading, and the turn's answer once.
        wait_until(lambda: sources(b) == expected)
        answer = prompt_cell(b, "Read my notebook").get_by_text("Added.")
        answer.wait_for(timeout=30_000)
        assert answer.count() == 1

        # One page answered each read (B, which connected last: read_notebook, then
        # insert_cells reading the cells it plans against), every cell once with B's
        # unsaved words; the edit went to A, where the person approved it.
        (read,) = _tool_results(co.server, "read_notebook")
        assert read.count("--- cell ") == 2, read
        assert "typed by B" in read
        assert (from_a, from_b) == (["edit"], ["read", "read"])

        # A's Ctrl+Z (command mode) removes the insert for both people.
        a.keyboard.press("Escape")
        a.locator(CELLS).nth(0).locator(".jp-InputPrompt").click()
        a.keyboard.press("Control+z")
        wait_until(lambda: sources(a) == before)
        wait_until(lambda: sources(b) == before)


_COLLABORATIVE = "() => window.jupyterapp.shell.currentWidget.context.model.collaborative"
"""Whether the page's notebook is the shared (collaborative) document."""
