"""Pending approvals through the ``co.approvals`` comm, over ZMQ.

The test plays a freshly loaded JupyterLab page: it has no card (it did not send the
cell), opens the comm the extension opens on connect, reads the waiting calls and
decides through it; and a page that clicks the card while another decides by comm.
"""

from __future__ import annotations

import queue
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.kernel_harness import WIDGET_VIEW, CoKernel, markdown_source
from tests.support.scripted import shell


class Page:
    """Everything the kernel publishes on iopub, read as a page that sent no cell does."""

    def __init__(self, kernel: CoKernel) -> None:
        self.kernel = kernel
        self.messages: list[dict[str, Any]] = []

    def until(self, predicate: Any, timeout: float = 90) -> dict[str, Any]:
        """Read iopub until a message satisfies ``predicate``; returns it."""
        for m in self.messages:
            if predicate(m):
                return m
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                m = self.kernel.kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            self.messages.append(m)
            if predicate(m):
                return m
        raise TimeoutError("no such message")

    def open_approvals(self) -> str:
        comm_id = uuid.uuid4().hex
        content = {"comm_id": comm_id, "target_name": "co.approvals", "data": {}}
        self.kernel.kc.shell_channel.send(self.kernel.kc.session.msg("comm_open", content))
        return comm_id

    def comm_data(self, comm_id: str) -> list[dict[str, Any]]:
        return [
            m["content"]["data"]
            for m in self.messages
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id
        ]

    def next_data(self, comm_id: str, predicate: Any) -> dict[str, Any]:
        found = self.until(
            lambda m: (
                m["msg_type"] == "comm_msg"
                and m["content"]["comm_id"] == comm_id
                and predicate(m["content"]["data"])
            )
        )
        return found["content"]["data"]

    def idle(self, msg_id: str) -> None:
        self.until(
            lambda m: (
                m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
            )
        )


def is_card(msg_id: str) -> Any:
    return lambda m: (
        m["parent_header"].get("msg_id") == msg_id
        and m["msg_type"] == "display_data"
        and WIDGET_VIEW in m["content"]["data"]
    )


def test_a_fresh_page_reads_the_waiting_call_and_decides_it(kernel, model_server, workspace):
    model_server.extend(
        [
            {"text": "Creating it.", "tool_calls": [shell("touch marker && echo made")]},
            {"expect": {"tool_result_contains": "made"}, "text": "Done."},
        ]
    )
    page = Page(kernel)
    # A page connected before the call: it hears of it when it starts waiting.
    early = page.open_approvals()
    opened = page.next_data(early, lambda d: "pending" in d)
    assert (opened["pending"], opened["decided"]) == ([], [])
    # The status item's data rides along: a page that connects while a cell
    # runs gets no kernel_info_reply until it ends.
    assert opened["status"]["model"] == "compat:scripted"
    cell = kernel.send("create a marker file")
    page.until(is_card(cell))
    shown = page.next_data(early, lambda d: d["pending"])
    # A page loaded while the call waits gets it on open.
    before = len(page.messages)
    late = page.open_approvals()
    first = page.next_data(late, lambda d: "pending" in d)
    [call] = first["pending"]
    assert first["status"]["model"] == "compat:scripted"
    # The running cell says busy again before the answer, so the page's kernel indicator
    # does not read "Unknown" until the cell ends.
    assert any(
        m["msg_type"] == "status"
        and m["content"]["execution_state"] == "busy"
        and m["parent_header"].get("msg_id") == cell
        for m in page.messages[before:]
    )
    assert call == shown["pending"][0]
    assert call["tool"] == "run_shell_command"
    assert "touch marker && echo made" in call["arguments"]
    assert not (workspace / "marker").exists()

    # Bad answers are refused with a message; the call still waits, the kernel lives.
    send = kernel.send_comm_msg
    send(late, {"decide": call["id"], "choice": "maybe"})
    assert "Unknown choice 'maybe'" in page.next_data(late, lambda d: "error" in d)["error"]
    send(late, {"nonsense": 1})
    page.next_data(late, lambda d: "Expected" in d.get("error", ""))

    send(late, {"decide": call["id"], "choice": "approve"})
    page.idle(cell)
    assert (workspace / "marker").exists()
    for comm_id in (early, late):
        [final] = [d for d in page.comm_data(comm_id) if d.get("decided")]
        assert final["pending"] == []
        assert [(o["id"], o["decision"]) for o in final["decided"]] == [(call["id"], "approved")]
    markdown = "".join(
        markdown_source(m["content"]["data"]) or ""
        for m in page.messages
        if m["parent_header"].get("msg_id") == cell and m["msg_type"] == "update_display_data"
    )
    assert "Done." in markdown
    assert model_server.errors == []


