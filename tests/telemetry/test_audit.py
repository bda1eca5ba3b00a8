"""The audit log: rows, filters, and two writers at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from co_kernel.telemetry import AuditEvent, AuditLog, audit_target


def _write_many(path: str, session: str, count: int) -> None:
    log = AuditLog(Path(path))
    for i in range(count):
        log.record(
            AuditEvent(session_id=session, tool="run_shell_command", decision="approved", turn=i)
        )
    log.close()


def test_rows_are_recorded_and_filtered(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "t.db")
    log.record(
        AuditEvent(
            session_id="s1", tool="write_file", decision="denied", target="a.txt", status="denied"
        )
    )
    log.record(
        AuditEvent(
            session_id="s1", tool="read_file", decision="auto", target="b.txt", result_size=10
        )
    )
    log.record(
        AuditEvent(
            session_id="s2", tool="read_file", decision="scope-refused", target="/etc/passwd"
        )
    )
    assert [r["target"] for r in log.query(session_id="s1")] == ["b.txt", "a.txt"]
    refused = log.query(decision="scope-refused")
    assert len(refused) == 1 and refused[0]["target"] == "/etc/passwd"
    assert {r["session_id"] for r in log.query(tool="read_file")} == {"s1", "s2"}
    log.close()


def test_two_processes_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    AuditLog(path).close()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_many, args=(str(path), f"s{i}", 200)) for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    log = AuditLog(path)
    assert len(log.query(session_id="s0", limit=1000)) == 200
    assert len(log.query(session_id="s1", limit=1000)) == 200
    log.close()


def test_target_comes_from_the_first_known_argument() -> None:
    assert audit_target({"cmd": "ls -la", "timeout": 5}) == "ls -la"
    assert audit_target({"path": "notes/a.md", "query": "x"}) == "notes/a.md"
    assert audit_target({"count": 3}) is None
