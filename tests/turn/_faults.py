"""Shared pieces of the fault tests: kernels with the fault tools, history checks."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from co_kernel.replay import ScriptedModelServer

from ..support.kernel_harness import CoKernel, Mode
from ._fault_tools import install_plugin

FOLLOW_UP = "Follow-up: are you still there?"
FOLLOW_UP_ANSWER = "Yes, still here after the fault."


def start_fault_kernel(
    server: ScriptedModelServer, root: Path, **settings: str | float | int
) -> tuple[CoKernel, Path]:
    """A real Co kernel with the fault tools, talking to ``server``; returns it and its workspace."""
    root.mkdir(parents=True, exist_ok=True)
    home, workspace = root / "co-home", root / "workspace"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    env = {
        "CO_HOME": str(home),
        "CO_SANDBOX": "subprocess",
        "CO_MODEL": "compat:scripted",
        "CO_BASE_URL": server.base_url,
        **install_plugin(root / "plugins"),
    }
    env.update({f"CO_{name.upper()}": str(value) for name, value in settings.items()})
    return CoKernel(env, workspace), workspace


def dangling_tool_calls(body: dict[str, Any]) -> list[str]:
    """Ids of assistant tool calls in a request that no tool message answers."""
    called: list[str] = []
    answered: set[str] = set()
    for message in body.get("messages", []):
        for call in message.get("tool_calls") or []:
            called.append(call["id"])
        if message.get("role") == "tool":
            answered.add(message.get("tool_call_id"))
    return [c for c in called if c not in answered]


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_call_id -> content of every tool message in a request."""
    return {
        m["tool_call_id"]: m["content"]
        if isinstance(m["content"], str)
        else json.dumps(m["content"])
        for m in body.get("messages", [])
        if m.get("role") == "tool"
    }


def serialised(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", []), ensure_ascii=False)


def follow_up(
    kernel: CoKernel, server: ScriptedModelServer, mode: Mode = "notebook"
) -> dict[str, Any]:
    """Run a follow-up turn; assert it works on the saved history; return what the model got."""
    server.reset([{"expect": {"last_user_contains": FOLLOW_UP}, "text": FOLLOW_UP_ANSWER}])
    result = kernel.execute(FOLLOW_UP, mode=mode, cell_id=str(uuid.uuid4()), timeout=60)
    assert server.errors == [], server.errors
    assert result.status == "ok", result.text()
    assert FOLLOW_UP_ANSWER in result.text()
    (body,) = server.requests
    assert dangling_tool_calls(body) == [], "the model received a tool call without its result"
    return body


def vm_rss_kib(pid: int) -> int:
    """Resident memory of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def kernel_pid(kernel: CoKernel) -> int:
    provisioner = kernel.km.provisioner
    pid = getattr(provisioner, "pid", None) or getattr(
        getattr(provisioner, "process", None), "pid", None
    )
    assert pid, "the kernel's pid is unknown"
    return int(pid)
