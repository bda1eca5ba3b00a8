"""The server extension over real HTTP: enabled by its config file, authenticated, filtered."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from co_kernel.telemetry import AuditEvent, AuditLog

from ..support.lab_server import JupyterServer, start_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    base = tmp_path_factory.mktemp("server")
    root = base / "root"
    root.mkdir()
    home = base / "co-home"
    running = start_server(root, env={"CO_HOME": str(home)}, app="server", base=base / "jupyter")
    try:
        yield running
    finally:
        running.stop()


def _db(server: JupyterServer) -> Path:
    return Path(server.env["CO_HOME"]) / "data" / "telemetry.db"


def test_needs_the_token(server: JupyterServer) -> None:
    status, _ = server.get_json("co-kernel/activity", token=False)
    assert status == 403


def test_empty_log_before_any_turn(server: JupyterServer) -> None:
    status, data = server.get_json("co-kernel/activity")
    assert status == 200, data
    assert data["rows"] == [] and data["sessions"] == []
    assert data["db"] == str(_db(server))
    assert not _db(server).exists()


def test_rows_written_by_a_kernel_are_served_with_filters(server: JupyterServer) -> None:
    log = AuditLog(_db(server))
    now = time.time()
    log.record(AuditEvent("sess-a", "run_shell_command", "approved", turn=1, target="ls", ts=now))
    log.record(AuditEvent("sess-a", "run_shell_command", "denied", turn=2, status="denied"))
    log.record(AuditEvent("sess-b", "read_file", "auto", turn=1, ts=now - 7200))
    log.close()

    status, data = server.get_json("co-kernel/activity")
    assert status == 200
    assert {r["session_id"] for r in data["rows"]} == {"sess-a", "sess-b"}
    assert {s["session_id"]: s["calls"] for s in data["sessions"]} == {"sess-a": 2, "sess-b": 1}

    _, denied = server.get_json("co-kernel/activity", decision="denied")
    assert [(r["tool"], r["turn"]) for r in denied["rows"]] == [("run_shell_command", 2)]

    _, recent = server.get_json("co-kernel/activity", since=str(now - 3600))
    assert {r["session_id"] for r in recent["rows"]} == {"sess-a"}

    _, one = server.get_json("co-kernel/activity", session="sess-b", tool="read_file")
    assert [r["decision"] for r in one["rows"]] == ["auto"]

    # JupyterLab's ServerConnection appends a bare timestamp to GETs against caches.
    status, busted = server.get_json("co-kernel/activity", decision="auto", **{"1795320670717": ""})
    assert status == 200, busted
    assert [r["tool"] for r in busted["rows"]] == ["read_file"]


def test_bad_filter_is_a_clear_400(server: JupyterServer) -> None:
    status, data = server.get_json("co-kernel/activity", since="100%")
    assert status == 400
    assert (
        data["message"] == "Bad activity filter: since must be a Unix time in seconds, not '100%'"
    )
    status, _ = server.get_json("api/status")
    assert status == 200
