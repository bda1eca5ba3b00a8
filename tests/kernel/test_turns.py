"""A cell is a turn: streaming per frontend, conversation, regenerate, interrupt, bad input."""

from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path

from co_kernel.frontend import TERMINAL_METADATA
from co_kernel.replay import ScriptedModelServer
from tests.support.kernel_harness import markdown_source

ANSWER = (
    "# Plan\n\nFirst paragraph of the answer, long enough to need several chunks.\n\n"
    "- item one\n- item two\n\n```python\nprint('hello')\n```\n\nClosing words."
)


def _request_text(request: dict) -> str:
    return json.dumps(request["messages"])


def test_notebook_mode_streams_display_updates_then_commits(kernel, model_server):
    model_server.extend([{"text": ANSWER, "tokens_per_second": 150}])
    result = kernel.execute("Write a plan", mode="notebook")
    assert result.status == "ok"
    updates = result.of_type("update_display_data")
    displays = result.of_type("display_data")
    assert displays, "the answer must create a display output"
    assert len(updates) >= 3, f"expected several in-place updates, got {len(updates)}"
    ids = {m["content"]["transient"]["display_id"] for m in displays}
    assert all(m["content"]["transient"]["display_id"] in ids for m in updates)
    assert result.markdown() == ANSWER
    assert model_server.errors == []


def test_console_mode_streams_stdout_chunks(kernel, model_server):
    model_server.extend([{"text": ANSWER, "tokens_per_second": 150}])
    result = kernel.execute("Write a plan", mode="console")
    assert result.status == "ok"
    chunks = [m for m in result.of_type("stream") if m["content"]["name"] == "stdout"]
    assert len(chunks) >= 2, "console output must arrive as it streams"
    assert result.stdout.strip() == ANSWER.strip()
    assert not result.of_type("update_display_data")


def test_a_terminal_client_hears_busy_and_idle_of_its_cells_alone(kernel, model_server):
    # jupyter console takes any idle of its session for its cell's end and stops reading
    # stdin: a queued idle of its kernel_info or is_complete request left a cell's
    # approval question unread, and console and kernel waited on each other for good.
    kc = kernel.kc
    side: list[str] = []
    for kind, content in (
        ("kernel_info_request", {}),
        ("is_complete_request", {"code": "Hello"}),
        ("complete_request", {"code": "%he", "cursor_pos": 3}),
    ):
        msg = kc.session.msg(kind, content)
        msg["metadata"][TERMINAL_METADATA] = True
        kc.shell_channel.send(msg)
        side.append(msg["header"]["msg_id"])
        while kc.get_shell_msg(timeout=60)["parent_header"].get("msg_id") != side[-1]:
            pass
    page = kc.session.msg("kernel_info_request", {})  # a notebook's, for comparison
    kc.shell_channel.send(page)
    page_id = page["header"]["msg_id"]
    statuses: list[tuple[str, str]] = []
    while (page_id, "idle") not in statuses:
        m = kc.get_iopub_msg(timeout=60)
        if m["msg_type"] == "status":
            statuses.append((m["parent_header"].get("msg_id", ""), m["content"]["execution_state"]))
    assert [s for s in statuses if s[0] in side] == []
    assert (page_id, "busy") in statuses
    model_server.extend([{"text": "Hello there."}])
    result = kernel.execute("Hello", mode="console")  # waits for this cell's own idle
    assert result.status == "ok" and "Hello there." in result.stdout


def test_headless_mode_emits_one_final_display(kernel, model_server):
    model_server.extend([{"text": ANSWER, "tokens_per_second": 400}])
    result = kernel.execute("Write a plan", mode="headless")
    assert result.status == "ok"
    displays = result.of_type("display_data")
    assert len(displays) == 1
    assert not result.of_type("update_display_data")
    data = displays[0]["content"]["data"]
    assert markdown_source(data) == ANSWER


def test_second_cell_sees_the_first_turn(kernel, model_server):
    model_server.extend(
        [
            {"text": "The capital of France is Paris, a city of museums."},
            {"text": "Paris.", "expect": {"messages_contain": ["capital of France is Paris"]}},
        ]
    )
    first = kernel.execute("What is the capital of France?")
    second = kernel.execute("make it shorter")
    assert (first.status, second.status) == ("ok", "ok")
    assert model_server.errors == []
    sent = _request_text(model_server.requests[1])
    assert "What is the capital of France?" in sent
    assert "make it shorter" in sent
    assert second.markdown() == "Paris."


