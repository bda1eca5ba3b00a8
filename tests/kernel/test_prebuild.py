"""The session is built in the background once the kernel has answered kernel_info.

Kernels here start from a fresh interpreter (``fork=False``): the build runs beside the
warm-up import, which a forked test kernel would not do.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..support.kernel_harness import CoKernel, WidgetClicker

_INSTRUCTION = "PROJECT-INSTRUCTION-4c1d: answer in verse"


def _kernel_info(kernel: CoKernel) -> dict[str, Any]:
    msg_id = kernel.kc.kernel_info()
    while True:
        reply = kernel.kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]["co"]


def _built_session_id(kernel: CoKernel, *, timeout: float = 120) -> str:
    """The session id kernel_info reports once the background build has made one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        session_id = _kernel_info(kernel)["session_id"]
        if session_id:
            return str(session_id)
        time.sleep(0.1)  # polling kernel_info: the build leaves no other trace
    raise TimeoutError("no session was built in the background")


def test_the_session_is_built_before_any_cell_and_the_first_turn_uses_it(
    start_kernel: Callable[..., CoKernel], model_server: Any
) -> None:
    kernel = start_kernel(fork=False)
    first = _kernel_info(kernel)
    assert first["model"] == "compat:scripted"
    session_id = _built_session_id(kernel)
    model_server.extend([{"text": "Hello from the prebuilt session."}])
    result = kernel.execute("Say hello")
    assert result.status == "ok"
    assert result.markdown() == "Hello from the prebuilt session."
    assert result.reply["metadata"]["co"]["session_id"] == session_id


def test_a_cell_sent_with_the_first_kernel_info_waits_for_the_build_instead_of_building_again(
    start_kernel: Callable[..., CoKernel], model_server: Any
) -> None:
    kernel = start_kernel(wait_ready=False, fork=False)
    model_server.extend([{"text": "First answer."}])
    kernel.kc.kernel_info()
    result = kernel.execute("Say something", timeout=120)
    assert result.status == "ok" and result.markdown() == "First answer."
    # One session: the one the cell ran in is the one the kernel keeps.
    assert result.reply["metadata"]["co"]["session_id"] == _kernel_info(kernel)["session_id"]


_COLLECTOR = "%%python\nimport gc\nprint(gc.isenabled(), gc.get_freeze_count() > 0)"


def test_the_collector_runs_again_after_start_up_with_its_objects_left_out_of_its_scans(
    start_kernel: Callable[..., CoKernel], model_server: Any
) -> None:
    kernel = start_kernel(fork=False)
    _built_session_id(kernel)
    result = kernel.execute(_COLLECTOR)
    assert result.status == "ok"
    assert result.stdout.split() == ["True", "True"]


def test_the_collector_runs_again_when_no_client_asked_for_kernel_info(
    start_kernel: Callable[..., CoKernel], model_server: Any
) -> None:
    # No kernel_info, so no warm-up: the first cell builds the session itself, and the
    # collector must not stay off for the kernel's life.
    kernel = start_kernel(wait_ready=False, fork=False)
    model_server.extend([{"text": "First answer."}])
    first = kernel.execute("Say something", timeout=120)
    assert first.status == "ok" and first.markdown() == "First answer."
    result = kernel.execute(_COLLECTOR)
    assert result.status == "ok"
    assert result.stdout.split() == ["True", "True"]


def test_the_first_turn_after_the_warm_up_asks_about_the_folder_and_answers_as_any_turn(
    start_kernel: Callable[..., CoKernel], model_server: Any, workspace: Path
) -> None:
    # The warm-up runs a throwaway agent and rewrites the session's tools before any
    # cell: the first turn must still ask about an untrusted folder before anything of it
    # acts, offer Co's tools alone, call one and answer, its model sent nothing else.
    co = workspace / ".co"
    co.mkdir()
    (co / "instructions.md").write_text(_INSTRUCTION)
    kernel = start_kernel(fork=False, trusted=False)
    _built_session_id(kernel)
    model_server.extend(
        [{"tool_calls": [{"name": "read_todos", "arguments": {}}]}, {"text": "Nothing to do."}]
    )
    clicker = WidgetClicker(["Not now"])
    result = kernel.execute("What is on my list?", on_message=clicker, timeout=90)
    assert result.status == "ok", result.text()
    assert [label for label, _ in clicker.clicked] == ["Not now"], "the folder was asked about"
    assert result.markdown().endswith("Nothing to do.")
    assert "rehears" not in result.text().lower()
    assert model_server.errors == []
    assert len(model_server.requests) == 2, "the turn's two requests and nothing else"
    sent = json.dumps(model_server.requests)
    assert _INSTRUCTION not in sent, "an untrusted folder's instructions stay out"
    assert "rehearsal" not in sent
    offered = {t["function"]["name"] for t in model_server.requests[0]["tools"]}
    assert "read_todos" in offered and "rehearsal" not in offered
