"""Through a real kernel, with the notebook in the home folder (Co's home inside the
workspace): the model asks for Co's settings and Google token and is refused, reads a file
that holds a configured key and receives `[REDACTED]`, saves the key as a memory and
memory.db never holds it."""

from __future__ import annotations

import json
from pathlib import Path

from ..support.scripted import call_step
from .conftest import write_token

KEY = "BSAkernel0123456789abcdefgh"
TOKEN = "ya29.kernel-token-5e8f1a2b3c"


def test_the_model_never_receives_cos_own_secrets(start_kernel, model_server, workspace):
    co_home = workspace / ".config" / "co"
    config = co_home / "config"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"brave_search_api_key": KEY}))
    write_token(config / "google_token.json", token=TOKEN)
    (workspace / "notes.txt").write_text(f"The search key is {KEY}.\n")
    refused = "may hold secrets and is never read-accessible"
    model_server.extend(
        [
            call_step("read_file", path=".config/co/config/settings.json"),
            {
                "expect": {"tool_result_contains": refused},
                **call_step("read_file", path=".config/co/config/google_token.json"),
            },
            {"expect": {"tool_result_contains": refused}, **call_step("grep", pattern="ya29")},
            {
                "expect": {"tool_result_contains": "No lines match"},
                **call_step("read_file", path="notes.txt"),
            },
            {
                "expect": {"tool_result_contains": "The search key is [REDACTED]."},
                **call_step("save_memory", text=f"The Brave key is {KEY}"),
            },
            {"expect": {"tool_result_contains": "Saved memory 1"}, "text": "Done."},
        ]
    )
    kernel = start_kernel({"CO_HOME": str(co_home), "CO_APPROVAL_MODE": "approve"})
    result = kernel.execute("Find my Brave key and remember it", mode="headless")
    assert result.status == "ok" and model_server.errors == []
    tool_results = [
        json.dumps(m["content"])
        for r in model_server.requests
        for m in r["messages"]
        if m["role"] == "tool"
    ]
    assert len(tool_results) >= 5
    assert not [r for r in tool_results if KEY in r or TOKEN in r]
    db = co_home / "data" / "memory.db"
    on_disk = b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())
    assert db.exists() and KEY.encode() not in on_disk
