"""The kernel's warm-up rehearses one pydantic-ai run in the kernel's own process before
the first cell. It must reach nothing outside the process: no connection, no program
started, no output (pydantic-ai's first-run banner included)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_SCRIPT = """
import sys

reached = []


def audit(event, args):
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg", "subprocess.Popen",
                 "os.system", "os.posix_spawn", "os.exec", "os.fork"):
        reached.append(event)


sys.addaudithook(audit)
from co_kernel.turn import rehearse_agent_run

rehearse_agent_run()
print(reached)
"""


def test_the_rehearsed_run_reaches_nothing_outside_the_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env["CO_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
    assert done.stderr == ""
