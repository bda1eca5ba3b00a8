"""Each integration through a real kernel: the scripted model calls the tool, the cell
shows the tool card, and the side effect (or its absence) is on disk."""

from __future__ import annotations

import json
from pathlib import Path

from co_kernel.frontend import MIME_TOOL_CALL
from co_kernel.telemetry import AuditLog

from ._http import LocalServer
from .test_notes import ALPHA, JOURNAL
from .test_web import ARTICLE, BRAVE_RESULTS


def _cards(result) -> list[dict]:
    return [d[MIME_TOOL_CALL] for d in result.final_displays().values() if MIME_TOOL_CALL in d]


def _audit(co_home: Path) -> AuditLog:
    return AuditLog(co_home / "data" / "telemetry.db")


def test_search_notes_in_a_notebook_cell(start_kernel, model_server, tmp_path):
    vault = tmp_path / "vault"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Projects" / "Alpha launch.md").write_text(ALPHA)
    (vault / "journal.md").write_text(JOURNAL)
    model_server.extend(
        [
            {
                "expect": {"tools_include": ["search_notes", "list_notes", "read_note"]},
                "tool_calls": [{"name": "search_notes", "arguments": {"query": "kernel review"}}],
            },
            {"expect": {"tool_result_contains": "Alpha Launch Plan"}, "text": "One note."},
        ]
    )
    kernel = start_kernel({"CO_OBSIDIAN_VAULT_PATH": str(vault)})
    result = kernel.execute("Which notes mention the kernel review?")
    assert result.status == "ok" and model_server.errors == []
    [card] = _cards(result)
    assert card["tool"] == "search_notes" and card["status"] == "ok"
    assert "L9: The Kernel review is on Monday." in card["result"]
    assert result.markdown().endswith("One note.")


def test_notes_tools_are_not_offered_without_a_vault(kernel, model_server):
    model_server.extend(
        [
            {
                "expect": {"tools_exclude": ["search_notes"], "tools_include": ["read_file"]},
                "text": "ok",
            }
        ]
    )
    assert kernel.execute("hi").status == "ok"
    assert model_server.errors == []


def _write_step(path: str, content: str) -> dict:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def test_write_file_headless_approve_writes_the_file(
    start_kernel, model_server, workspace, co_home
):
    model_server.extend(
        [
            _write_step("out/report.md", "# Report\n"),
            {"expect": {"tool_result_contains": "Created out/report.md"}, "text": "Written."},
        ]
    )
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    result = kernel.execute("Write the report", mode="headless")
    assert result.status == "ok" and model_server.errors == []
    assert (workspace / "out" / "report.md").read_text() == "# Report\n"
    assert "**approved** (headless run, `approval_mode = approve`)" in result.text()
    [card] = _cards(result)
    assert card["tool"] == "write_file" and card["status"] == "ok"
    rows = _audit(co_home).query(tool="write_file")
    decisions = {(r["action"], r["decision"]) for r in rows}
    assert ("create", "auto") in decisions, "the scope guard's decision is audited"
    assert ("call", "approved") in decisions, "the turn's decision is audited"


def test_write_file_headless_deny_leaves_the_disk_alone(start_kernel, model_server, workspace):
    model_server.extend(
        [
            _write_step("out/report.md", "# Report\n"),
            {"expect": {"tool_result_contains": "denied"}, "text": "Not written, as you wish."},
        ]
    )
    kernel = start_kernel({"CO_APPROVAL_MODE": "deny"})
    result = kernel.execute("Write the report", mode="headless")
    assert result.status == "ok" and model_server.errors == []
    assert not (workspace / "out").exists()
    [card] = _cards(result)
    assert card["tool"] == "write_file" and card["status"] == "denied"
    assert result.markdown().endswith("Not written, as you wish.")


def test_a_refused_path_is_a_tool_error_not_a_prompt(start_kernel, model_server, tmp_path, co_home):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    model_server.extend(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "../secret.txt"}}]},
            {"expect": {"tool_result_contains": "Refused"}, "text": "I may not read that."},
        ]
    )
    result = start_kernel().execute("Read ../secret.txt")
    assert result.status == "ok" and model_server.errors == []
    [card] = _cards(result)
    assert card["status"] == "error" and "contains '..'" in card["result"]
    assert "do not read" not in json.dumps([m["content"] for m in result.messages])
    refused = _audit(co_home).query(decision="scope-refused")
    assert [r["target"] for r in refused] == ["../secret.txt"]


