"""Record `notebooks/08-data-analysis.replay.jsonl` with a page, as JupyterLab would.

    .venv/bin/python scripts/record_08_with_page.py
    .venv/bin/python scripts/record_notebook.py notebooks/08-data-analysis.ipynb

The notebook's session edits the notebook (it reads it, inserts a cell, runs it), so its
replay script must hold what the page answered. This runs the notebook's cells in a Co
kernel that records (`record_path`), with the page played over the `co.notebook` comm the
way the kernel tests play it (tests/kernel/test_notebook_cells.py: the page holds the
notebook's cells, applies approved edits, approves every card as a click would) and the
model's answers below served by the scripted server: Co's own recorder writes every step,
with its checks and page exchanges. The check after `run_cell` is then cut to the table's
start: the recorded one ends with the figure's pixel size and the id pydantic-ai gives its
bytes, which follow the fonts installed. The second command stores the replayed outputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("CO_TEST_FORK", "0")

import nbformat  # noqa: E402

from co_kernel.replay import ScriptedModelServer  # noqa: E402
from tests.kernel.test_notebook_cells import LivePage  # noqa: E402
from tests.support.kernel_harness import CoKernel  # noqa: E402

NOTEBOOK = REPO / "notebooks" / "08-data-analysis.ipynb"
SCRIPT = NOTEBOOK.with_name("08-data-analysis.replay.jsonl")
PROMPT = "Load data/sales.csv"
NEW_ID = "5f3c2a9e-7d41-4b8a-9c0e-2e6f1a4b7d35"
"""The id the page gives the inserted cell (JupyterLab makes up a UUID)."""
CODE = """import matplotlib.pyplot as plt
import pandas as pd

sales = pd.read_csv("data/sales.csv", parse_dates=["month"])
sales["label"] = sales["month"].dt.strftime("%b")
ax = sales.plot.bar(x="label", y="revenue", legend=False, figsize=(7, 3.5), rot=0)
ax.set(title="Revenue by month, 2024", xlabel="", ylabel="EUR")
sales["per_order"] = (sales["revenue"] / sales["orders"]).round(1)
sales.loc[6:8, ["label", "revenue", "orders", "per_order"]]"""
EXPLANATION = (
    "Revenue climbs from about 40k EUR in January to 58.7k EUR in December, with one clear "
    "dip: **August, 33.1k EUR**, about 29 % below July (46.8k EUR).\n\n"
    "The table under the plot shows why: August had **648 orders** against 897 in July, "
    "while the revenue per order stayed near 51 EUR. So customers did not spend less per "
    "order; fewer of them ordered, which looks like a seasonal (holiday) slowdown rather "
    "than a pricing problem. September is back to 871 orders.\n\n"
    "The code is in the new `%%python` cell below your question: change it and run it "
    "again to look closer."
)
TABLE_START = (
    "result:   label  revenue  orders  per_order\\n6   Jul    46800     897       52.2\\n"
    "7   Aug    33100     648       51.1"
)
"""The check after run_cell: the start of its result as the tool message carries it."""


def answers(insert_at: int) -> list[dict[str, Any]]:
    source_hash = hashlib.sha256(f"%%python\n{CODE}".encode()).hexdigest()[:8]
    cells = [{"kind": "python", "source": CODE}]
    return [
        {
            "text": "I'll read the notebook first.",
            "tool_calls": [{"name": "read_notebook", "arguments": {}, "id": "call_read"}],
        },
        {
            "text": "I'll add a `%%python` cell below your question that loads the CSV, plots "
            "revenue by month and shows the months around the dip.",
            "tool_calls": [
                {
                    "name": "insert_cells",
                    "arguments": {"index": insert_at, "cells": cells},
                    "id": "call_insert",
                }
            ],
        },
        {
            "tool_calls": [
                {
                    "name": "run_cell",
                    "arguments": {"cell_id": NEW_ID, "read_hash": source_hash},
                    "id": "call_run",
                }
            ]
        },
        {"text": EXPLANATION},
    ]


class Page(LivePage):
    """The notebook's page: it names the notebook and gives the inserted cell NEW_ID."""

    def _answer(self, data: dict[str, Any]) -> None:
        if data["op"] != "read":
            return super()._answer(data)
        self.requests.append(data)
        reply = {"reply": data["request"], "cells": self.cells, "path": NOTEBOOK.name}
        self.kernel.send_comm_msg(self.comm_id, reply | {"dirty": True})

    def _edit(self, changes: list[dict[str, Any]]) -> list[str]:
        ids = super()._edit(changes)
        for cell in self.cells:
            if cell["id"] in ids:
                cell["id"] = NEW_ID
        return [NEW_ID for _ in ids]


def page_cells(nb: Any, ran: int) -> list[dict[str, Any]]:
    """The notebook as a Run All shows it when cell ``ran`` starts: outputs above it."""
    cells = []
    for index, cell in enumerate(nb.cells):
        item = {"id": cell.id, "cell_type": cell.cell_type, "source": cell.source}
        item["metadata"] = dict(cell.metadata)
        if cell.cell_type == "code":
            item["execution_count"] = cell.execution_count if index < ran else None
            item["outputs"] = [dict(o) for o in cell.outputs] if index < ran else []
        cells.append(item)
    return cells


def main() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    prompt = next(i for i, c in enumerate(nb.cells) if c.source.startswith(PROMPT))
    home = tempfile.mkdtemp(prefix="co-home-record-08-")
    try:
        with ScriptedModelServer(answers(prompt + 1)) as server:
            env = {
                "CO_HOME": home,
                "CO_SANDBOX": "subprocess",
                "CO_TRUSTED_FOLDERS": json.dumps([str(NOTEBOOK.parent)]),
                "CO_MODEL": "compat:scripted",
                "CO_BASE_URL": server.base_url,
                "CO_RECORD_PATH": str(SCRIPT),
            }
            kernel = CoKernel(env, NOTEBOOK.parent, fork=False)
            try:
                for index, cell in enumerate(nb.cells[: prompt + 1]):
                    if cell.cell_type != "code" or cell.source.startswith("%model"):
                        continue
                    if index == prompt:
                        page = Page(kernel, page_cells(nb, index))
                        page.serve(kernel.send(cell.source, cell_id=cell.id), timeout=180)
                    else:
                        kernel.execute(cell.source, cell_id=cell.id)
            finally:
                kernel.shutdown()
            if server.errors:
                raise SystemExit(f"the scripted model refused requests: {server.errors}")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    steps = [json.loads(line) for line in SCRIPT.read_text().split("\n") if line.strip()]
    steps[-1]["expect"] = {"tool_result_contains": TABLE_START}
    SCRIPT.write_text("".join(json.dumps(step, ensure_ascii=False) + "\n" for step in steps))
    print(f"recorded {SCRIPT}: {len(steps)} steps")


if __name__ == "__main__":
    main()