def test_rerunning_the_last_cell_replaces_its_turn(kernel, model_server):
    model_server.extend([{"text": "Answer one"}, {"text": "Answer two"}, {"text": "Next"}])
    cell = str(uuid.uuid4())
    kernel.execute("Tell me a fact", cell_id=cell)
    again = kernel.execute("Tell me a fact", cell_id=cell)
    assert again.markdown() == "Answer two"
    regen_request = _request_text(model_server.requests[1])
    assert "Answer one" not in regen_request, "the replaced answer must not be sent again"
    assert regen_request.count("Tell me a fact") == 1
    kernel.execute("And another?")
    follow_up = _request_text(model_server.requests[2])
    assert "Answer two" in follow_up
    assert "Answer one" not in follow_up
    assert follow_up.count("Tell me a fact") == 1


def test_interrupt_mid_stream_stops_and_next_cell_works(kernel, model_server):
    long_text = " ".join(f"word{i}" for i in range(2000))
    model_server.extend(
        [{"text": "Ready."}, {"text": long_text, "tokens_per_second": 40}, {"text": "Still here."}]
    )
    kernel.execute("warm up")  # the first cell also waits for the model stack's import
    interrupted_at: list[str] = []

    def interrupt_on_first_text(k, msg):  # type: ignore[no-untyped-def]
        # Interrupt once the answer is showing, however long a loaded machine takes to get
        # there: a fixed delay could fire before the first words and test nothing.
        if interrupted_at or msg["msg_type"] not in ("display_data", "update_display_data"):
            return
        text = markdown_source(msg["content"]["data"]) or ""
        if "word0" in text:
            interrupted_at.append(text)
            k.km.interrupt_kernel()

    result = kernel.execute("Write a lot", on_message=interrupt_on_first_text, timeout=60)
    assert interrupted_at, "the answer was showing when the interrupt was sent"
    shown = markdown_source(next(iter(result.final_displays().values()))) or ""
    assert result.reply["content"]["status"] == "error"
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert shown and long_text.startswith(shown.strip()), "the partial answer stays in the cell"
    assert len(shown) < len(long_text) / 4, "the stream must stop well before it would have ended"
    assert "Interrupted" in result.text()
    assert kernel.is_alive()
    after = kernel.execute("Are you there?")
    assert after.status == "ok"
    assert after.markdown() == "Still here."
    follow_up = _request_text(model_server.requests[-1])
    assert "Write a lot" in follow_up and "word0" in follow_up


def test_thinking_is_hidden_unless_verbose(start_kernel, model_server):
    model_server.extend(
        [
            {"reasoning": "Let me think about sums.", "text": "4"},
            {"reasoning": "Let me think about sums.", "text": "4"},
        ]
    )
    quiet = start_kernel().execute("2+2?")
    assert "think about sums" not in json.dumps([m["content"] for m in quiet.messages])
    verbose = start_kernel({"CO_VERBOSE": "true"}).execute("2+2?")
    html = [d.get("text/html", "") for d in verbose.final_displays().values()]
    assert any("<details>" in h and "think about sums" in h for h in html)
    assert verbose.markdown() == "4"


# -- bad input -------------------------------------------------------------------------


def test_no_provider_gives_the_settings_to_set(start_kernel):
    # Without the bundled local model (tests/turn/test_local_kernel.py covers it).
    kernel = start_kernel({"CO_LOCAL_DEFAULT": "false"}, model=False)
    result = kernel.execute("hello")
    assert result.status == "error"
    text = result.text()
    assert "No model is configured" in text and "CO_MODEL" in text and "%model" in text
    assert "Traceback" not in text
    assert kernel.execute("%help").status == "ok"


def test_unreachable_host_is_a_clear_message(start_kernel):
    # Bound but not listening: connections are refused and no other process can take
    # the port while the test runs (a closed port could be reused by anything).
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        kernel = start_kernel(
            {"CO_BASE_URL": f"http://127.0.0.1:{port}/v1", "CO_MODEL_HTTP_RETRIES": "0"}
        )
        result = kernel.execute("hello")
    assert result.status == "error"
    assert "Could not reach the compat provider" in result.text()
    assert "Traceback" not in result.text()
    assert kernel.is_alive()


