"""The agent reads, edits and runs the cells of its notebook, over ZMQ.

The test plays the page: it opens the ``co.notebook`` comm the extension opens, answers
the kernel's requests from a list of cells it holds (as the extension answers from the
notebook model) and decides approvals through ``co.approvals`` as a person's click does.
Without the comm, the kernel reads the saved file the server named (JPY_SESSION_NAME).
"""

from __future__ import annotations

import hashlib
import json
import queue
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from tests.kernel.test_pending_approvals import Page
from tests.support.kernel_harness import CoKernel


def short_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:8]


def code(source: str, cell_id: str, outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "id": cell_id,
        "cell_type": "code",
        "source": source,
        "execution_count": 3 if outputs else None,
        "outputs": outputs or [],
        "metadata": {},
    }


def markdown(source: str, cell_id: str, tags: list[str] | None = None) -> dict[str, Any]:
    meta = {"tags": tags} if tags else {}
    return {"id": cell_id, "cell_type": "markdown", "source": source, "metadata": meta}


# A 2x3 PNG's first bytes: signature, IHDR length and type, width 2, height 3.
PNG_HEAD = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAYAAAC56t6BAAAA"


class LivePage(Page):
    """A page with Co's extension: it holds the notebook and answers ``co.notebook``."""

    def __init__(
        self, kernel: CoKernel, cells: list[dict[str, Any]], path: str | None = None
    ) -> None:
        super().__init__(kernel)
        self.cells = cells
        self.path = path
        self.requests: list[dict[str, Any]] = []
        self.comm_id = uuid.uuid4().hex
        # The extension names the notebook it shows (its path below the server's root).
        data = {"path": path} if path else {}
        content = {"comm_id": self.comm_id, "target_name": "co.notebook", "data": data}
        kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_open", content))
        self.approvals = self.open_approvals()
        self.cards: list[dict[str, Any]] = []

    def serve(
        self,
        msg_id: str,
        choice: str = "approve",
        timeout: float = 90,
        others: tuple[LivePage, ...] = (),
        reject: list[int] | None = None,
        on_card: Any = None,
    ) -> None:
        """Answer the kernel until the cell ``msg_id`` is idle; decide every call with ``choice``
        (with ``reject``: the cells the person rejected on the card). ``on_card(call)`` runs
        before each decision. ``others``: more pages on the same kernel, which answer what
        they are asked."""
        pages = {page.comm_id: page for page in (self, *others)}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                m = self.kernel.kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            self.messages.append(m)
            content = m["content"]
            if m["msg_type"] == "comm_msg" and content["comm_id"] in pages:
                pages[content["comm_id"]]._answer(content["data"])
            elif m["msg_type"] == "comm_msg" and content["comm_id"] == self.approvals:
                for call in content["data"].get("pending", []):
                    if call["id"] not in [c["id"] for c in self.cards]:
                        self.cards.append(call)
                        if on_card is not None:
                            on_card(call)
                        decision = {"decide": call["id"], "choice": choice}
                        if reject is not None:
                            decision["reject"] = reject
                        self.kernel.send_comm_msg(self.approvals, decision)
            elif (
                m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "status"
                and content["execution_state"] == "idle"
            ):
                return
        raise TimeoutError("the cell did not finish")

    def _answer(self, data: dict[str, Any]) -> None:
        self.requests.append(data)
        reply: dict[str, Any] = {"reply": data["request"]}
        if data["op"] == "read":
            reply |= {"cells": self.cells, "path": self.path or "analysis.ipynb", "dirty": True}
        else:
            try:
                reply |= {"ok": True, "ids": self._edit(data["changes"])}
            except ValueError as exc:
                reply |= {"error": str(exc)}
        self.kernel.send_comm_msg(self.comm_id, reply)

    def _edit(self, changes: list[dict[str, Any]]) -> list[str]:
        cells = [dict(c) for c in self.cells]
        ids: list[str] = []
        for change in changes:
            if change["op"] == "insert":
                new = [
                    {**c, "id": uuid.uuid4().hex[:8], "metadata": {}, "outputs": []}
                    for c in change["cells"]
                ]
                cells[change["index"] : change["index"]] = new
                ids += [c["id"] for c in new]
                continue
            [at] = [i for i, c in enumerate(cells) if c["id"] == change["id"]]
            if "expect" in change and cells[at]["source"] != change["expect"]:
                raise ValueError(f"cell {change['id']} changed since it was read")
            if change["op"] == "set":
                cells[at]["source"] = change["source"]
            elif change["op"] == "delete":
                del cells[at]
            elif change["op"] == "move":
                cells.insert(change["to"], cells.pop(at))
            elif change["op"] == "outputs":
                cells[at]["outputs"] = change["outputs"]
                cells[at]["execution_count"] = change.get("execution_count")
        self.cells[:] = cells
        return ids


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def tool_result(model_server: Any) -> str:
    """The last tool result the model received."""
    last = model_server.requests[-1]["messages"]
    return next(m["content"] for m in reversed(last) if m["role"] == "tool")


