"""Approvals through a real kernel: the widget card, the console's stdin, headless policy.

The test plays each frontend over ZMQ: JupyterLab clicking a widget button (a
``comm_msg`` on the shell channel while the cell runs), jupyter console answering an
``input_request``, nbclient sending neither. Effects are files in the workspace; what
the model learnt is read from the scripted server's recorded requests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from co_kernel.frontend import MIME_TOOL_CALL
from tests.support.cells import tool_cards
from tests.support.kernel_harness import WIDGET_VIEW, CellResult, CoKernel, WidgetClicker
from tests.support.scripted import shell, tool_results_sent


def widget_cards(result: CellResult) -> list[dict[str, Any]]:
    """The final bundle of every approval widget output of the cell."""
    return [d for d in result.final_displays().values() if WIDGET_VIEW in d]


def widget_updates(result: CellResult) -> list[dict[str, Any]]:
    return [
        m["content"]["data"]["state"]
        for m in result.of_type("comm_msg")
        if m["content"]["data"].get("method") == "update"
    ]


# -- the notebook: widget card ------------------------------------------------------


def test_approve_click_runs_the_tool_and_the_answer_continues(kernel, model_server, workspace):
    model_server.extend(
        [
            {"text": "I will create it.", "tool_calls": [shell("touch marker && echo made")]},
            {"expect": {"tool_result_contains": "made"}, "text": "The marker is there."},
        ]
    )
    clicker = WidgetClicker(["Approve"])
    result = kernel.execute("create a marker file", on_message=clicker)
    assert result.status == "ok"
    assert (workspace / "marker").exists()
    assert result.markdown() == "I will create it.The marker is there."
    [card] = tool_cards(result)
    assert (card["status"], card["decision"]) == ("ok", "approved")
    assert "made" in card["result"]
    # The card froze: every button disabled, the decision written in the widget too.
    assert sum(1 for s in widget_updates(result) if s.get("disabled") is True) == 4
    [widget] = widget_cards(result)
    assert "Decision: ✅ Approved" in widget["text/plain"]
    assert 'data-decision="approved"' in widget["text/html"]
    assert model_server.errors == []


def test_every_output_names_its_request_and_display_for_a_page_that_did_not_ask(
    kernel, model_server, workspace
):
    # A reloaded page or a second tab gets the turn's iopub output without having sent
    # the request, and a saved notebook keeps metadata but not the transient display id:
    # the tag lets the extension find the cell and the output to update.
    model_server.extend(
        [
            {"text": "I will create it.", "tool_calls": [shell("touch marker")]},
            {"text": "Done."},
        ]
    )
    result = kernel.execute(
        "create a marker file", on_message=WidgetClicker(["Approve"]), cell_id="cell-7"
    )
    assert result.status == "ok"
    request = result.reply["parent_header"]["msg_id"]
    shown = result.of_type("display_data", "update_display_data")
    assert shown
    for m in shown:
        tag = m["content"]["metadata"]["co"]
        assert (tag["request"], tag["cell"]) == (request, "cell-7")
        assert tag["display_id"] == m["content"]["transient"]["display_id"]
        # The count of the reply a reloaded page never receives.
        assert tag["count"] == result.reply["content"]["execution_count"]
    approvals = [
        m["content"]["metadata"]["co"]["approval"]
        for m in shown
        if WIDGET_VIEW in m["content"]["data"]
    ]
    assert approvals == ["waiting", "approved"]
    assert model_server.errors == []


def test_deny_click_keeps_the_tool_from_running_and_tells_the_model(
    kernel, model_server, workspace
):
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"text": "Understood, I will not touch anything."},
        ]
    )
    result = kernel.execute("create a marker file", on_message=WidgetClicker(["Deny"]))
    assert result.status == "ok"
    assert not (workspace / "marker").exists()
    assert [m for m in tool_results_sent(model_server) if "The user denied this action" in m]
    assert result.markdown() == "Understood, I will not touch anything."
    [card] = tool_cards(result)
    assert (card["status"], card["decision"]) == ("denied", "denied")
    assert "🚫" in result.final_displays()[next(iter(result.final_displays()))]["text/plain"]


def test_approve_all_covers_later_calls_of_the_turn_and_the_next_cell(
    kernel, model_server, workspace
):
    model_server.extend(
        [
            {"tool_calls": [shell("touch one")]},
            {"tool_calls": [shell("touch two")]},
            {"text": "Two files."},
            {"tool_calls": [shell("touch three")]},
            {"text": "Three."},
        ]
    )
    clicker = WidgetClicker(["Approve all"])
    first = kernel.execute("two files", on_message=clicker)
    assert first.status == "ok" and clicker.cards == 1
    assert [c["decision"] for c in tool_cards(first)] == ["approved all", "yolo"]
    second_clicker = WidgetClicker([])
    second = kernel.execute("one more", on_message=second_clicker)
    assert second.status == "ok" and second_clicker.cards == 0
    assert [c["decision"] for c in tool_cards(second)] == ["yolo"]
    assert all((workspace / name).exists() for name in ("one", "two", "three"))


def test_two_chained_calls_ask_with_two_cards(kernel, model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch first")]},
            {"expect": {"tool_result_contains": "exit code 0"}, "tool_calls": [shell("touch second")]},
            {"text": "Both done."},
        ]
    )  # fmt: skip
    clicker = WidgetClicker(["Approve", "Approve"])
    result = kernel.execute("two steps", on_message=clicker)
    assert result.status == "ok"
    assert clicker.cards == 2 and len(widget_cards(result)) == 2
    assert [c["decision"] for c in tool_cards(result)] == ["approved", "approved"]
    assert (workspace / "first").exists() and (workspace / "second").exists()
    assert result.markdown() == "Both done."
    assert model_server.errors == []


def test_unanswered_card_times_out_as_denied(start_kernel, model_server, workspace):
    kernel = start_kernel({"CO_APPROVAL_TIMEOUT": "1"})
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "Nobody answered"}, "text": "No answer, so no."},
        ]
    )
    clicker = WidgetClicker([None])
    result = kernel.execute("create a marker file", on_message=clicker, timeout=30)
    assert result.status == "ok" and clicker.cards == 1
    assert not (workspace / "marker").exists()
    [card] = tool_cards(result)
    assert card["decision"] == "timed out"
    [widget] = widget_cards(result)
    assert "Timed out (denied)" in widget["text/plain"]
    assert model_server.errors == []


def test_interrupt_while_the_card_waits(kernel, model_server, workspace):
    model_server.extend(
        [
            {"text": "Trying.", "tool_calls": [shell("touch marker")]},
            {"expect": {"messages_contain": ["Interrupted by user."]}, "text": "Carry on."},
        ]
    )
    clicker = WidgetClicker([None])

    def interrupt_when_asked(k: CoKernel, msg: dict[str, Any]) -> None:
        clicker(k, msg)
        if msg["msg_type"] == "display_data" and WIDGET_VIEW in msg["content"]["data"]:
            k.km.interrupt_kernel()

    result = kernel.execute("create a marker", on_message=interrupt_when_asked, timeout=30)
    assert result.status == "error"
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert not (workspace / "marker").exists()
    [card] = tool_cards(result)
    assert (card["status"], card["decision"]) == ("interrupted", "interrupted")
    assert sum(1 for s in widget_updates(result) if s.get("disabled") is True) == 4
    [widget] = widget_cards(result)
    assert "Interrupted" in widget["text/plain"]
    # The kernel lives on and the conversation stays valid.
    after = kernel.execute("go on")
    assert after.status == "ok" and after.markdown() == "Carry on."
    assert model_server.errors == []


# -- the console: stdin input_request ---------------------------------------------


def answer(*values: str) -> Any:
    queue = list(values)

    def on_input(kernel: CoKernel, msg: dict[str, Any]) -> str | None:
        return queue.pop(0) if queue else None

    return on_input


def test_console_yes_runs_the_tool(kernel, model_server, workspace):
    model_server.extend([{"tool_calls": [shell("touch marker")]}, {"text": "Done."}])
    result = kernel.execute("make it", mode="console", on_input=answer("y"))
    assert result.status == "ok"
    assert (workspace / "marker").exists()
    [request] = result.of_type("input_request")
    assert "[y] Approve / [n] Deny / [a] Approve all" in request["content"]["prompt"]
    assert "Co wants to run run_shell_command" in result.stdout
    assert "✅ Approved" in result.stdout and "Done." in result.stdout


def test_console_no_denies_and_an_unreadable_answer_asks_again(kernel, model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "denied"}, "text": "Not done."},
        ]
    )
    result = kernel.execute("make it", mode="console", on_input=answer("maybe", "n"))
    assert result.status == "ok"
    assert not (workspace / "marker").exists()
    assert len(result.of_type("input_request")) == 2
    assert "Please answer y (Approve), n (Deny), a (Approve all)." in result.stdout
    assert "🚫 Denied" in result.stdout
    assert model_server.errors == []


def test_console_all_stops_asking_for_the_session(kernel, model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch one")]},
            {"text": "One."},
            {"tool_calls": [shell("touch two")]},
            {"text": "Two."},
        ]
    )
    first = kernel.execute("one", mode="console", on_input=answer("a"))
    second = kernel.execute("two", mode="console", on_input=answer())
    assert (first.status, second.status) == ("ok", "ok")
    assert len(first.of_type("input_request")) == 1
    assert second.of_type("input_request") == []
    assert "session yolo" in second.stdout
    assert (workspace / "one").exists() and (workspace / "two").exists()


def test_console_interrupt_while_waiting_for_input(kernel, model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"messages_contain": ["Interrupted by user."]},
             "tool_calls": [shell("touch second")]},
            {"expect": {"tool_result_contains": "denied"}, "text": "Next."},
        ]
    )  # fmt: skip

    def interrupt(k: CoKernel, msg: dict[str, Any]) -> None:
        k.km.interrupt_kernel()

    result = kernel.execute("make it", mode="console", on_input=interrupt, timeout=30)
    assert result.status == "error"
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert not (workspace / "marker").exists()
    assert "⏹ Interrupted" in result.stdout
    # A late "y" to the abandoned request must not answer the next question.
    kernel.kc.input("y")
    after = kernel.execute("next", mode="console", on_input=answer("n"))
    assert after.status == "ok" and "Next." in after.stdout
    assert len(after.of_type("input_request")) == 1
    assert not (workspace / "second").exists()
    assert model_server.errors == []


def test_console_unanswered_request_times_out(start_kernel, model_server, workspace):
    kernel = start_kernel({"CO_APPROVAL_TIMEOUT": "1"})
    model_server.extend([{"tool_calls": [shell("touch marker")]}, {"text": "Timed out."}])
    result = kernel.execute("make it", mode="console", on_input=answer(), timeout=30)
    assert result.status == "ok"
    assert len(result.of_type("input_request")) == 1
    assert not (workspace / "marker").exists()
    assert "Timed out (denied)" in result.stdout


# -- headless (nbclient, nbval, papermill): the policy ---------------------------------


def test_headless_default_policy_denies_without_hanging(kernel, model_server, workspace):
    model_server.extend(
        [
            {"tool_calls": [shell("touch marker")]},
            {"expect": {"tool_result_contains": "denied"}, "text": "Denied, fine."},
        ]
    )
    result = kernel.execute("make it", mode="headless", timeout=30)
    assert result.status == "ok"
    assert not (workspace / "marker").exists()
    assert result.of_type("input_request") == [] and result.of_type("comm_open") == []
    assert "**denied** (headless run, `approval_mode = deny`)" in result.markdown()
    [card] = tool_cards(result)
    assert (card["status"], card["decision"]) == ("denied", "denied")
    assert not result.of_type("update_display_data")


def test_headless_approve_policy_runs_the_tool(start_kernel, model_server, workspace):
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    model_server.extend([{"tool_calls": [shell("touch marker")]}, {"text": "Done."}])
    result = kernel.execute("make it", mode="headless", timeout=30)
    assert result.status == "ok"
    assert (workspace / "marker").exists()
    assert "**approved**" in result.markdown()
    assert [c["decision"] for c in tool_cards(result)] == ["approved"]


def test_headless_ask_policy_explains_it_cannot_ask(start_kernel, model_server, workspace):
    kernel = start_kernel({"CO_APPROVAL_MODE": "ask"})
    model_server.extend([{"tool_calls": [shell("touch marker")]}, {"text": "ok"}])
    result = kernel.execute("make it", mode="headless", timeout=30)
    assert result.status == "ok"
    assert not (workspace / "marker").exists()
    assert "a headless run cannot ask" in result.markdown()


def test_safe_command_runs_without_asking_anywhere(kernel, model_server, workspace: Path):
    (workspace / "notes.txt").write_text("remember the milk\n")
    model_server.extend(
        [
            {"tool_calls": [shell("cat notes.txt")]},
            {"expect": {"tool_result_contains": "remember the milk"}, "text": "Milk."},
        ]
    )
    clicker = WidgetClicker([])
    result = kernel.execute("what is in my notes?", on_message=clicker)
    assert result.status == "ok" and clicker.cards == 0
    assert [c["decision"] for c in tool_cards(result)] == ["safe-prefix"]
    assert model_server.errors == []


def test_a_denied_change_reads_as_proposed_and_keeps_the_call_argument_order(
    kernel, model_server, workspace
):
    (workspace / "notes.md").write_text("# Notes\nold line\n")
    write = {"path": "notes.md", "content": "# Notes\nnew line\n"}
    model_server.extend(
        [
            {"tool_calls": [{"name": "write_file", "arguments": write}]},
            {"expect": {"tool_result_contains": "denied"}, "text": "Left alone."},
        ]
    )
    result = kernel.execute("rewrite the notes", on_message=WidgetClicker(["Deny"]))
    assert result.status == "ok"
    assert (workspace / "notes.md").read_text() == "# Notes\nold line\n"
    [bundle] = [d for d in result.final_displays().values() if d.get(MIME_TOOL_CALL)]
    # Nothing changed: the card says what was proposed, not "Change".
    assert "<b>Proposed change, not applied</b>" in bundle["text/html"]
    assert "<b>Change</b>" not in bundle["text/html"]
    # A saved notebook sorts the keys; the order the model wrote rides beside them.
    assert bundle[MIME_TOOL_CALL]["arg_order"] == ["path", "content"]
    # The red verdict of the card: denied, in the decision language's words.
    [widget] = widget_cards(result)
    assert "Decision: 🚫 Denied" in widget["text/plain"]
    assert "border-left: 3px solid #d9534f" in widget["text/html"]