def test_wrong_api_key_names_the_fix(kernel, model_server):
    model_server.extend(
        [{"fault": {"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}}}]
    )
    result = kernel.execute("hello")
    assert result.status == "error"
    text = result.text()
    assert "HTTP 401" in text and "Incorrect API key provided" in text and "CO_API_KEY" in text
    assert len(model_server.requests) == 1, "an auth failure is not retried"


def test_empty_cell_does_nothing(kernel, model_server):
    result = kernel.execute("   \n\n  ")
    assert result.status == "ok"
    assert not result.of_type("display_data", "stream", "error")
    assert model_server.requests == []


def test_one_megabyte_cell_is_refused_and_conversation_kept(kernel, model_server):
    model_server.extend([{"text": "Noted."}, {"text": "Yes."}])
    kernel.execute("Remember: the code word is heron.")
    huge = "x" * 1_048_576
    result = kernel.execute(huge)
    assert result.status == "error"
    assert "1,048,576 characters" in result.text() and "max_prompt_chars" in result.text()
    assert len(model_server.requests) == 1, "the refused cell never reaches the model"
    kernel.execute("What was the code word?")
    follow_up = _request_text(model_server.requests[1])
    assert "heron" in follow_up and "xxxxxxxxxx" not in follow_up


def test_invalid_project_setting_is_reported_and_kernel_starts(
    start_kernel, model_server, workspace
):
    settings_dir = workspace / ".co"
    settings_dir.mkdir()
    (settings_dir / "settings.json").write_text(
        json.dumps({"max_request_limit": "lots", "verbos": True})
    )
    model_server.extend([{"text": "Fine."}])
    result = start_kernel().execute("hi")
    assert result.status == "ok"
    text = result.text()
    settings_path = str(Path(settings_dir / "settings.json"))
    assert settings_path in text and "max_request_limit" in text
    assert "unknown setting 'verbos'" in text and "did you mean 'verbose'" in text
    assert result.markdown().endswith("Fine.")


def test_replay_model_string_serves_a_script(start_kernel, workspace):
    script = workspace / "script.jsonl"
    script.write_text(json.dumps({"text": "Replayed answer."}) + "\n")
    kernel = start_kernel({"CO_MODEL": "replay:script.jsonl"}, model=False)
    result = kernel.execute("anything", mode="headless")
    assert result.status == "ok"
    assert result.markdown() == "Replayed answer."


def test_status_of_a_replay_model_reads_as_working(start_kernel, workspace):
    """The replay server lists its one model name, not the file; that is no fault."""
    script = workspace / "script.jsonl"
    script.write_text(json.dumps({"text": "Replayed answer."}) + "\n")
    kernel = start_kernel({"CO_MODEL": "replay:script.jsonl"}, model=False)
    assert kernel.execute("anything", mode="headless").status == "ok"
    text = kernel.execute("%status", mode="headless").markdown()
    row = next(line for line in text.splitlines() if "| reachable |" in line)
    assert "✅ replay script with 1 step(s), played at http://127.0.0.1:" in row
    assert "does not list" not in text and "it lists" not in text


def test_unknown_provider_suggests_the_right_one(start_kernel):
    result = start_kernel({"CO_MODEL": "olama:llama3.2"}, model=False).execute("hi")
    assert result.status == "error"
    assert "Unknown provider 'olama'" in result.text() and "ollama:llama3.2" in result.text()


def test_two_kernels_keep_separate_conversations(start_kernel, model_server):
    other = ScriptedModelServer([{"text": "B1"}, {"text": "B2"}]).start()
    try:
        model_server.extend([{"text": "A1"}, {"text": "A2"}])
        a = start_kernel()
        b = start_kernel({"CO_BASE_URL": other.base_url})
        a.execute("alpha")
        b.execute("beta")
        a.execute("alpha again")
        b.execute("beta again")
        assert "beta" not in _request_text(model_server.requests[1])
        assert "alpha" not in _request_text(other.requests[1])
    finally:
        other.stop()
