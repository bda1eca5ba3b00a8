"""The approval card and the notebook frontend's records, in-process.

Widgets are real ipywidgets objects (without a kernel their comms go nowhere); outputs
go to a Publisher that keeps them. Clicks come from another thread, as they do when
JupyterLab sends widget messages on a kernel subshell.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from co_kernel.frontend import (
    MIME_TOOL_CALL,
    ApprovalCard,
    HeadlessFrontend,
    NotebookFrontend,
    WidgetApprover,
    tool_call_bundle,
)
from co_kernel.turn import ApprovalRequest, ToolCallView, ToolResultView, TurnSummary

DIFF = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print('hi')\n+print('hello')\n"


class KeptOutputs:
    """A Publisher that keeps the latest data of each output, in order of appearance."""

    def __init__(self) -> None:
        self.outputs: dict[str, dict[str, Any]] = {}
        self.streams: list[tuple[str, str]] = []
        self._n = 0

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        display_id: str | None = None,
        update: bool = False,
    ) -> None:
        if update:
            assert display_id in self.outputs, "an update must target a shown output"
        self._n += 1
        self.outputs[display_id or f"#{self._n}"] = data

    def stream(self, name: str, text: str) -> None:
        self.streams.append((name, text))

    def flush(self) -> None:
        pass

    def cards(self) -> list[dict[str, Any]]:
        return [d[MIME_TOOL_CALL] for d in self.outputs.values() if MIME_TOOL_CALL in d]


def call(**extra: Any) -> ToolCallView:
    return ToolCallView("c1", "edit_file", '{"path": "app.py"}', needs_approval=True, **extra)


def test_card_shows_tool_pretty_args_and_the_detail() -> None:
    card = ApprovalCard(call(detail=DIFF), lambda choice: None)
    bundle = card.bundle()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "edit_file" in bundle["text/plain"] and '"path": "app.py"' in bundle["text/plain"]
    assert "+print(&#x27;hello&#x27;)" in bundle["text/html"]
    # The change is coloured wherever the card shows, as the tool card's is.
    assert (
        "rgba(46,160,67,.2)" in bundle["text/html"] and "rgba(248,81,73,.2)" in bundle["text/html"]
    )
    texts = " ".join(getattr(child, "value", "") for child in card.box.children)
    assert "edit_file" in texts and "+print(&#x27;hello&#x27;)" in texts
    assert [b.description for b in card.buttons] == ["Approve", "Deny", "Approve all"]
    assert not any(b.disabled for b in card.buttons)


def test_args_as_none_or_broken_json_still_render() -> None:
    for args in (None, "{not json", {"a": [1, 2]}):
        card = ApprovalCard(ToolCallView("c", "t", args), lambda choice: None)
        assert "Co wants to run t" in card.bundle()["text/plain"]


async def _ask(approver: WidgetApprover, request: ApprovalRequest, click: str | None) -> str:
    shown = len(approver.cards)
    task = asyncio.ensure_future(approver(request))
    while len(approver.cards) == shown:
        await asyncio.sleep(0.001)
    if click is not None:
        button = next(b for b in approver.cards[-1].buttons if b.description == click)
        # The click handler runs on another thread, like a subshell's.
        thread = threading.Thread(target=button.click)
        thread.start()
        thread.join()
    return await task


def test_a_click_from_another_thread_answers_and_freezes_the_card() -> None:
    outputs = KeptOutputs()
    approver = WidgetApprover(outputs)
    for label, expected in (
        ("Approve", "approve"),
        ("Deny", "deny"),
        ("Approve all", "approve_all"),
    ):
        choice = asyncio.run(_ask(approver, ApprovalRequest(call()), label))
        assert choice == expected
        card = approver.cards[-1]
        assert all(b.disabled for b in card.buttons)
        # Decided, the card is one line saying what was decided: no buttons.
        (title,) = card.box.children
        assert "wants to run" not in title.value and "asked to run <code>edit_file" in title.value
        assert "wants to run" not in card.bundle()["text/html"]
    decisions = [d["text/plain"].rsplit("Decision: ", 1)[1] for d in outputs.outputs.values()]
    assert decisions == [
        "✅ Approved",
        "🚫 Denied",
        "✅ Approved all: later calls in this session run without asking",
    ]  # fmt: skip


def test_no_click_within_the_timeout_is_a_timed_out_denial() -> None:
    outputs = KeptOutputs()
    approver = WidgetApprover(outputs)
    choice = asyncio.run(_ask(approver, ApprovalRequest(call(), timeout=0.05), None))
    assert choice == "timed_out"
    [bundle] = outputs.outputs.values()
    assert bundle["text/plain"].endswith("Decision: 🚫 Timed out (denied)")
    assert all(b.disabled for b in approver.cards[0].buttons)


def test_cancelling_the_wait_marks_the_card_interrupted() -> None:
    outputs = KeptOutputs()
    approver = WidgetApprover(outputs)

    async def scenario() -> None:
        task = asyncio.ensure_future(approver(ApprovalRequest(call())))
        while not approver.cards:
            await asyncio.sleep(0.001)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return
        raise AssertionError("the cancellation must propagate")

    asyncio.run(scenario())
    [bundle] = outputs.outputs.values()
    assert bundle["text/plain"].endswith("Decision: ⏹ Interrupted")
    assert all(b.disabled for b in approver.cards[0].buttons)


async def _answer(choice: str) -> Any:
    return choice


def test_notebook_card_records_every_stage_on_one_output() -> None:
    outputs = KeptOutputs()

    async def approve(request: ApprovalRequest) -> Any:
        assert outputs.cards()[-1]["status"] == "waiting"
        return "approve"

    frontend = NotebookFrontend(outputs, approve)
    view = ToolCallView("c1", "run_shell_command", '{"cmd": "touch x"}')
    frontend.on_tool_call(view)
    asyncio.run(frontend.prompt_approval(ApprovalRequest(call=view)))
    assert [(c["status"], c["decision"]) for c in outputs.cards()] == [("running", "approved")]
    frontend.on_tool_result(
        ToolResultView("c1", "run_shell_command", {"display": "$ touch x\n[exit code 0]"},
                       duration=0.01, decision="approved")
    )  # fmt: skip
    [card] = outputs.cards()
    assert (card["status"], card["decision"], card["result"]) == (
        "ok",
        "approved",
        "$ touch x\n[exit code 0]",
    )
    [html] = [d["text/html"] for d in outputs.outputs.values() if MIME_TOOL_CALL in d]
    assert 'data-decision="approved"' in html and "<details" in html


def test_notebook_interrupt_marks_calls_that_never_ran() -> None:
    outputs = KeptOutputs()
    frontend = NotebookFrontend(outputs, lambda request: _answer("approve"))
    frontend.on_tool_call(
        ToolCallView("a", "run_shell_command", {"cmd": "touch a"}, decision="yolo")
    )
    frontend.on_tool_call(ToolCallView("b", "run_shell_command", {"cmd": "ls"}))
    frontend.on_tool_result(ToolResultView("b", "run_shell_command", "ok"))
    frontend.on_turn_end(TurnSummary(model="m", interrupted=True))
    cards = {c["call_id"]: (c["status"], c["decision"]) for c in outputs.cards()}
    assert cards == {"a": ("interrupted", "yolo"), "b": ("ok", None)}


def test_headless_card_leaves_out_the_duration_so_reruns_compare_equal() -> None:
    shown = []
    for duration in (0.01, 2.5):
        outputs = KeptOutputs()
        frontend = HeadlessFrontend(outputs, "deny")
        frontend.on_tool_call(ToolCallView("c1", "run_shell_command", {"cmd": "ls"}))
        frontend.on_tool_result(
            ToolResultView("c1", "run_shell_command", {"display": "$ ls\n[exit code 0]"},
                           duration=duration, decision="safe-prefix")
        )  # fmt: skip
        [card] = outputs.cards()
        assert card["duration"] is None and card["decision"] == "safe-prefix"
        shown.append(list(outputs.outputs.values()))
    assert shown[0] == shown[1]


def test_headless_cards_follow_call_order_whatever_order_the_results_come_in() -> None:
    outputs = KeptOutputs()
    frontend = HeadlessFrontend(outputs, "approve")
    for call_id in ("first", "second", "third"):
        frontend.on_tool_call(ToolCallView(call_id, "read_file", {"path": f"{call_id}.md"}))
    frontend.on_tool_result(ToolResultView("third", "read_file", "3"))
    frontend.on_tool_result(ToolResultView("second", "read_file", "2"))
    assert outputs.cards() == [], "nothing shown before the first call's result"
    frontend.on_tool_result(ToolResultView("first", "read_file", "1"))
    assert [c["call_id"] for c in outputs.cards()] == ["first", "second", "third"]


def test_headless_interrupt_shows_finished_results_behind_an_unfinished_call() -> None:
    outputs = KeptOutputs()
    frontend = HeadlessFrontend(outputs, "approve")
    frontend.on_tool_call(ToolCallView("slow", "run_shell_command", {"cmd": "sleep 60"}))
    frontend.on_tool_call(ToolCallView("fast", "read_file", {"path": "a.md"}))
    frontend.on_tool_result(ToolResultView("fast", "read_file", "done"))
    frontend.on_turn_end(TurnSummary(model="m", interrupted=True))
    cards = [(c["call_id"], c["status"]) for c in outputs.cards()]
    assert cards == [("slow", "interrupted"), ("fast", "ok")]


def test_a_recorded_decision_says_so_in_words() -> None:
    """A decision a replay took from its script reads "recorded decision"."""
    result = ToolResultView("c1", "edit_file", "ok", "ok", 0.1, "approved (recorded)")
    bundle = tool_call_bundle(call(), result)
    assert bundle[MIME_TOOL_CALL]["decision"] == "approved (recorded)"  # the label itself
    assert "approved (recorded decision)" in bundle["text/plain"]
    assert "approved (recorded decision)" in bundle["text/html"]
