"""Every magic in a real kernel over ZMQ: what the cell shows, and bad input handled."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from co_kernel.magics import MAGICS
from co_kernel.memory import MemoryStore
from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CellResult, CoKernel, html_text


def assert_one_line_error(result: CellResult, *needles: str) -> str:
    """An error reply whose only output is one error output of one readable line, no stack."""
    assert result.status == "error"
    errors = result.of_type("error")
    assert len(errors) == 1, "one error output, as clients and saved notebooks expect"
    # The reply carries the output's lines too: nbclient and papermill print them.
    assert result.reply["content"]["traceback"] == errors[0]["content"]["traceback"]
    assert errors[0]["content"]["ename"] == result.reply["content"]["ename"]
    streamed = [m for m in result.of_type("stream") if m["content"]["name"] == "stderr"]
    assert not streamed, "the message is shown once, in the error output"
    (line,) = result.error_lines
    assert line.strip() and "Traceback" not in line
    for needle in needles:
        assert needle in line
    return line


def test_help_is_a_table_of_every_magic_and_explains_one(kernel: CoKernel) -> None:
    table = kernel.execute("%help").markdown()
    assert table.startswith("| magic | what it does |")
    for name in MAGICS:
        assert f"`%{name}" in table
    assert "`%yolo [on\\|off]`" in table  # pipes escaped so the table keeps its columns
    one = kernel.execute("%help %resume")
    assert one.status == "ok"
    assert one.markdown().startswith("%resume [id]")
    assert "latest conversation of this notebook" in one.markdown()


def test_bad_magics_get_one_line_with_usage_and_a_suggestion(
    kernel: CoKernel, model_server: ScriptedModelServer
) -> None:
    model_server.extend([{"text": "Noted: the colour is teal."}])
    assert kernel.execute("Remember the colour teal.").status == "ok"
    assert_one_line_error(kernel.execute("%hlep"), "Unknown magic %hlep", "Did you mean %help?")
    assert_one_line_error(kernel.execute("%yollo on"), "Did you mean %yolo?")
    assert_one_line_error(kernel.execute("%yolo maybe"), "on or off", "Usage: %yolo [on|off]")
    assert_one_line_error(
        kernel.execute("%yolo of"), "Did you mean %yolo off?", "Usage: %yolo [on|off]"
    )
    assert_one_line_error(kernel.execute("%sessions lots"), "Usage: %sessions [all|N]")
    assert_one_line_error(kernel.execute("%clear everything"), "Usage: %clear")
    assert_one_line_error(kernel.execute("%forget"), "Usage: %forget <id>")
    assert_one_line_error(kernel.execute("%model gemni:flash"), "Did you mean 'gemini:flash'?")
    assert_one_line_error(kernel.execute("%model flash"), "provider:model", "Usage: %model")
    assert_one_line_error(kernel.execute("%resume zzzz"), "No saved session has the id 'zzzz'")
    # The kernel is alive and the conversation intact.
    model_server.extend(
        [{"expect": {"messages_contain": ["Remember the colour teal."]}, "text": "Teal."}]
    )
    assert kernel.execute("Which colour?").status == "ok"
    assert model_server.errors == []


def test_history_usage_and_clear(kernel: CoKernel, model_server: ScriptedModelServer) -> None:
    model_server.extend(
        [
            {"text": "First answer.", "usage": {"prompt_tokens": 111, "completion_tokens": 22}},
            {"text": "Second answer.", "usage": {"prompt_tokens": 333, "completion_tokens": 44}},
        ]
    )
    assert kernel.execute("First question about apples").status == "ok"
    assert kernel.execute("Second question about pears").status == "ok"
    history = kernel.execute("%history").markdown()
    # The first table's header names the conversation: no empty header row.
    assert history.startswith("| Conversation | `"), history
    assert "|  |  |" not in history
    assert "| turns | 2 |" in history
    assert "| messages | 4 (4 sent to the model) |" in history
    assert "| tool calls | 0 |" in history
    assert "First question about apples" in history
    usage = kernel.execute("%usage").markdown()
    assert "2 request(s), 444 input and 66 output tokens" in usage
    assert "| 1 | First question about apples | compat:scripted | 1 | 111 | 22 |" in usage
    assert "| 2 | Second question about pears | compat:scripted | 1 | 333 | 44 |" in usage
    cleared = kernel.execute("%clear").markdown()
    assert "Cleared the conversation (2 turn(s))" in cleared
    assert "%resume " in cleared
    assert kernel.execute("%history").markdown() == "The conversation is empty."
    assert kernel.execute("%usage").markdown() == "No model requests yet in this conversation."
    assert kernel.execute("%clear").markdown() == "The conversation is already empty."
    model_server.extend([{"text": "Fresh start."}])
    assert kernel.execute("Third question").status == "ok"
    sent = json.dumps(model_server.requests[-1]["messages"])
    assert "apples" not in sent and "Third question" in sent


def test_yolo_toggles_auto_approve_and_status_shows_it(kernel: CoKernel) -> None:
    on = kernel.execute("%yolo")
    assert "Auto-approve is **on**" in on.markdown()
    assert "| session | auto-approve (%yolo) | on |" in kernel.execute("%status").markdown()
    assert "Auto-approve is **off**" in kernel.execute("%yolo off").markdown()
    assert "Auto-approve is **off**" in kernel.execute("%yolo off").markdown()
    assert "Auto-approve is **on**" in kernel.execute("%yolo on").markdown()
    assert "| session | auto-approve (%yolo) | off |" not in kernel.execute("%status").markdown()


def test_status_reports_model_sandbox_integrations_stores_and_settings(
    start_kernel: Callable[..., CoKernel], workspace: Path, co_home: Path
) -> None:
    settings_dir = workspace / ".co"
    settings_dir.mkdir()
    (settings_dir / "settings.json").write_text(json.dumps({"personalty": "terse"}))
    kernel = start_kernel({"JPY_SESSION_NAME": "reports/q3.ipynb"})
    result = kernel.execute("%status")
    status = result.markdown()
    shown = "".join(html_text(d.get("text/html", "")) for d in result.final_displays().values())
    assert "| model | model | compat:scripted" in status
    assert "| model | reachable | ✅" in status
    assert "| session | notebook | reports/q3.ipynb |" in status
    # Rows are plain text (they quote outside names): shown as written, escaped in the source.
    assert "| sandbox | mode | subprocess" in status and "starts on the first `!` cell" in shown
    assert "| sandbox | backend | subprocess |" in status
    assert "| integrations |" in status
    assert "| stores | telemetry |" in status
    assert f"{co_home}/data/sessions.db" in status
    assert f"| settings | files in force | {settings_dir / 'settings.json'} |" in status
    assert "unknown setting 'personalty' (did you mean 'personality'?)" in status


def test_status_shows_an_unreachable_provider(start_kernel: Callable[..., CoKernel]) -> None:
    kernel = start_kernel({"CO_BASE_URL": "http://127.0.0.1:9/v1"})
    result = kernel.execute("%status")
    status = result.markdown()
    shown = "".join(html_text(d.get("text/html", "")) for d in result.final_displays().values())
    assert "| model | reachable | ❌ http://127.0.0.1:9/v1 is unreachable" in status
    assert "Check that the server runs and `CO_BASE_URL` points at it." in shown


def test_tools_lists_each_tool_with_its_approval_and_why_others_are_missing(
    kernel: CoKernel,
) -> None:
    tools = kernel.execute("%tools").markdown()
    assert "| `run_python` | python | asks first |" in tools
    assert "| `inspect_variable` | python | runs without asking |" in tools
    assert "**Not registered**" in tools
    assert "| slack | " in tools and "slack_bot_token" in tools
    assert "| google | " in tools
    kernel.execute("%yolo on")
    assert (
        "| `run_python` | python | auto-approved (%yolo on) |"
        in kernel.execute("%tools").markdown()
    )
    status = kernel.execute("%status").markdown()
    assert "| integrations | python | registered |" in status
    assert "| integrations | slack | not registered: " in status


def test_model_shows_validates_and_switches(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer
) -> None:
    # Ollama is reached at OLLAMA_HOST/v1: the scripted server plays a local Ollama here.
    model_server.extend([{"model": "llama3.2:latest", "text": "Hi from llama."}])
    kernel = start_kernel({"OLLAMA_HOST": model_server.base_url.removesuffix("/v1")})
    shown = kernel.execute("%model").markdown()
    assert shown.startswith("Model: **compat:scripted**")
    assert "- `ollama`: a local Ollama server" in shown
    missing = assert_one_line_error(
        kernel.execute("%model ollama:mistral"), "Ollama has no model `mistral`"
    )
    assert "ollama pull mistral" in missing and "still compat:scripted" in missing
    assert_one_line_error(
        kernel.execute("%model gemini:gemini-2.5-flash"),
        "needs an API key: set `GEMINI_API_KEY`",
        "The model is unchanged (still compat:scripted)",
    )
    switched = kernel.execute("%model ollama:llama3.2")
    assert switched.status == "ok"
    assert "Switched to **ollama:llama3.2**" in switched.markdown()
    assert kernel.execute("Hello?").status == "ok"
    assert model_server.requests[-1]["model"] == "llama3.2"
    assert kernel.execute("%model").markdown().startswith("Model: **ollama:llama3.2**")
    assert model_server.errors == []


def test_forget_deletes_a_memory_and_refuses_unknown_ids(kernel: CoKernel, co_home: Path) -> None:
    store = MemoryStore(co_home / "data" / "memory.db")
    keep = store.add("The user's name is Ada")
    drop = store.add("The user dislikes pie charts")
    done = kernel.execute(f"%forget {drop}")
    assert done.status == "ok"
    assert done.markdown() == f"Forgot memory {drop}: “The user dislikes pie charts”"
    assert store.get(drop) is None and store.get(keep) is not None
    assert_one_line_error(
        kernel.execute(f"%forget {drop}"), f"No memory has id {drop}.", f"Did you mean {keep}?"
    )
    assert_one_line_error(kernel.execute("%forget ada"), "'ada' is not a memory id")
    store.close()


@pytest.mark.parametrize("mode", ["console", "headless"])
def test_magics_answer_in_every_frontend(kernel: CoKernel, mode: str) -> None:
    result = kernel.execute("%yolo on", mode=mode)  # type: ignore[arg-type]
    assert result.status == "ok"
    assert "Auto-approve is **on**" in result.text()
