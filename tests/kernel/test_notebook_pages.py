"""Two pages show one Co kernel's notebook (two tabs, or two people with real-time
collaboration), over ZMQ.

A page is told apart by the client session of its messages (``header.session``), one per
JupyterLab kernel connection. Reads go to the page that connected last; an approved edit
goes to the page whose person approved it, where undo reverts it (each page undoes only
its own changes to a shared document).
"""

from __future__ import annotations

from tests.kernel.test_notebook_cells import NOTEBOOK, LivePage, call, tool_result


def test_an_approved_edit_goes_to_the_page_that_approved_it(kernel, model_server):
    first = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    # A second page connects later, from a kernel connection of its own.
    own = kernel.kc.session.session
    kernel.kc.session.session = "second-page"
    try:
        second = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    finally:
        kernel.kc.session.session = own
    heading = [{"kind": "markdown", "source": "## Plot"}]
    model_server.extend([call("insert_cells", index=1, cells=heading), {"text": "Inserted."}])
    # The first page's person approves (its co.approvals comm, from its client session).
    first.serve(kernel.send("add a heading"), others=(second,))
    assert [r["op"] for r in second.requests] == ["read"]
    assert [r["op"] for r in first.requests] == ["edit"]
    assert first.cells[1]["source"] == "## Plot" and len(second.cells) == len(NOTEBOOK)
    assert "Inserted 1 cell(s) at index 1" in tool_result(model_server)
