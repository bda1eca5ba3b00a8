"""Sessions that survive: restart and `%resume`, SIGKILL mid-turn, two kernels at once, and
a resumed long conversation sent through the history governance."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from co_kernel.config import Settings
from co_kernel.models._providers import default_model_string
from co_kernel.replay import ScriptedModelServer
from co_kernel.store import SessionStore, TurnRow

from ..support.histories import synthetic_history
from ..support.kernel_harness import CoKernel

NOTEBOOK = {"JPY_SESSION_NAME": "work/analysis.ipynb"}


def _store(co_home: Path) -> SessionStore:
    return SessionStore(co_home / "data" / "sessions.db")


def test_restart_then_resume_restores_the_conversation(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    kernel = start_kernel(NOTEBOOK)
    model_server.extend([{"text": "I will remember pineapple."}, {"text": "Noted: 17 rows."}])
    assert kernel.execute("Remember the word pineapple").status == "ok"
    assert kernel.execute("The table has 17 rows").status == "ok"

    kernel.restart()
    assert kernel.execute("%history").markdown() == "The conversation is empty."
    listed = kernel.execute("%sessions").markdown()
    assert "work/analysis.ipynb" in listed
    assert "| 2 | Remember the word pineapple |" in listed
    resumed = kernel.execute("%resume")
    assert resumed.status == "ok", resumed.stderr
    assert "Resumed conversation" in resumed.markdown()
    assert "of work/analysis.ipynb: 2 turn(s)" in resumed.markdown()
    assert "> The table has 17 rows" in resumed.markdown()

    model_server.extend(
        [
            {
                "expect": {
                    "messages_contain": [
                        "Remember the word pineapple",
                        "I will remember pineapple.",
                        "The table has 17 rows",
                    ],
                    "last_user_contains": "Which word?",
                },
                "text": "Pineapple.",
            }
        ]
    )
    assert kernel.execute("Which word?").status == "ok"
    assert model_server.errors == []
    store = _store(co_home)
    (info,) = store.recent()
    assert info.turns == 3, "the resumed conversation goes on under its own id"
    assert [t.prompt for t in store.load(info.id).turns][-1] == "Which word?"
    store.close()


def test_resume_by_id_from_another_notebook(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    first = start_kernel({"JPY_SESSION_NAME": "a.ipynb"})
    model_server.extend([{"text": "Saved in a."}])
    assert first.execute("Fact from notebook a").status == "ok"
    store = _store(co_home)
    session_id = store.recent()[0].id
    store.close()
    second = start_kernel({"JPY_SESSION_NAME": "b.ipynb"})
    none_here = second.execute("%resume")
    assert none_here.status == "error"
    assert "No earlier session of this notebook b.ipynb is saved" in none_here.stderr
    resumed = second.execute(f"%resume {session_id[:6]}")
    assert resumed.status == "ok"
    assert f"Resumed conversation `{session_id[:8]}` of a.ipynb" in resumed.markdown()
    model_server.extend(
        [{"expect": {"messages_contain": ["Fact from notebook a"]}, "text": "Yes."}]
    )
    assert second.execute("Do you know the fact?").status == "ok"
    assert model_server.errors == []


def test_a_kernel_killed_mid_turn_loses_at_most_that_turn(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer
) -> None:
    doomed = start_kernel(NOTEBOOK)
    model_server.extend([{"text": "First kept."}, {"text": "Second kept."}])
    assert doomed.execute("First durable prompt").status == "ok"
    assert doomed.execute("Second durable prompt").status == "ok"
    model_server.extend([{"text": "word " * 400, "tokens_per_second": 20}])
    msg_id = doomed.send("Third prompt that never finishes")
    # Wait until the answer is streaming into the cell, then kill the process outright.
    doomed.wait_for(msg_id, lambda m: m["msg_type"] in ("display_data", "update_display_data"))
    doomed.kill()
    assert not doomed.is_alive()

    survivor = start_kernel(NOTEBOOK)
    resumed = survivor.execute("%resume")
    assert resumed.status == "ok", resumed.stderr
    assert "2 turn(s)" in resumed.markdown()
    model_server.extend(
        [
            {
                "expect": {"messages_contain": ["First durable prompt", "Second durable prompt"]},
                "text": "Both are here.",
            }
        ]
    )
    assert survivor.execute("What do you remember?").status == "ok"
    sent = json.dumps(model_server.requests[-1]["messages"])
    assert "Third prompt that never finishes" not in sent
    assert not [e for e in model_server.errors if "step" in e]


def test_two_kernels_write_their_sessions_at_once(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    left = start_kernel({"JPY_SESSION_NAME": "left.ipynb"})
    right = start_kernel({"JPY_SESSION_NAME": "right.ipynb"})
    rounds = 4
    model_server.extend([{"text": "ok " * 50, "repeat": 2 * rounds}])
    for n in range(rounds):
        # Both cells are in flight together, so both kernels write in the same moments.
        ids = [(k, k.send(f"{name} prompt {n}")) for k, name in ((left, "left"), (right, "right"))]
        for kernel, msg_id in ids:
            kernel.wait_for(
                msg_id,
                lambda m: m["msg_type"] == "status" and m["content"]["execution_state"] == "idle",
            )
    assert model_server.errors == []
    store = _store(co_home)
    by_notebook = {s.notebook: s for s in store.recent()}
    assert set(by_notebook) == {"left.ipynb", "right.ipynb"}
    for name, info in by_notebook.items():
        loaded = store.load(info.id)
        assert [t.prompt for t in loaded.turns] == [
            f"{name.removesuffix('.ipynb')} prompt {n}" for n in range(rounds)
        ]
        assert len(loaded.messages) == 2 * rounds
    store.close()
    listed = left.execute("%sessions").markdown()
    assert "left.ipynb" in listed and "right.ipynb" in listed and "← this one" in listed


def test_a_resumed_long_conversation_is_sent_windowed_and_trimmed(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    # 10 turns, every second one with a 3,000-character tool output: 30 messages.
    history = synthetic_history(10, tool_every=2, tool_calls=1, output_chars=3000)
    turns = [TurnRow(prompt=f"prompt {n}: what next?", start=None) for n in range(10)]
    store = _store(co_home)
    store.save("feedc0de" * 4, history, turns, workspace="/elsewhere", notebook="old.ipynb")
    store.close()
    kernel = start_kernel({"CO_MAX_HISTORY_MESSAGES": "12", "CO_TOOL_OUTPUT_TRIM_CHARS": "500"})
    assert kernel.execute("%resume feedc0de").status == "ok"
    shown = kernel.execute("%history").markdown()
    assert "| messages | 30 (" in shown
    model_server.extend(
        [
            {
                "expect": {
                    "messages_contain": [
                        "earlier messages of this conversation are not shown",
                        "[Co trimmed 2,500 more characters of this old tool output]",
                        "prompt 9: what next?",
                    ]
                },
                "text": "Carrying on.",
            }
        ]
    )
    assert kernel.execute("Carry on").status == "ok"
    assert model_server.errors == []
    sent = json.dumps(model_server.requests[-1]["messages"])
    assert "prompt 0: what next?" not in sent
    assert "line 8.0 " * 60 not in sent, "old tool outputs are not sent whole"
    # The session keeps everything: the window only shapes what the model is sent.
    assert "| messages | 32 (" in kernel.execute("%history").markdown()


def test_secrets_are_never_written_to_the_store(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    secret = "sk-test-0123456789-never-store-me"
    kernel = start_kernel({"CO_API_KEY": secret, "OPENAI_API_KEY": secret + "-openai"})
    model_server.extend([{"text": "Answered."}])
    assert kernel.execute("Hello").status == "ok"
    assert model_server.requests, "the turn reached the model"
    data = co_home / "data"
    files = [p for p in data.iterdir() if p.name.startswith("sessions.db")]
    assert files, "the session was written"
    for path in files:
        assert secret.encode() not in path.read_bytes(), path


def test_sessions_can_be_turned_off(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    kernel = start_kernel({"CO_SAVE_SESSIONS": "false"})
    model_server.extend([{"text": "Not saved."}])
    assert kernel.execute("Hello").status == "ok"
    assert not (co_home / "data" / "sessions.db").exists()
    assert (
        kernel.execute("%sessions").markdown()
        == "Saving sessions is off (setting `save_sessions`)."
    )
    resumed = kernel.execute("%resume")
    assert resumed.status == "error"
    assert "Saving sessions is off" in resumed.stderr


def test_an_unwritable_store_is_reported_once_and_the_turns_go_on(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    (co_home / "data" / "sessions.db").mkdir(parents=True)  # a folder where the file should be
    kernel = start_kernel()
    model_server.extend([{"text": "First."}, {"text": "Second."}])
    first = kernel.execute("One")
    assert first.status == "ok"
    assert "Co could not save this conversation" in first.markdown()
    assert "First." in first.markdown()
    second = kernel.execute("Two")
    assert second.status == "ok"
    assert "could not save" not in second.markdown(), "the warning is shown once"
    listed = kernel.execute("%sessions")
    assert listed.status == "error"
    assert "could not be read" in listed.stderr and "\n" not in listed.stderr.strip()


def test_a_regenerated_turn_replaces_the_stored_one(
    kernel: CoKernel, model_server: ScriptedModelServer, co_home: Path
) -> None:
    model_server.extend([{"text": "Kept answer."}, {"text": "Draft one."}, {"text": "Draft two."}])
    assert kernel.execute("Keep this", cell_id="cell-a").status == "ok"
    assert kernel.execute("Write a haiku", cell_id="cell-b").status == "ok"
    assert kernel.execute("Write a haiku", cell_id="cell-b").status == "ok"  # run the cell again
    store = _store(co_home)
    (info,) = store.recent()
    loaded = store.load(info.id)
    store.close()
    assert [t.prompt for t in loaded.turns] == ["Keep this", "Write a haiku"]
    saved = json.dumps([m.parts[0].content for m in loaded.messages])  # type: ignore[union-attr]
    assert "Draft two." in saved and "Draft one." not in saved and "Kept answer." in saved
    assert info.turns == 2 and info.messages == 4


def test_resume_brings_back_the_conversations_model(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer
) -> None:
    # The scripted server plays a local Ollama at OLLAMA_HOST/v1 that lists llama3.2.
    ollama = {**NOTEBOOK, "OLLAMA_HOST": model_server.base_url.removesuffix("/v1")}
    kernel = start_kernel(ollama)
    model_server.extend([{"model": "llama3.2:latest", "text": "Hi from llama."}])
    assert kernel.execute("%model ollama:llama3.2").status == "ok"
    assert kernel.execute("Hello llama").status == "ok"

    kernel.restart()
    assert kernel.execute("%model").markdown().startswith("Model: **compat:scripted**")
    resumed = kernel.execute("%resume")
    assert resumed.status == "ok", resumed.stderr
    assert "Its model **ollama:llama3.2** is in use again." in resumed.markdown()
    assert kernel.execute("%model").markdown().startswith("Model: **ollama:llama3.2**")
    model_server.extend([{"expect": {"messages_contain": ["Hello llama"]}, "text": "Still llama."}])
    assert kernel.execute("Which model?").status == "ok"
    assert model_server.requests[-1]["model"] == "llama3.2"
    assert model_server.errors == []


def test_resume_keeps_the_current_model_when_the_stored_one_cannot_be_used(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    store = _store(co_home)
    history = synthetic_history(1)
    store.save(
        "5e55100d" * 4,
        history,
        [TurnRow(prompt="prompt 0: what next?", start=0)],
        workspace="/elsewhere",
        model="gemini:gemini-2.5-flash",  # no GEMINI_API_KEY in the kernel
    )
    store.close()
    kernel = start_kernel()
    resumed = kernel.execute("%resume 5e55100d")
    assert resumed.status == "ok", resumed.stderr
    shown = resumed.markdown()
    assert "Its model `gemini:gemini-2.5-flash` cannot be used now" in shown
    assert "GEMINI_API_KEY" in shown and "Co keeps **compat:scripted**" in shown
    model_server.extend(
        [{"expect": {"messages_contain": ["prompt 0: what next?"]}, "text": "Carrying on."}]
    )
    assert kernel.execute("Go on").status == "ok"
    assert model_server.requests[-1]["model"] == "scripted"
    assert model_server.errors == []


@pytest.mark.skipif(
    default_model_string(Settings()) is None, reason="the bundled local model is not installed"
)
def test_resume_does_not_fall_back_to_the_bundled_default_model(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    default = default_model_string(Settings())
    store = _store(co_home)
    turns = [TurnRow(prompt="prompt 0: what next?", start=0)]
    store.save("defa0175" * 4, synthetic_history(1), turns, workspace="/w", model=default)
    store.close()
    kernel = start_kernel()
    resumed = kernel.execute("%resume defa0175")
    assert resumed.status == "ok", resumed.stderr
    assert f"It was answered by `{default}`, Co's small default model" in resumed.markdown()
    assert kernel.execute("%model").markdown().startswith("Model: **compat:scripted**")


def test_two_kernels_resuming_one_session_fork_instead_of_interleaving(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer, co_home: Path
) -> None:
    first = start_kernel(NOTEBOOK)
    model_server.extend([{"text": "Shared start."}])
    assert first.execute("Shared prompt").status == "ok"
    store = _store(co_home)
    (shared,) = store.recent()
    first.shutdown()

    left = start_kernel({"JPY_SESSION_NAME": "left.ipynb"})
    right = start_kernel({"JPY_SESSION_NAME": "right.ipynb"})
    assert left.execute(f"%resume {shared.id[:8]}").status == "ok"
    assert right.execute(f"%resume {shared.id[:8]}").status == "ok"
    model_server.extend([{"text": "Left answer."}, {"text": "Right answer."}])
    assert left.execute("Left prompt").status == "ok"
    forked = right.execute("Right prompt")
    assert forked.status == "ok"
    shown = forked.markdown()
    assert f"Another kernel also continued conversation `{shared.id[:8]}`" in shown
    assert "goes on as a fork" in shown and "Right answer." in shown

    model_server.extend([{"text": "Left again."}, {"text": "Right again."}])
    assert left.execute("Left second").status == "ok"
    again = right.execute("Right second")
    assert again.status == "ok"
    assert "fork" not in again.markdown(), "the fork is announced once"

    sessions = {s.id: s for s in store.recent()}
    assert len(sessions) == 2
    original = store.load(shared.id)
    assert [t.prompt for t in original.turns] == ["Shared prompt", "Left prompt", "Left second"]
    (fork_id,) = set(sessions) - {shared.id}
    fork = store.load(fork_id)
    assert [t.prompt for t in fork.turns] == ["Shared prompt", "Right prompt", "Right second"]
    assert fork.info.meta["forked_from"] == shared.id
    assert len(fork.messages) == len(original.messages) == 6
    assert "Left answer." not in json.dumps([m.parts[0].content for m in fork.messages])  # type: ignore[union-attr]
    store.close()
    listed = right.execute("%sessions").markdown()
    assert fork_id[:8] in listed and shared.id[:8] in listed