NOTEBOOK = [
    markdown("# Sales\nRevenue by month.", "intro", tags=["header"]),
    code(
        "%%python\nprint(total)",
        "c1",
        [
            {"output_type": "stream", "name": "stdout", "text": "1200\n"},
            {
                "output_type": "display_data",
                "data": {"image/png": PNG_HEAD, "text/plain": "<Figure>"},
                "metadata": {},
            },
            {"output_type": "error", "ename": "KeyError", "evalue": "'month'", "traceback": []},
        ],
    ),
    code("why did revenue dip in March?", "p1"),
]


def test_read_sees_the_live_document_with_unsaved_cells(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    page.cells.append(code("%%python\nunsaved = 1", "draft"))
    model_server.extend([call("read_notebook"), {"text": "Read it."}])
    page.serve(kernel.send("read my notebook"))
    result = tool_result(model_server)
    assert "4 cells (the page's document now, with unsaved edits)" in result
    intro = short_hash("# Sales\nRevenue by month.")
    assert f"--- cell 0 · markdown · id intro · hash {intro}" in result
    assert "tags: header" in result
    assert "stdout: 1200" in result and "PNG 2x3" in result and "error: KeyError: 'month'" in result
    assert "cell 2 · prompt · id p1" in result
    assert "cell 3 · python · id draft" in result and "unsaved = 1" in result


def test_read_range_and_search(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    model_server.extend(
        [
            call("read_notebook", search="MARCH"),
            call("read_notebook", start=1, end=2),
            {"text": "ok"},
        ]
    )
    page.serve(kernel.send("find March"))
    by_search = model_server.requests[-2]["messages"][-1]["content"]
    assert "id p1" in by_search and "id intro" not in by_search and "id c1" not in by_search
    by_range = tool_result(model_server)
    assert "id c1" in by_range and "id p1" not in by_range and "id intro" not in by_range


def test_an_approved_insert_reaches_the_page_with_its_diff(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    new = [{"kind": "python", "source": "df = load()"}, {"kind": "markdown", "source": "## Plot"}]
    model_server.extend([call("insert_cells", index=1, cells=new), {"text": "Inserted."}])
    page.serve(kernel.send("add a loading cell"))
    [card] = page.cards
    assert card["tool"] == "insert_cells"
    assert (
        "+++ new cell 1 (python)" in card["detail"] and "+%%python\n+df = load()" in card["detail"]
    )
    assert "+++ new cell 2 (markdown)" in card["detail"] and "+## Plot" in card["detail"]
    assert [c["source"] for c in page.cells[1:3]] == ["%%python\ndf = load()", "## Plot"]
    assert [c["cell_type"] for c in page.cells[1:3]] == ["code", "markdown"]
    assert "Inserted 2 cell(s) at index 1" in tool_result(model_server)


def test_a_cell_is_labelled_by_what_it_will_run_not_by_the_kind_the_model_names(
    kernel, model_server
):
    """A "prompt" cell whose text starts with `%%python` runs as Python under Run All: the
    card says python, for an inserted cell and for an edit that makes a prompt Python."""
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    sneaky = [{"kind": "prompt", "source": "%%python\nimport os; os.remove('data.csv')"}]
    read = short_hash("why did revenue dip in March?")
    model_server.extend(
        [
            call("insert_cells", index=1, cells=sneaky),
            call("edit_cell", cell_id="p1", read_hash=read, source="%%python\nprint(1)"),
            {"text": "Done."},
        ]
    )
    page.serve(kernel.send("tidy up"))
    inserted, edited = page.cards
    assert "+++ new cell 1 (python)" in inserted["detail"], inserted["detail"]
    assert "(prompt)" not in inserted["detail"]
    assert "--- cell 3 (prompt, id p1)" in edited["detail"], edited["detail"]
    assert "+++ cell 3 (python, id p1)" in edited["detail"]


def test_a_denied_edit_leaves_the_document_unchanged(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    before = json.dumps(page.cells)
    read = short_hash("why did revenue dip in March?")
    model_server.extend(
        [call("edit_cell", cell_id="p1", read_hash=read, source="why the dip?"), {"text": "ok"}]
    )
    page.serve(kernel.send("shorten the question"), choice="deny")
    [card] = page.cards
    assert "-why did revenue dip in March?\n+why the dip?" in card["detail"]
    assert json.dumps(page.cells) == before
    assert [r["op"] for r in page.requests] == ["read"]


def test_edit_delete_and_move(kernel, model_server, co_home):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    p1, intro = (
        short_hash("why did revenue dip in March?"),
        short_hash("# Sales\nRevenue by month."),
    )
    model_server.extend(
        [
            call("edit_cell", cell_id="p1", read_hash=p1, source="why the dip?"),
            call("move_cell", cell_id="p1", read_hash=short_hash("why the dip?"), to_index=0),
            call("delete_cells", cells=[{"cell_id": "intro", "read_hash": intro}]),
            {"text": "Done."},
        ]
    )
    page.serve(kernel.send("tidy up"))
    assert [c["id"] for c in page.cells] == ["p1", "c1"]
    assert page.cells[0]["source"] == "why the dip?"
    assert "--- cell 1 (markdown, id intro)\n+++ /dev/null" in page.cards[2]["detail"]
    # The audit log (and so the activity panel) lists each call with the cell it names.
    with sqlite3.connect(co_home / "data" / "telemetry.db") as db:
        rows = db.execute("SELECT tool, target, decision FROM agent_actions ORDER BY id").fetchall()
    assert ("edit_cell", "p1", "approved") in rows and ("move_cell", "p1", "approved") in rows
    assert ("delete_cells", None, "approved") in rows


def test_a_stale_proposal_is_refused(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    stale = short_hash("an older text the model read")
    model_server.extend(
        [
            call("edit_cell", cell_id="p1", read_hash=stale, source="x"),
            {"text": "I will read again."},
        ]
    )
    page.serve(kernel.send("edit it"))
    result = tool_result(model_server)
    assert f"Refused: cell p1 (index 2) changed since you read it (you read hash {stale}" in result
    assert page.cards == [] and page.cells[2]["source"] == "why did revenue dip in March?"


def test_a_change_while_the_card_waits_is_refused_by_the_page(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    p1 = short_hash("why did revenue dip in March?")
    model_server.extend(
        [call("edit_cell", cell_id="p1", read_hash=p1, source="new"), {"text": "ok"}]
    )
    msg_id = kernel.send("edit it")
    # The person edits the cell while the card waits: the page keeps their text.
    original = page._answer

    def answer(data: dict[str, Any]) -> None:
        if data["op"] == "edit":
            page.cells[2]["source"] = "typed meanwhile"
        original(data)

    page._answer = answer  # type: ignore[method-assign]
    page.serve(msg_id)
    assert page.cells[2]["source"] == "typed meanwhile"
    assert "The notebook was not changed: cell p1 changed since it was read" in tool_result(
        model_server
    )


def test_run_cell_shows_outputs_in_the_cell_and_returns_them(kernel, model_server):
    page = LivePage(kernel, [code("%%python\nx = 6 * 7\nprint('x is', x)\nx", "calc")])
    model_server.extend(
        [call("run_cell", cell_id="calc", read_hash=short_hash(page.cells[0]["source"])),
         {"text": "42."}]
    )  # fmt: skip
    page.serve(kernel.send("run it"))
    assert "Runs cell 0 (python, id calc) on the host" in page.cards[0]["detail"]
    result = tool_result(model_server)
    assert "x is 42" in result and "result: 42" in result
    outputs = page.cells[0]["outputs"]
    assert outputs[0] == {"output_type": "stream", "name": "stdout", "text": "x is 42\n"}
    assert outputs[1]["data"] == {"text/plain": "42"}


def test_a_cell_the_agent_ran_shows_the_kernel_s_next_count(kernel, model_server):
    assert kernel.execute("%%python\nx = 6").reply["content"]["execution_count"] == 1
    page = LivePage(kernel, [code("%%python\nx * 7", "calc")])
    run = call("run_cell", cell_id="calc", read_hash=short_hash("%%python\nx * 7"))
    model_server.extend([run, run, {"text": "42, twice."}])
    msg_id = kernel.send("run it twice")
    page.serve(msg_id)
    [started] = [
        m
        for m in page.messages
        if m["msg_type"] == "execute_input" and m["parent_header"]["msg_id"] == msg_id
    ]
    assert started["content"]["execution_count"] == 2
    # Each run shows the next count, as if the person had run the cell after the prompt.
    sent = [r["changes"][0] for r in page.requests if r["op"] == "edit"]
    assert [c["execution_count"] for c in sent] == [3, 4]
    assert page.cells[0]["execution_count"] == 4
    assert page.cells[0]["outputs"] == [
        {"output_type": "execute_result", "data": {"text/plain": "42"}, "metadata": {},
         "execution_count": 4}
    ]  # fmt: skip
    # The person's next cell comes after them.
    assert kernel.execute("%%python\nx").reply["content"]["execution_count"] == 5


def test_only_the_page_of_the_kernel_s_own_notebook_answers(start_kernel, model_server, workspace):
    # The server started the kernel for sales/analysis.ipynb (JPY_SESSION_NAME is its
    # absolute path); other notebooks use the same kernel.
    (workspace / "sales").mkdir()
    own_file = workspace / "sales" / "analysis.ipynb"
    own_file.write_text(json.dumps({"cells": [markdown("# Saved", "saved")], "nbformat": 4}))
    kernel = start_kernel({"JPY_SESSION_NAME": str(own_file)})
    other = LivePage(kernel, [markdown("# Other", "other")], path="sales/scratch.ipynb")
    # Only the other notebook is open: the kernel reads its own saved file, offers no
    # editing, and never asks the other page.
    model_server.extend([call("read_notebook"), {"text": "ok"}])
    other.serve(kernel.send("read my notebook"))
    result = tool_result(model_server)
    assert "the SAVED version on disk" in result and "id saved" in result
    offered = {t["function"]["name"] for t in model_server.requests[-1]["tools"]}
    assert "read_notebook" in offered and "insert_cells" not in offered
    assert other.requests == []

    # Its own page opens, then one of a notebook with the same file name in the root.
    own = LivePage(kernel, [markdown("# Own", "own")], path="sales/analysis.ipynb")
    latest = LivePage(kernel, [markdown("# Latest", "latest")], path="analysis.ipynb")
    new = [{"kind": "markdown", "source": "## Added"}]
    model_server.extend(
        [call("read_notebook"), call("insert_cells", index=1, cells=new), {"text": "ok"}]
    )
    own.serve(kernel.send("read and add"), others=(other, latest))
    assert "id own" in model_server.requests[-2]["messages"][-1]["content"]
    assert [r["op"] for r in own.requests] == ["read", "read", "edit"]
    assert [c["source"] for c in own.cells] == ["# Own", "## Added"]
    assert other.requests == latest.requests == []


def test_pages_of_two_notebooks_on_a_kernel_not_told_its_own_are_not_used(kernel, model_server):
    first = LivePage(kernel, [markdown("# One", "one")], path="one.ipynb")
    second = LivePage(kernel, [markdown("# Two", "two")], path="two.ipynb")
    model_server.extend([call("read_notebook"), {"text": "ok"}])
    first.serve(kernel.send("read my notebook"), others=(second,))
    assert (
        "Cannot read the notebook: pages of several notebooks use this kernel, and the kernel "
        "was not told which notebook is its own" in tool_result(model_server)
    )
    assert first.requests == second.requests == []


def test_secrets_in_cells_are_redacted(start_kernel, model_server):
    kernel = start_kernel({"OPENAI_API_KEY": "sk-test-secret-value-12345"})
    page = LivePage(kernel, [code("%%python\nkey = 'sk-test-secret-value-12345'", "k")])
    model_server.extend([call("read_notebook"), {"text": "ok"}])
    page.serve(kernel.send("read"))
    result = tool_result(model_server)
    assert "sk-test-secret-value-12345" not in result and "id k" in result


def test_headless_reads_the_saved_file_and_offers_no_editing(start_kernel, model_server, workspace):
    path = workspace / "saved.ipynb"
    path.write_text(json.dumps({"cells": NOTEBOOK[:1], "metadata": {}, "nbformat": 4}))
    kernel = start_kernel({"JPY_SESSION_NAME": str(path)})
    model_server.extend([call("read_notebook"), {"text": "ok"}])
    kernel.execute("read it", mode="headless")
    result = tool_result(model_server)
    assert "1 cells (the SAVED version on disk" in result and "id intro" in result
    assert "cannot be inserted, edited, deleted, moved or run" in result
    offered = {t["function"]["name"] for t in model_server.requests[-1]["tools"]}
    assert "read_notebook" in offered and not offered & {"insert_cells", "edit_cell", "run_cell"}


def test_neither_page_nor_file_gives_a_clear_message(start_kernel, model_server):
    kernel = start_kernel({"JPY_SESSION_NAME": str(Path("/nonexistent/gone.ipynb"))})
    model_server.extend([call("read_notebook"), {"text": "ok"}])
    kernel.execute("read it", mode="headless")
    assert (
        "Cannot read the notebook: no page with Co's JupyterLab extension shows this notebook, and its saved file"
        in tool_result(model_server)
    )


def test_tools_lists_reading_as_automatic_and_editing_as_asking(kernel):
    before = kernel.execute("%tools").markdown()
    assert "| `read_notebook` | notebook | runs without asking |" in before
    assert "| `insert_cells` |" not in before and "`insert_cells`, `move_cell`" in before
    LivePage(kernel, [])
    report = kernel.execute("%tools").markdown()
    for tool in ("insert_cells", "edit_cell", "delete_cells", "move_cell", "run_cell"):
        assert f"| `{tool}` | notebook | asks first |" in report
    assert "| `read_notebook` | notebook | runs without asking |" in report


def test_a_page_that_closes_while_asked_ends_the_read_with_its_reason(kernel, model_server):
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])

    def close(data: dict[str, Any]) -> None:
        content = {"comm_id": page.comm_id, "data": {}}
        kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_close", content))

    page._answer = close  # type: ignore[method-assign]
    model_server.extend([call("read_notebook"), {"text": "ok"}])
    page.serve(kernel.send("read"))
    assert (
        "Cannot read the notebook: the page could not be read (the page closed), and no "
        "notebook file is known." in tool_result(model_server)
    )
    # Closed, the page is gone: the editing tools are not offered.
    offered = {t["function"]["name"] for t in model_server.requests[-1]["tools"]}
    assert "read_notebook" in offered and "insert_cells" not in offered
