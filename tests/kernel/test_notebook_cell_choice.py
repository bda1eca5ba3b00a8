"""One proposal that touches several cells, approved in part, over ZMQ.

The test plays the page with Co's extension (``LivePage``): the card offers a choice per
cell, and the cells the person rejected travel with the Approve decision over the
``co.approvals`` comm, as the extension sends them for a real click.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import time
from typing import Any

from tests.kernel.test_notebook_cells import (
    NOTEBOOK,
    LivePage,
    call,
    code,
    short_hash,
    tool_result,
)

THREE = [
    {"kind": "python", "source": "df = load()"},
    {"kind": "markdown", "source": "## Not this one"},
    {"kind": "python", "source": "df.plot()"},
]


def widget_states(page: LivePage, model: str) -> dict[str, dict[str, Any]]:
    """The card's widgets of one kind, by comm id, as the kernel opened them."""
    return {
        m["content"]["comm_id"]: m["content"]["data"]["state"]
        for m in page.messages
        if m["msg_type"] == "comm_open"
        and m["content"]["data"].get("state", {}).get("_model_name") == model
    }


def test_a_partial_insert_applies_exactly_the_accepted_cells(kernel, model_server, co_home):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    model_server.extend([call("insert_cells", index=1, cells=THREE), {"text": "Inserted."}])
    page.serve(kernel.send("add three cells"), reject=[1])
    # The card showed each cell with its own control.
    html = " ".join(s["value"] for s in widget_states(page, "HTMLModel").values())
    for i in range(3):
        assert f'class="co-part-toggle" data-part="{i}" data-parts="3"' in html
    # One edit, holding cells 1 and 3 only: one undoable step on the page.
    [edit] = [r for r in page.requests if r["op"] == "edit"]
    [change] = edit["changes"]
    assert [c["source"] for c in change["cells"]] == [
        "%%python\ndf = load()",
        "%%python\ndf.plot()",
    ]
    sources = [c["source"] for c in page.cells]
    assert sources[1:3] == ["%%python\ndf = load()", "%%python\ndf.plot()"]
    assert "## Not this one" not in sources and len(sources) == len(NOTEBOOK) + 2
    result = tool_result(model_server)
    assert (
        "Inserted 2 of the 3 proposed cells at index 1: cells[0], cells[2] of your call" in result
    )
    assert "The person rejected cells[1] (markdown: '## Not this one'): not applied." in result
    assert "Do not propose it again unless they ask." in result
    # The audit row (activity panel, telemetry) names the cells applied.
    with sqlite3.connect(co_home / "data" / "telemetry.db") as db:
        rows = db.execute("SELECT tool, decision FROM agent_actions").fetchall()
    assert ("insert_cells", "approved (2 of 3 cells: 1, 3)") in rows