def test_web_search_and_fetch_in_a_cell(start_kernel, model_server):
    site = LocalServer({"/article": lambda s: (200, {"Content-Type": "text/html"}, ARTICLE)})
    # The fetched page is one of the results: a link a search gave this turn runs unasked.
    found = json.loads(json.dumps(BRAVE_RESULTS))
    found["web"]["results"].append({"title": "Article", "url": f"{site.url}/article"})
    brave = LocalServer(
        {
            "/res/v1/web/search": lambda s: (
                200,
                {"Content-Type": "application/json"},
                json.dumps(found).encode(),
            )
        }
    )
    try:
        model_server.extend(
            [
                {"tool_calls": [{"name": "web_search", "arguments": {"query": "jupyter kernels"}}]},
                {
                    "expect": {"tool_result_contains": "docs.jupyter.org"},
                    "tool_calls": [
                        {"name": "web_fetch", "arguments": {"url": f"{site.url}/article"}}
                    ],
                },
                {
                    "expect": {"tool_result_contains": "runs the code of a notebook"},
                    "text": "Read it.",
                },
            ]
        )
        kernel = start_kernel(
            {
                "CO_BRAVE_SEARCH_API_KEY": "kernel-test-key",
                "CO_BRAVE_SEARCH_BASE_URL": f"{brave.url}/res/v1",
                "CO_WEB_PRIVATE_HOSTS": json.dumps([f"127.0.0.1:{site.port}"]),
            }
        )
        result = kernel.execute("What is a kernel? Look it up.")
    finally:
        brave.close()
        site.close()
    assert result.status == "ok" and model_server.errors == []
    assert [(c["tool"], c["status"]) for c in _cards(result)] == [
        ("web_search", "ok"),
        ("web_fetch", "ok"),
    ]
    assert brave.seen[0].headers["X-Subscription-Token"] == "kernel-test-key"
    shown = json.dumps([m["content"] for m in result.messages])
    assert "kernel-test-key" not in shown, "the key is never shown"


def test_web_fetch_under_ask_policy_is_denied_headless(start_kernel, model_server):
    site = LocalServer({"/article": lambda s: (200, {"Content-Type": "text/html"}, ARTICLE)})
    try:
        model_server.extend(
            [
                {
                    "tool_calls": [
                        {"name": "web_fetch", "arguments": {"url": f"{site.url}/article"}}
                    ]
                },
                {"expect": {"tool_result_contains": "denied"}, "text": "Skipped."},
            ]
        )
        kernel = start_kernel(
            {
                "CO_WEB_POLICY": json.dumps({"fetch": "ask"}),
                "CO_APPROVAL_MODE": "deny",
                "CO_WEB_PRIVATE_HOSTS": json.dumps([f"127.0.0.1:{site.port}"]),
            }
        )
        result = kernel.execute("Fetch it", mode="headless")
    finally:
        site.close()
    assert result.status == "ok" and model_server.errors == []
    assert site.seen == [], "a denied fetch sends nothing"
    assert [c["status"] for c in _cards(result)] == ["denied"]


def _save_step(text: str) -> dict:
    return {"tool_calls": [{"name": "save_memory", "arguments": {"text": text, "tags": ["prefs"]}}]}


def test_save_memory_approved_feeds_the_next_prompt(start_kernel, model_server, co_home, workspace):
    from co_kernel.memory import MemoryStore

    (co_home / "config" / "knowledge").mkdir(parents=True)
    (co_home / "config" / "knowledge" / "me.md").write_text("The user works in Lisbon.")
    (workspace / ".co" / "knowledge").mkdir(parents=True)
    (workspace / ".co" / "knowledge" / "project.md").write_text("This project uses uv.")
    fact = "The user's favourite colour is teal."
    model_server.extend(
        [
            _save_step(fact),
            {"expect": {"tool_result_contains": "Saved memory 1"}, "text": "Noted."},
            {
                "expect": {
                    # The memory goes with the prompt it is relevant to, not into the
                    # system prompt, which stays the same bytes every request.
                    "messages_contain": [
                        f"- [1] {fact} (prefs)",
                        "The user works in Lisbon.",
                        "This project uses uv.",
                    ],
                },
                "text": "Teal.",
            },
        ]
    )
    kernel = start_kernel({"CO_APPROVAL_MODE": "approve"})
    saved = kernel.execute("Remember that my favourite colour is teal", mode="headless")
    assert saved.status == "ok"
    assert [(c["tool"], c["status"]) for c in _cards(saved)] == [("save_memory", "ok")]
    answer = kernel.execute("What colour do I like?", mode="headless")
    assert answer.status == "ok" and model_server.errors == []
    systems = [
        [m["content"] for m in r["messages"] if m["role"] == "system"]
        for r in model_server.requests
    ]
    assert systems[0] == systems[-1] and fact not in json.dumps(systems[-1])
    store = MemoryStore(co_home / "data" / "memory.db")
    try:
        assert [(m.id, m.text, m.tags) for m in store.list()] == [(1, fact, ["prefs"])]
    finally:
        store.close()


def test_save_memory_denied_stores_nothing(start_kernel, model_server, co_home):
    model_server.extend(
        [
            _save_step("The user is allergic to peanuts."),
            {"expect": {"tool_result_contains": "denied"}, "text": "Not saved."},
        ]
    )
    result = start_kernel({"CO_APPROVAL_MODE": "deny"}).execute("Remember this", mode="headless")
    assert result.status == "ok" and model_server.errors == []
    assert [c["status"] for c in _cards(result)] == ["denied"]
    db = co_home / "data" / "memory.db"
    if db.exists():  # the approval preview may open the store; it must hold no memory
        from co_kernel.memory import MemoryStore

        store = MemoryStore(db)
        try:
            assert store.list() == []
        finally:
            store.close()


def test_tools_magic_says_why_notes_and_web_search_are_missing(kernel):
    result = kernel.execute("%tools")
    assert result.status == "ok"
    text = result.text()
    assert "`read_file`" in text and "`web_fetch`" in text and "`save_memory`" in text
    assert "obsidian_vault_path" in text and "brave_search_api_key" in text
