"""Managed settings through a real kernel: a deployer's file that the
user's settings, a project file and the kernel's environment cannot override.

Each kernel gets its own managed file through ``CO_MANAGED_SETTINGS`` (never /etc/co).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from co_kernel.frontend import MIME_TOOL_CALL
from tests.support.files import write_json
from tests.support.kernel_harness import CellResult, WidgetClicker


def _sh(cmd: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_shell_command", "arguments": {"cmd": cmd}}]}


def _decisions(result: CellResult) -> list[str]:
    shown = [d[MIME_TOOL_CALL] for d in result.final_displays().values() if MIME_TOOL_CALL in d]
    return [str(card.get("decision") or "") for card in shown]


def test_a_managed_deny_rule_beats_the_users_allow_rule_and_yolo(
    start_kernel, model_server, workspace: Path, co_home: Path, tmp_path: Path
):
    managed = write_json(
        tmp_path / "etc-co" / "settings.json",
        {
            "approval_mode": "deny",
            "permissions": {
                "deny": ["run_shell_command(rm*)"],
                "ask": ["run_shell_command(touch asked*)"],
            },
        },
    )
    user_file = write_json(
        co_home / "config" / "settings.json",
        {
            "approval_mode": "approve",
            "permissions": {"allow": ["run_shell_command(rm*)", "run_shell_command(touch asked*)"]},
        },
    )
    (workspace / "victim.txt").write_text("keep me\n")
    kernel = start_kernel({"CO_MANAGED_SETTINGS": str(managed)})
    first = kernel.execute("%yolo on")
    assert "Auto-approve is **on**" in first.markdown(), first.text()
    assert (
        f"{user_file}: approval_mode: set by your administrator in {managed}; your value ignored"
        in first.text()
    )
    model_server.extend(
        [_sh("rm victim.txt"), _sh("touch asked-1"), _sh("touch yolo-1"), {"text": "done"}]
    )

    result = kernel.execute("go", mode="headless", timeout=180)

    assert result.status == "ok", result.text()
    assert _decisions(result) == [
        "denied by rule `run_shell_command(rm*)` (managed settings)",
        "denied",  # the managed ask rule asks even under yolo; the locked policy denies
        "yolo",
    ]
    assert (workspace / "victim.txt").read_text() == "keep me\n"
    assert not (workspace / "asked-1").exists()
    assert (workspace / "yolo-1").exists(), "yolo still decides what no floor speaks for"
    sent = "\n".join(str(m) for m in model_server.requests[-1]["messages"])
    assert "denied by rule `run_shell_command(rm*)` (managed settings)" in sent
    listed = kernel.execute("%permissions").text()
    assert "run_shell_command(rm*)" in listed and "managed settings" in listed


def test_allow_yolo_false_refuses_yolo_and_approve_all_approves_one_call(
    start_kernel, model_server, workspace: Path, tmp_path: Path
):
    managed = write_json(tmp_path / "etc-co" / "settings.json", {"allow_yolo": False})
    kernel = start_kernel({"CO_MANAGED_SETTINGS": str(managed), "CO_ALLOW_YOLO": "true"})
    for magic in ("%yolo", "%yolo on"):
        refused = kernel.execute(magic)
        assert refused.status == "error", magic
        assert "`%yolo` is turned off by your administrator" in refused.text()
        assert f"set by managed ({managed})" in refused.text()
    assert kernel.execute("%yolo off").status == "ok"
    status = kernel.execute("%status").text()
    assert "auto-approve (%yolo) | off" in status
    assert f"allow_yolo | set by managed ({managed})" in status

    model_server.extend([_sh("touch made-1"), _sh("touch made-2"), {"text": "done"}])
    clicker = WidgetClicker(["Approve all", "Deny"])
    result = kernel.execute("make them", on_message=clicker, timeout=120)

    assert result.status == "ok", result.text()
    assert [label for label, _ in clicker.clicked] == ["Approve all", "Deny"], "asked twice"
    assert _decisions(result) == ["approved", "denied"]
    assert (workspace / "made-1").exists() and not (workspace / "made-2").exists()
    assert "auto-approve (%yolo) | off" in kernel.execute("%status").text()


def test_status_says_which_layer_set_each_value(
    start_kernel, workspace: Path, co_home: Path, tmp_path: Path
):
    managed = write_json(
        tmp_path / "etc-co" / "settings.json",
        {"max_request_limit": 9, "mcp_allowed_servers": ["none-of-these"]},
    )
    user_file = write_json(co_home / "config" / "settings.json", {"personality": "terse"})
    project_file = write_json(workspace / ".co" / "settings.json", {"verbose": True})
    kernel = start_kernel({"CO_MANAGED_SETTINGS": str(managed), "CO_TOOL_RETRIES": "1"})
    status = kernel.execute("%status").text()
    assert f"managed file | {managed} (its settings are locked)" in status
    assert f"max_request_limit | set by managed ({managed})" in status
    assert f"personality | set by user ({user_file})" in status
    assert f"verbose | set by project ({project_file})" in status
    assert "tool_retries | set by environment (CO_TOOL_RETRIES)" in status
    assert "| show_footer |" not in status, "a setting at its default has no row"


def test_a_broken_managed_file_is_named_and_co_still_works(
    start_kernel, model_server, tmp_path: Path
):
    managed = tmp_path / "etc-co" / "settings.json"
    managed.parent.mkdir()
    managed.write_text('{"model": ')
    kernel = start_kernel({"CO_MANAGED_SETTINGS": str(managed)})
    model_server.extend([{"text": "Still answering."}])
    first = kernel.execute("hello")
    assert first.status == "ok", first.text()
    assert "Still answering." in first.markdown()
    assert f"{managed}: line 1: invalid JSON" in first.text() and "file ignored" in first.text()

    write_json(managed, {"approval_mode": "deny", "aproval_timeout": 5})
    again = start_kernel({"CO_MANAGED_SETTINGS": str(managed)}).execute("%status")
    assert again.status == "ok"
    assert (
        f"{managed}: unknown setting 'aproval_timeout' (did you mean 'approval_timeout'?); "
        "ignored" in again.text()
    )
    assert f"approval_mode | set by managed ({managed})" in again.text()


def test_an_mcp_server_the_administrator_does_not_allow_never_starts(
    start_kernel, co_home: Path, tmp_path: Path
):
    managed = write_json(tmp_path / "etc-co" / "settings.json", {"mcp_allowed_servers": ["docs"]})
    marker = tmp_path / "started"
    starts = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]}
    user_file = write_json(co_home / "config" / "settings.json", {"mcp_servers": {"mine": starts}})
    kernel = start_kernel({"CO_MANAGED_SETTINGS": str(managed)})
    first = kernel.execute("%mcp")
    assert first.status == "ok", first.text()
    text = first.text()
    assert (
        f"{user_file}: mcp_servers.mine: not among the MCP servers your administrator "
        f"allows (mcp_allowed_servers in {managed}); server ignored"
    ) in text
    assert "No MCP servers are configured" in text
    assert kernel.execute("%mcp reload").status == "ok"
    assert not marker.exists()


def test_a_managed_model_stays_the_sessions_model(start_kernel, model_server, tmp_path: Path):
    managed = write_json(
        tmp_path / "etc-co" / "settings.json",
        {"model": "compat:scripted", "base_url": model_server.base_url},
    )
    kernel = start_kernel(
        {"CO_MANAGED_SETTINGS": str(managed), "CO_BASE_URL": "http://127.0.0.1:9/v1"}
    )
    refused = kernel.execute("%model ollama:llama3.2")
    assert refused.status == "error"
    assert f"The model is set by your administrator (managed ({managed}))" in refused.text()
    assert "environment (CO_BASE_URL): base_url: set by your administrator" in refused.text()
    model_server.extend([{"text": "From the hub's endpoint."}])
    answered = kernel.execute("hello")
    assert "From the hub's endpoint." in answered.markdown(), answered.text()
