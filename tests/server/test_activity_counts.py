"""The activity endpoint on a real kernel's session: turns with and without tool calls."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..support.lab_server import JupyterServer, start_server
from ..support.scripted import call_step

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory, co_home) -> Iterator[JupyterServer]:
    base = tmp_path_factory.mktemp("server")
    root = base / "root"
    root.mkdir()
    running = start_server(root, env={"CO_HOME": str(co_home)}, app="server", base=base / "jupyter")
    try:
        yield running
    finally:
        running.stop()


def test_one_row_per_tool_call_and_every_turn_counted(
    server: JupyterServer, start_kernel, model_server, workspace
) -> None:
    model_server.extend(
        [
            {"text": "Hello."},
            call_step("write_file", path="notes/a.md", content="x\n"),
            {"expect": {"tool_result_contains": "Created"}, "text": "Written."},
            call_step("write_file", path="../outside.md", content="x\n"),
            {"expect": {"tool_result_contains": "Refused"}, "text": "Not allowed there."},
            {"text": "Bye."},
        ]
    )
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    for prompt in ("hello", "write a", "write outside", "bye"):
        result = kernel.execute(prompt, mode="headless")
        assert result.status == "ok", result.text()
    assert model_server.errors == []
    assert (workspace / "notes" / "a.md").exists() and not (
        workspace.parent / "outside.md"
    ).exists()

    status, data = server.get_json("co-kernel/activity")
    assert status == 200, data
    assert [(r["tool"], r["turn"], r["decision"]) for r in data["rows"]] == [
        ("write_file", 3, "scope-refused"),
        ("write_file", 2, "approved"),
    ]
    refused, written = data["rows"]
    assert written["target"] == "notes/a.md" and written["status"] == "ok"
    assert [c["action"] for c in written["checks"]] == ["create"]
    assert str(workspace / "notes" / "a.md") in written["detail"]
    assert refused["status"] == "refused" and "outside" in (refused["detail"] or "")
    [session] = data["sessions"]
    assert (session["turns"], session["calls"], session["refused"]) == (4, 2, 1)
