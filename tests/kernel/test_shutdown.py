"""Shutting a kernel down while it still warms up (imports pydantic-ai in the background)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from jupyter_client.manager import KernelManager

from ..support.kernel_harness import ensure_kernelspec


def test_a_shutdown_during_the_warm_up_exits_cleanly(tmp_path: Path, co_home: Path) -> None:
    """The warm-up thread does not hold the exit, and cutting it short prints no error."""
    ensure_kernelspec()
    ipc = tempfile.mkdtemp(prefix="co-kernel-ipc-")
    km = KernelManager(kernel_name="co", transport="ipc", ip=os.path.join(ipc, "kernel"))
    log = tmp_path / "kernel.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env.update(CO_HOME=str(co_home), CO_SANDBOX="subprocess")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")) if p
    )
    with log.open("w") as out:
        km.start_kernel(env=env, cwd=str(tmp_path), stdout=out, stderr=out)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=120)  # kernel_info: the warm-up starts now
            process = km.provisioner.process
            kc.shutdown()  # as `jupyter console` asks, on the control channel
            reply = kc.control_channel.get_msg(timeout=60)
            assert reply["msg_type"] == "shutdown_reply", reply
            try:
                code = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                code = None  # answered, then did not exit
            kc.stop_channels()
        finally:
            if km.is_alive():
                km.shutdown_kernel(now=True)
            km.cleanup_resources()
    text = log.read_text()
    assert code == 0, f"exit status {code}; the kernel said:\n{text}"
    assert "Traceback" not in text and "Fatal Python error" not in text, text
