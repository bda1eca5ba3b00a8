"""The session is built in the background once the kernel has answered kernel_info.

Kernels here start from a fresh interpreter (``fork=False``): the build runs beside the
warm-up import, which a forked test kernel would not do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..support.kernel_harness import CoKernel


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