def test_card_and_comm_deciding_at_once_run_the_tool_once(kernel, model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("echo ran >> count")]},
            {"text": "Appended."},
        ]
    )
    page = Page(kernel)
    cell = kernel.send("append a line")
    page.until(is_card(cell))
    approvals = page.open_approvals()
    [call] = page.next_data(approvals, lambda d: "pending" in d)["pending"]
    buttons = {
        m["content"]["data"]["state"]["description"]: m["content"]["comm_id"]
        for m in page.messages
        if m["msg_type"] == "comm_open"
        and m["content"]["data"].get("state", {}).get("_model_name") == "ButtonModel"
    }
    # The card's Approve, then (a second tab) Approve and Deny by comm, back to back.
    kernel.click(buttons["Approve"])
    kernel.send_comm_msg(approvals, {"decide": call["id"], "choice": "approve"})
    kernel.send_comm_msg(approvals, {"decide": call["id"], "choice": "deny"})
    page.idle(cell)
    assert Path(workspace / "count").read_text() == "ran\n"
    outcomes = [o for d in page.comm_data(approvals) for o in d.get("decided", [])]
    assert [(o["id"], o["decision"]) for o in outcomes] == [(call["id"], "approved")]
    assert model_server.errors == []


def test_a_call_no_page_watches_is_denied_and_the_next_page_is_told(
    start_kernel, model_server, workspace
):
    kernel = start_kernel({"CO_APPROVAL_TIMEOUT_UNSEEN": "1"})
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "Nobody answered"}, "text": "Not done."},
        ]
    )
    page = Page(kernel)
    # A page with the extension was here once, then every tab closed (no more pings).
    gone = page.open_approvals()
    page.next_data(gone, lambda d: "pending" in d)
    cell = kernel.send("make a marker")
    page.idle(cell)
    assert not (workspace / "marker").exists()
    assert model_server.errors == []

    # The next page to connect hears what was decided and why, until it says it told.
    later = page.open_approvals()
    told = page.next_data(later, lambda d: "pending" in d)
    assert told["pending"] == []
    [outcome] = told["decided"]
    assert (outcome["tool"], outcome["decision"]) == ("run_shell_command", "timed out")
    assert outcome["reason"] == "no open page showed it for 1 s"
    kernel.send_comm_msg(later, {"told": [outcome["id"]]})
    again = page.open_approvals()
    assert page.next_data(again, lambda d: "pending" in d)["decided"] == []


def test_a_restart_while_a_call_waits_saves_the_turn_for_resume(kernel, model_server, workspace):
    model_server.extend(
        [
            {"text": "Let me.", "tool_calls": [shell("touch marker")]},
            {"text": "The restart stopped it."},
        ]
    )
    page = Page(kernel)
    cell = kernel.send("please make the marker file")
    page.until(is_card(cell))
    kernel.restart()
    resumed = kernel.execute("%resume", timeout=120)
    assert "1 turn(s)" in resumed.markdown()
    assert "> please make the marker file" in resumed.markdown()
    # The saved turn says what the call was waiting for when the kernel went.
    assert kernel.execute("what happened?", timeout=120).status == "ok"
    assert not (workspace / "marker").exists()
    [tool_result] = [
        m["content"] for m in model_server.requests[-1]["messages"] if m["role"] == "tool"
    ]
    assert tool_result == (
        "Interrupted by user. It was interrupted while waiting for approval of run_shell_command."
    )
    assert model_server.errors == []


