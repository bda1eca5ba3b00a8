"""Record and replay of the notebook tools, over ZMQ.

A session recorded with a page (the test plays it over the ``co.notebook`` comm, as
test_notebook_cells.py does) keeps what each notebook tool asked the page and what the
page answered. Replayed headless (as nbval, nbclient and papermill run a notebook), the
recorded answers stand in for the page and the turn goes as recorded; a replay whose
edit differs from the recorded one fails the cell, naming the difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.kernel.test_notebook_cells import NOTEBOOK, LivePage, short_hash
from tests.support.kernel_harness import CoKernel

PROMPT = "Add a cell that computes x and run it."
NEW_SOURCE = "%%python\nx = 6 * 7\nprint('x is', x)"


class NumberingPage(LivePage):
    """A live page whose inserted cells get the ids new-1, new-2, ... (a page makes up
    random ones), so a scripted model can name a cell it inserted."""

    inserted = 0

    def _edit(self, changes: list[dict[str, Any]]) -> list[str]:
        ids = super()._edit(changes)
        renamed = []
        for old in ids:
            self.inserted += 1
            [cell] = [c for c in self.cells if c["id"] == old]
            cell["id"] = f"new-{self.inserted}"
            renamed.append(cell["id"])
        return renamed


SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "read_notebook", "arguments": {}, "id": "c_read"}]},
    {
        "tool_calls": [
            {
                "name": "insert_cells",
                "arguments": {"index": 3, "cells": [{"kind": "python", "source": NEW_SOURCE[9:]}]},
                "id": "c_insert",
            }
        ]
    },
    {
        "tool_calls": [
            {
                "name": "run_cell",
                "arguments": {"cell_id": "new-1", "read_hash": short_hash(NEW_SOURCE)},
                "id": "c_run",
            }
        ]
    },
    {"text": "Inserted and ran it: x is 42."},
]


def _steps(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def _write(path: Path, steps: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(step) + "\n" for step in steps))


def _call(steps: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    return next(c for s in steps for c in s.get("tool_calls", []) if c["id"] == call_id)


@pytest.fixture
def recording(start_kernel, model_server, workspace: Path) -> Path:
    """A session recorded with a live page: read, insert a cell, run it, answer."""
    script = workspace / "rec.jsonl"
    kernel = start_kernel({"CO_RECORD_PATH": str(script)})
    page = NumberingPage(kernel, [dict(c) for c in NOTEBOOK])
    model_server.extend(SCRIPT)
    page.serve(kernel.send(PROMPT))
    assert [c["id"] for c in page.cells] == ["intro", "c1", "p1", "new-1"]
    assert page.cells[3]["outputs"][0]["text"] == "x is 42\n"
    return script


def _replayer(start_kernel, script: Path) -> CoKernel:
    """A kernel replaying the script headless: no page, no provider, recorded approvals."""
    return start_kernel(
        {"CO_MODEL": f"replay:{script.name}", "CO_REPLAY_APPROVALS": "true"}, model=False
    )


def test_a_recording_keeps_what_the_page_was_asked_and_answered(recording: Path):
    steps = _steps(recording)
    [read] = _call(steps, "c_read")["page"]
    assert read["op"] == "read" and [c["id"] for c in read["reply"]["cells"]] == [
        "intro",
        "c1",
        "p1",
    ]
    insert = _call(steps, "c_insert")
    assert insert["decision"] == "approved"
    edit = insert["page"][-1]
    assert edit == {
        "op": "edit",
        "proposed": [
            {"op": "insert", "index": 3, "cells": [{"cell_type": "code", "source": NEW_SOURCE}]}
        ],
        "reply": {"ok": True, "ids": ["new-1"]},
    }
    # Outputs are kept by kind and the cell by position: ids and bytes vary between runs.
    outputs = _call(steps, "c_run")["page"][-1]
    assert outputs["proposed"] == [{"op": "outputs", "cell": 3, "outputs": ["stream stdout"]}]


def test_a_headless_replay_takes_the_recorded_page_answers(recording: Path, start_kernel):
    kernel = _replayer(start_kernel, recording)
    result = kernel.execute(PROMPT, mode="headless", timeout=90)
    assert result.status == "ok", result.text()
    text = result.text()
    assert "Inserted and ran it: x is 42." in text
    assert text.count("replayed page: no page is connected") == 3
    # The run was real: the cell's code ran in the kernel's namespace.
    assert kernel.execute("%%python\nprint(x)").stdout == "42\n"


def test_a_replay_whose_edit_differs_fails_naming_the_difference(recording: Path, start_kernel):
    steps = _steps(recording)
    proposed = _call(steps, "c_insert")["page"][-1]["proposed"][0]
    proposed["cells"][0]["source"] = "%%python\nx = 6 * 9\nprint('x is', x)"
    _write(recording, steps)
    kernel = _replayer(start_kernel, recording)
    result = kernel.execute(PROMPT, mode="headless", timeout=90)
    assert result.status == "error"
    text = result.text()
    assert (
        "The replayed `insert_cells` call (c_insert) proposes another notebook edit than the "
        f"one recorded in {recording}: change 1 (insert), new cell 1, source, line 2: "
        "recorded 'x = 6 * 9', now 'x = 6 * 7'. The notebook or its replay script changed"
    ) in text, text
    assert "Inserted and ran it" not in text


def test_a_replay_inserting_elsewhere_fails_naming_the_position(recording: Path, start_kernel):
    steps = _steps(recording)
    _call(steps, "c_insert")["page"][-1]["proposed"][0]["index"] = 0
    _write(recording, steps)
    result = _replayer(start_kernel, recording).execute(PROMPT, mode="headless", timeout=90)
    assert result.status == "error"
    assert "change 1 (insert), index: recorded 0, now 3" in result.text()


def test_a_replay_of_a_script_recorded_without_a_page_offers_no_editing(
    start_kernel, workspace: Path
):
    """A script recorded headless (no page answers) replays as it was recorded: no editing tools."""
    script = workspace / "plain.jsonl"
    _write(
        script,
        [{"expect": {"tools_exclude": ["insert_cells", "run_cell"]}, "text": "No page here."}],
    )
    result = _replayer(start_kernel, script).execute("hello", mode="headless", timeout=60)
    assert result.status == "ok" and "No page here." in result.text()


def test_a_replay_with_a_page_connected_applies_the_compared_edits(recording: Path, start_kernel):
    """In JupyterLab a replay edits the page's document: the recorded edit is compared
    (by position, as the page's ids are its own), then the page applies it."""
    kernel = _replayer(start_kernel, recording)
    page = NumberingPage(kernel, [dict(c) for c in NOTEBOOK])
    page.serve(kernel.send(PROMPT))
    assert [c["id"] for c in page.cells] == ["intro", "c1", "p1", "new-1"]
    assert page.cells[3]["source"] == NEW_SOURCE
    assert page.cells[3]["outputs"][0]["text"] == "x is 42\n"
    shown = json.dumps([m["content"] for m in page.messages])
    assert "Inserted and ran it" in shown and "replayed page" not in shown


def test_a_replay_in_a_page_that_makes_up_its_own_ids_runs_the_cell_it_inserted(
    recording: Path, start_kernel
):
    """A real page gives an inserted cell a random id; the replayed model names the cell by
    the recorded id (`new-1`), which now means the page's."""
    kernel = _replayer(start_kernel, recording)
    page = LivePage(kernel, [dict(c) for c in NOTEBOOK])
    page.serve(kernel.send(PROMPT))
    [inserted] = [c for c in page.cells if c["source"] == NEW_SOURCE]
    assert inserted["id"] != "new-1"
    assert inserted["outputs"][0]["text"] == "x is 42\n"
    shown = json.dumps([m["content"] for m in page.messages])
    assert "Inserted and ran it" in shown and "No cell with id" not in shown


def test_a_differing_edit_is_refused_before_the_person_is_asked(recording: Path, start_kernel):
    steps = _steps(recording)
    _call(steps, "c_insert")["page"][-1]["proposed"][0]["index"] = 1
    _write(recording, steps)
    kernel = start_kernel({"CO_MODEL": f"replay:{recording.name}"}, model=False)
    page = NumberingPage(kernel, [dict(c) for c in NOTEBOOK])
    page.serve(kernel.send(PROMPT))
    assert page.cards == [] and [c["id"] for c in page.cells] == ["intro", "c1", "p1"]
    shown = json.dumps([m["content"] for m in page.messages])
    assert "change 1 (insert), index: recorded 1, now 3" in shown
