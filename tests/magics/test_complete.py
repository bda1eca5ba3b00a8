"""complete_request, inspect_request and is_complete_request answered by a real kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from co_kernel.magics import MAGICS
from co_kernel.memory import MemoryStore
from co_kernel.replay import ScriptedModelServer
from co_kernel.store import SessionStore

from ..support.kernel_harness import CoKernel


def complete(kernel: CoKernel, code: str, cursor: int | None = None) -> dict[str, Any]:
    reply = kernel.kc.complete(
        code, len(code) if cursor is None else cursor, reply=True, timeout=30
    )
    content: dict[str, Any] = reply["content"]
    assert content["status"] == "ok"
    return content


def inspect(kernel: CoKernel, code: str, cursor: int) -> dict[str, Any]:
    content: dict[str, Any] = kernel.kc.inspect(code, cursor, reply=True, timeout=30)["content"]
    assert content["status"] == "ok"
    return content


def is_complete(kernel: CoKernel, code: str) -> dict[str, Any]:
    msg_id = kernel.kc.is_complete(code)
    reply = kernel.kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:  # kernel_info replies of start-up
        reply = kernel.kc.get_shell_msg(timeout=30)
    assert reply["msg_type"] == "is_complete_reply"
    content: dict[str, Any] = reply["content"]
    return content


def test_magic_names_complete_after_a_percent(kernel: CoKernel) -> None:
    everything = complete(kernel, "%")
    assert everything["matches"] == [f"%{n}" for n in sorted(MAGICS)]
    assert (everything["cursor_start"], everything["cursor_end"]) == (0, 1)
    some = complete(kernel, "  %re")
    assert some["matches"] == ["%record", "%resume"]
    assert some["cursor_start"] == 2
    # Prose is a prompt: nothing to complete, and a % on a later line is not a magic.
    assert complete(kernel, "plot the data")["matches"] == []
    assert complete(kernel, "look at this\n%mo")["matches"] == []


def test_arguments_complete(
    kernel: CoKernel, model_server: ScriptedModelServer, co_home: Path
) -> None:
    yolo = complete(kernel, "%yolo o")
    assert yolo["matches"] == ["on", "off"]
    assert (yolo["cursor_start"], yolo["cursor_end"]) == (6, 7)
    providers = complete(kernel, "%model ")["matches"]
    assert {"gemini:", "ollama:", "openai:", "anthropic:", "compat:", "replay:"} <= set(providers)
    assert "compat:scripted" in providers
    gemini = complete(kernel, "%model gemini:")
    assert gemini["cursor_start"] == len("%model ")
    assert len(gemini["matches"]) > 1
    assert all(m.startswith("gemini:") for m in gemini["matches"])
    assert complete(kernel, "%sessions a")["matches"] == ["all"]
    assert complete(kernel, "%status a")["matches"] == ["all"]
    assert complete(kernel, "%help mo")["matches"] == ["model"]

    model_server.extend([{"text": "Saved."}])
    assert kernel.execute("Start a conversation").status == "ok"
    session_id = SessionStore(co_home / "data" / "sessions.db").recent()[0].id
    resume = complete(kernel, "%resume ")
    assert resume["matches"] == [session_id[:8]]
    assert complete(kernel, "%resume " + session_id[:3])["matches"] == [session_id[:8]]
    assert complete(kernel, "%resume zz")["matches"] == []

    store = MemoryStore(co_home / "data" / "memory.db")
    ids = [store.add(f"fact {i}") for i in range(3)]
    store.close()
    assert complete(kernel, "%forget ")["matches"] == [str(i) for i in reversed(ids)]


def test_shift_tab_shows_a_magic_help(kernel: CoKernel) -> None:
    found = inspect(kernel, "%compact the plots", 4)
    assert found["found"] is True
    assert found["data"]["text/plain"].startswith("%compact [focus]\n\nReplace older turns")
    assert "text/markdown" not in found["data"]
    html = found["data"]["text/html"]
    assert html.startswith('<div class="co-markdown"><p><strong><code>%compact [focus]</code>')
    assert "compact_keep_turns" in html
    assert inspect(kernel, "%nosuch", 3)["found"] is False
    assert inspect(kernel, "what does pandas do", 5)["found"] is False


def test_is_complete_for_the_console(kernel: CoKernel) -> None:
    assert is_complete(kernel, "summarise the data")["status"] == "complete"
    assert is_complete(kernel, "%model")["status"] == "complete"
    assert is_complete(kernel, "a long prompt \\") == {"status": "incomplete", "indent": ""}
    assert is_complete(kernel, "fix this:\n```python\nx = 1")["status"] == "incomplete"
    assert is_complete(kernel, "fix this:\n```python\nx = 1\n```")["status"] == "complete"


def test_python_cells_can_be_found(kernel: CoKernel) -> None:
    """`%python` and `%%python` are in the completion, the inspection and `%help`."""
    assert complete(kernel, "%py")["matches"] == ["%python"]
    assert complete(kernel, "%%py")["matches"] == ["%%python"]
    assert complete(kernel, "%%")["matches"] == ["%%python"]
    for code in ("%%python\nx = 1", "%python df.shape"):
        found = inspect(kernel, code, 3)
        assert found["found"] is True, code
        assert found["data"]["text/plain"].startswith("%python <expression> | %%python")
    listed = kernel.execute("%help").markdown()
    assert (
        "| `%python <expression> \\| %%python` | Run Python in the kernel's own namespace" in listed
    )
    helped = kernel.execute("%help python")
    assert helped.status == "ok" and "Unknown magic" not in helped.text()
    assert "`%%python` runs the rest as Python" in helped.markdown()