@pytest.mark.slow  # a fresh interpreter, not a forked kernel: its output is its own
def test_a_restart_while_a_call_waits_answers_the_cell_and_logs_no_traceback(
    start_kernel, model_server, tmp_path: Path
):
    """The kernel's output is the server's log: a restart there showed a ZMQError from
    execute_request (the waiting cell's reply sent after ipykernel closed its socket)."""
    log = tmp_path / "kernel.log"
    kernel = start_kernel(log=log)
    model_server.extend([{"text": "Let me.", "tool_calls": [shell("touch marker")]}])
    page = Page(kernel)
    cell = kernel.send("please make the marker file")
    page.until(is_card(cell))
    # The Restart button: jupyter_client interrupts, then asks for the shutdown.
    kernel.km.restart_kernel(now=False)
    # The waiting cell ended, and said so, before the kernel went: the page marks it
    # finished (read before wait_for_ready, which drops what it finds on both channels).
    reply = kernel.kc.get_shell_msg(timeout=30)
    while reply["parent_header"]["msg_id"] != cell:  # kernel_info replies of the start
        reply = kernel.kc.get_shell_msg(timeout=30)
    assert (reply["content"]["status"], reply["content"]["ename"]) == ("error", "KeyboardInterrupt")
    error = page.until(
        lambda m: m["parent_header"].get("msg_id") == cell and m["msg_type"] == "error"
    )
    assert error["content"]["ename"] == "KeyboardInterrupt"
    kernel.kc.wait_for_ready(timeout=120)
    assert kernel.execute("%%python\nprint(6 * 7)").stdout == "42\n"
    kernel.shutdown()
    written = log.read_text()
    assert "Traceback" not in written and "Error" not in written, written


def test_with_the_extension_connected_only_the_comm_decides(kernel, model_server, workspace):
    """A widget click is what any script in the page can send (``button.click()``): while a
    page with Co's extension has the comm open, it decides nothing; the comm,
    which the extension uses only for a real gesture, does."""
    model_server.extend(
        [
            {"tool_calls": [shell("echo ran >> count")]},
            {"text": "Appended."},
        ]
    )
    page = Page(kernel)
    approvals = page.open_approvals()
    page.next_data(approvals, lambda d: "pending" in d)
    cell = kernel.send("append a line")
    card = page.until(is_card(cell))
    classes = {
        tuple(m["content"]["data"]["state"].get("_dom_classes", ()))
        for m in page.messages
        if m["msg_type"] == "comm_open"
        and m["content"]["data"].get("state", {}).get("_model_name") == "VBoxModel"
    }
    [call] = page.next_data(approvals, lambda d: d.get("pending"))["pending"]
    assert ("co-approval-card", f"co-approval-card-{call['id']}") in classes
    buttons = {
        m["content"]["data"]["state"]["description"]: m["content"]["comm_id"]
        for m in page.messages
        if m["msg_type"] == "comm_open"
        and m["content"]["data"].get("state", {}).get("_model_name") == "ButtonModel"
    }
    kernel.click(buttons["Approve"])
    kernel.click(buttons["Approve all"])
    time.sleep(1.5)
    assert not (workspace / "count").exists(), "a widget click decided with the extension on"
    assert card["content"]["data"]["text/plain"].endswith("Decision: waiting")
    kernel.send_comm_msg(approvals, {"decide": call["id"], "choice": "approve"})
    page.idle(cell)
    assert Path(workspace / "count").read_text() == "ran\n"
    outcomes = [o for d in page.comm_data(approvals) for o in d.get("decided", [])]
    assert [(o["id"], o["decision"]) for o in outcomes] == [(call["id"], "approved")]
    assert model_server.errors == []