def test_a_partial_delete_keeps_the_rejected_cell(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    refs = [{"cell_id": c["id"], "read_hash": short_hash(c["source"])} for c in NOTEBOOK[:2]]
    model_server.extend([call("delete_cells", cells=refs), {"text": "ok"}])
    page.serve(kernel.send("delete the first two"), reject=[0])
    assert [c["id"] for c in page.cells] == ["intro", "p1"]
    result = tool_result(model_server)
    assert "Deleted 1 of the 2 proposed cells: cell 1 (id c1)." in result
    assert "The person rejected cell 0 (id intro): not applied." in result


def test_rejecting_every_cell_is_a_denial(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    before = [dict(c) for c in page.cells]
    model_server.extend([call("insert_cells", index=0, cells=THREE), {"text": "ok"}])
    page.serve(kernel.send("add three cells"), reject=[0, 1, 2])
    assert page.cells == before
    assert [r["op"] for r in page.requests] == ["read"]
    assert "The user rejected every cell of this proposal, so nothing changed." in tool_result(
        model_server
    )


def test_widget_messages_choose_no_cell_and_decide_nothing(kernel, model_server):
    """The cell controls are plain HTML, read only by the extension: what a page script can
    send as widget messages (clicks, a rewritten card) neither decides nor picks cells."""
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    model_server.extend([call("insert_cells", index=3, cells=THREE), {"text": "ok"}])

    def script(_call: dict[str, Any]) -> None:
        for comm_id, state in widget_states(page, "HTMLModel").items():
            if "co-part-toggle" in state["value"]:
                rejected = state["value"].replace("✓ Apply", "✗ Rejected")
                kernel.send_comm_msg(
                    comm_id, {"method": "update", "state": {"value": rejected}, "buffer_paths": []}
                )
        buttons = {
            s["description"]: comm_id for comm_id, s in widget_states(page, "ButtonModel").items()
        }
        kernel.click(buttons["Approve"])
        time.sleep(1.5)
        assert [r["op"] for r in page.requests] == ["read"], "a widget message decided"

    # The person then approves with a real click and rejects nothing: every cell goes in.
    page.serve(kernel.send("add three cells"), on_card=script)
    assert [c["source"] for c in page.cells[3:]] == [
        "%%python\ndf = load()",
        "## Not this one",
        "%%python\ndf.plot()",
    ]
    assert "Inserted 3 cell(s) at index 3" in tool_result(model_server)


def test_a_bad_rejection_decides_nothing_and_a_single_cell_has_no_choice(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    model_server.extend(
        [
            call("insert_cells", index=0, cells=THREE),
            call("insert_cells", index=0, cells=THREE[:1]),
            {"text": "ok"},
        ]
    )

    def bad(found: dict[str, Any]) -> None:
        page.kernel.send_comm_msg(
            page.approvals, {"decide": found["id"], "choice": "approve", "reject": [7]}
        )

    # A rejection naming no cell of the card is an error; the next (plain) approval decides.
    page.serve(kernel.send("add cells"), on_card=bad)
    errors = [d for d in page.comm_data(page.approvals) if "error" in d]
    assert errors and "reject names no cell" in errors[0]["error"]
    assert len(page.cells) == len(NOTEBOOK) + 3 + 1
    # The single-cell proposal's card has no per-cell control.
    assert "Inserted 1 cell(s) at index 0" in tool_result(model_server)


def test_yolo_takes_the_whole_call(kernel, model_server):
    page = LivePage(kernel, [code("x", "only")])
    kernel.execute("%yolo on")
    model_server.extend([call("insert_cells", index=1, cells=THREE), {"text": "ok"}])
    page.serve(kernel.send("add three cells"), reject=[1])
    assert page.cards == [] and len(page.cells) == 4
    assert "Inserted 3 cell(s) at index 1" in tool_result(model_server)


def test_a_recorded_partial_approval_replays_the_same_cells(start_kernel, model_server, workspace):
    recording = start_kernel({"CO_RECORD_PATH": "rec.jsonl"})
    page = LivePage(recording, [dict(c) for c in NOTEBOOK])
    model_server.extend([call("insert_cells", index=1, cells=THREE), {"text": "Inserted two."}])
    page.serve(recording.send("add three cells"), reject=[1])
    steps = [json.loads(line) for line in (workspace / "rec.jsonl").read_text().splitlines()]
    [decided] = [c for s in steps for c in s.get("tool_calls", [])]
    assert (decided["decision"], decided["cells"]) == ("approved", [True, False, True])

    # Run All of the recorded notebook, with recorded approvals on: nobody is asked, and
    # the same two cells go in.
    replaying = start_kernel({"CO_MODEL": "replay:rec.jsonl", "CO_REPLAY_APPROVALS": "true"})
    again = LivePage(replaying, [dict(c) for c in NOTEBOOK])
    again.serve(replaying.send("add three cells"))
    assert again.cards == []
    assert [c["source"] for c in again.cells] == [c["source"] for c in page.cells]


def test_without_the_extensions_approvals_comm_the_call_is_all_or_nothing(kernel, model_server):
    """A client that answers with the widget card only (no ``co.approvals`` comm) gets no
    per-cell controls: the card says the cells go in together, and Approve takes them all."""
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    closed = {"comm_id": page.approvals, "data": {}}
    kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_close", closed))
    model_server.extend([call("insert_cells", index=0, cells=THREE), {"text": "ok"}])
    msg_id = kernel.send("add three cells")
    deadline = time.monotonic() + 90
    clicked = False
    while not page.cells[0]["source"].startswith("%%python\ndf = load()"):
        assert time.monotonic() < deadline, "the insert never came"
        try:
            m = kernel.kc.get_iopub_msg(timeout=0.05)
        except queue.Empty:
            continue
        page.messages.append(m)
        content = m["content"]
        if m["msg_type"] == "comm_msg" and content["comm_id"] == page.comm_id:
            page._answer(content["data"])
        buttons = {s["description"]: c for c, s in widget_states(page, "ButtonModel").items()}
        if "Approve" in buttons and not clicked:
            html = " ".join(s["value"] for s in widget_states(page, "HTMLModel").values())
            assert "co-part-toggle" not in html
            assert "All 3 cells are applied together" in html
            kernel.click(buttons["Approve"])
            clicked = True
    page.serve(msg_id)
    assert [c["source"] for c in page.cells[:3]] == [
        "%%python\ndf = load()",
        "## Not this one",
        "%%python\ndf.plot()",
    ]


def test_approve_all_takes_the_whole_call(kernel, model_server):
    page = LivePage(kernel, [code("x", "only")])
    model_server.extend([call("insert_cells", index=1, cells=THREE), {"text": "ok"}])
    page.serve(kernel.send("add three cells"), choice="approve_all", reject=[1])
    assert len(page.cells) == 4
    assert "Inserted 3 cell(s) at index 1" in tool_result(model_server)


def test_the_card_names_each_cell_one_way_and_says_what_went_in(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    model_server.extend([call("insert_cells", index=1, cells=THREE), {"text": "Inserted."}])
    page.serve(kernel.send("add three cells"), reject=[1])
    html = " ".join(s["value"] for s in widget_states(page, "HTMLModel").values())
    # "cell 2 of 3: new Markdown cell", not beside a diff that numbers it "new cell 2".
    assert ">✓ Apply cell 1 of 3: new Python cell</button>" in html
    assert ">✓ Apply cell 2 of 3: new Markdown cell</button>" in html
    assert "new cell 2" not in html
    # The decided card says plainly what went in, wherever it is drawn.
    [decided] = [
        m["content"]["data"]
        for m in page.messages
        if m["msg_type"] == "update_display_data"
        and "co-approval" in m["content"]["data"].get("text/html", "")
    ]
    assert "Decision: ✅ Applied 2 of 3 cells (cells 1, 3)" in decided["text/plain"]
    assert "<b>✅ Applied 2 of 3 cells (cells 1, 3)</b>" in decided["text/html"]


def test_a_card_whose_every_cell_was_rejected_says_nothing_went_in(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    model_server.extend([call("insert_cells", index=0, cells=THREE), {"text": "ok"}])
    page.serve(kernel.send("add three cells"), reject=[0, 1, 2])
    [decided] = [
        m["content"]["data"]
        for m in page.messages
        if m["msg_type"] == "update_display_data"
        and "co-approval" in m["content"]["data"].get("text/html", "")
    ]
    assert "Decision: 🚫 Nothing applied: all 3 cells rejected" in decided["text/plain"]
