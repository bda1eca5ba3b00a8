"""While a cell waits for an approval click, the kernel's last word is still "busy".

JupyterLab shows the ``execution_state`` of the last iopub ``status`` message it got,
whatever request that message belongs to. While a Co cell waits for a click, JupyterLab
4.6 opens a kernel subshell for widget comms (a ``create_subshell_request`` on the control
channel) and may talk to it (shell requests on the subshell): each of those ends with an
``idle`` of its own, which would leave the indicator at "Idle" while the cell shows
``[*]``. The test plays those requests over ZMQ, as JupyterLab does, and reads every
status message the kernel publishes.
"""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any

from tests.support.kernel_harness import WIDGET_VIEW, CoKernel, WidgetClicker


def _parent(msg: dict[str, Any]) -> str | None:
    return msg["parent_header"].get("msg_id")


class _Iopub:
    """Every iopub message of the kernel, whatever request it belongs to, in order."""

    def __init__(self, kernel: CoKernel) -> None:
        self.kernel = kernel
        self.seen: list[dict[str, Any]] = []

    def until(self, predicate: Any, *, timeout: float = 60) -> dict[str, Any]:
        """Read until a message matches; returns it (messages before it are kept too)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no matching iopub message in {timeout}s: {self.statuses()}"
            try:
                msg = self.kernel.kc.get_iopub_msg(timeout=min(remaining, 0.1))
            except queue.Empty:
                continue
            self.seen.append(msg)
            if predicate(msg):
                return msg

    def next_status(self, *, timeout: float = 60) -> tuple[str, str | None]:
        msg = self.until(lambda m: m["msg_type"] == "status", timeout=timeout)
        return msg["content"]["execution_state"], _parent(msg)

    def idle_of(self, msg_id: str) -> dict[str, Any]:
        return self.until(
            lambda m: (
                m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
                and _parent(m) == msg_id
            )
        )

    def statuses(self) -> list[tuple[str, str | None]]:
        return [
            (m["content"]["execution_state"], _parent(m))
            for m in self.seen
            if m["msg_type"] == "status"
        ]


def _shell_request(kernel: CoKernel, msg_type: str, subshell_id: str | None = None) -> str:
    msg = kernel.kc.session.msg(msg_type, {})
    if subshell_id is not None:
        msg["header"]["subshell_id"] = subshell_id
    kernel.kc.shell_channel.send(msg)
    return str(msg["header"]["msg_id"])


def test_a_waiting_cell_stays_busy_through_subshell_and_control_requests(
    kernel: CoKernel, model_server: Any, workspace: Path
) -> None:
    model_server.extend(
        [
            {"tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": "touch m"}}]},
            {"expect": {"tool_result_contains": "exit code 0"}, "text": "Made it."},
        ]
    )
    iopub = _Iopub(kernel)
    cell = kernel.send("make a marker")
    clicker = WidgetClicker([None])  # learns the card's buttons, clicks nothing yet

    def card_shown(msg: dict[str, Any]) -> bool:
        if _parent(msg) == cell:
            clicker(kernel, msg)
        return msg["msg_type"] == "display_data" and WIDGET_VIEW in msg["content"]["data"]

    iopub.until(card_shown)
    assert iopub.statuses()[-1] == ("busy", cell)

    # JupyterLab opens a subshell for the widget comms: a control request.
    create = kernel.kc.session.msg("create_subshell_request", {})
    kernel.kc.control_channel.send(create)
    reply = kernel.kc.control_channel.get_msg(timeout=30)
    assert reply["content"]["status"] == "ok", reply["content"]
    subshell = reply["content"]["subshell_id"]
    iopub.idle_of(create["header"]["msg_id"])
    assert iopub.next_status() == ("busy", cell), iopub.statuses()

    # A request handled on that subshell (as comm messages are) ends with its own idle too.
    on_subshell = _shell_request(kernel, "comm_info_request", subshell)
    iopub.idle_of(on_subshell)
    assert iopub.next_status() == ("busy", cell), iopub.statuses()
    assert not (workspace / "m").exists(), "nothing runs before the click"

    [approve] = [cid for cid, label in clicker.buttons if label == "Approve"]
    kernel.click(approve)
    iopub.idle_of(cell)
    assert (workspace / "m").exists()

    # Once the cell is over the kernel is idle for good: no late "busy" of the cell.
    after = _shell_request(kernel, "comm_info_request")
    iopub.idle_of(after)
    statuses = iopub.statuses()
    assert statuses.index(("idle", cell)) == len(statuses) - 3, statuses
    assert statuses[-2:] == [("busy", after), ("idle", after)], statuses
    assert model_server.errors == []
