"""The status the JupyterLab status bar reads: kernel_info_reply and execute_reply metadata."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from co_kernel import __version__
from co_kernel.config import load_settings
from co_kernel.replay import ScriptedModelServer
from co_kernel.status import LAB_STATUS_KEY, lab_status
from co_kernel.turn import ChatSession

from ..support.kernel_harness import CoKernel


def _kernel_info(kernel: CoKernel) -> dict:
    reply = kernel.kc.kernel_info(reply=True, timeout=30)
    return reply["content"]


def test_kernel_info_reports_model_before_any_turn(kernel: CoKernel) -> None:
    info = _kernel_info(kernel)
    assert info["implementation"] == "co"
    status = info[LAB_STATUS_KEY]
    assert status["version"] == __version__
    assert status["model"] == "compat:scripted"
    assert (status["input_tokens"], status["output_tokens"], status["turns"]) == (0, 0, 0)
    assert status["yolo"] is False


def test_kernel_info_over_control_first_leaves_the_first_turn_working(
    start_kernel: Callable[..., CoKernel], model_server: ScriptedModelServer
) -> None:
    """jupyter_server nudges a new kernel with kernel_info on control and shell at once."""
    kernel = start_kernel(wait_ready=False)
    request = kernel.kc.session.msg("kernel_info_request")
    kernel.kc.control_channel.send(request)
    reply = kernel.kc.control_channel.get_msg(timeout=120)
    while reply["parent_header"].get("msg_id") != request["header"]["msg_id"]:
        reply = kernel.kc.control_channel.get_msg(timeout=120)
    status = reply["content"][LAB_STATUS_KEY]
    # The model is known before the session starts; no session exists yet.
    assert (status["model"], status["session_id"]) == ("compat:scripted", None)
    kernel.kc.wait_for_ready(timeout=120)
    model_server.extend([{"text": "Still fine."}])
    first = kernel.execute("hello", cell_id="c1")
    assert first.status == "ok", first.reply["content"]
    assert "Still fine." in first.markdown()
    assert first.reply["metadata"][LAB_STATUS_KEY]["session_id"]


def test_every_reply_carries_the_status_and_tokens_add_up(
    kernel: CoKernel, model_server: ScriptedModelServer
) -> None:
    model_server.extend(
        [
            {"text": "First.", "usage": {"prompt_tokens": 120, "completion_tokens": 30}},
            {"text": "Second.", "usage": {"prompt_tokens": 200, "completion_tokens": 5}},
        ]
    )
    first = kernel.execute("hello", cell_id="c1")
    assert first.status == "ok"
    status = first.reply["metadata"][LAB_STATUS_KEY]
    assert (status["input_tokens"], status["output_tokens"], status["turns"]) == (120, 30, 1)
    second = kernel.execute("and again", cell_id="c2")
    status = second.reply["metadata"][LAB_STATUS_KEY]
    assert (status["input_tokens"], status["output_tokens"], status["turns"]) == (320, 35, 2)
    # The session id is the same on every reply and in kernel_info.
    assert status["session_id"] == _kernel_info(kernel)[LAB_STATUS_KEY]["session_id"]
    # The same totals as %usage shows.
    assert "320 input and 35 output tokens" in kernel.execute("%usage").markdown()


def test_rerunning_a_cell_replaces_its_tokens(
    kernel: CoKernel, model_server: ScriptedModelServer
) -> None:
    model_server.extend(
        [
            {"text": "One.", "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
            {"text": "One again.", "usage": {"prompt_tokens": 90, "completion_tokens": 12}},
        ]
    )
    kernel.execute("question", cell_id="same")
    rerun = kernel.execute("question", cell_id="same")
    status = rerun.reply["metadata"][LAB_STATUS_KEY]
    assert (status["input_tokens"], status["output_tokens"], status["turns"]) == (90, 12, 1)


def test_yolo_follows_the_magic(kernel: CoKernel) -> None:
    on = kernel.execute("%yolo on")
    assert on.reply["metadata"][LAB_STATUS_KEY]["yolo"] is True
    off = kernel.execute("%yolo off")
    assert off.reply["metadata"][LAB_STATUS_KEY]["yolo"] is False


def test_magics_and_failed_cells_carry_the_status_too(
    kernel: CoKernel, model_server: ScriptedModelServer
) -> None:
    switched = kernel.execute("%model compat:other-model")
    assert switched.status == "ok"
    assert switched.reply["metadata"][LAB_STATUS_KEY]["model"] == "compat:other-model"
    failed = kernel.execute("%no-such-magic")
    assert failed.status == "error"
    assert failed.reply["metadata"][LAB_STATUS_KEY]["model"] == "compat:other-model"
    assert kernel.is_alive()


def _session(tmp_path: Path) -> ChatSession:
    return ChatSession(load_settings(tmp_path), workspace=tmp_path, kernel_id="k")


def test_yolo_shows_once_the_session_approves_everything(tmp_path: Path) -> None:
    session = _session(tmp_path)
    assert lab_status(session)["yolo"] is False
    session.deps.auto_confirm = True  # what "Approve all" and %yolo set
    assert lab_status(session)["yolo"] is True


def test_a_broken_session_is_reported_not_raised(tmp_path: Path) -> None:
    session = _session(tmp_path)
    session.turns.append("not a turn")  # type: ignore[arg-type]
    status = lab_status(session)
    assert status["version"] == __version__
    assert status["error"] == "AttributeError: 'str' object has no attribute 'input_tokens'"
