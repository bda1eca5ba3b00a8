"""The scripted model's side of a test: the steps it answers with, and what it was sent."""

from __future__ import annotations

from typing import Any

from co_kernel.replay import ScriptedModelServer

__all__ = ["call_step", "shell", "tool_call", "tool_messages", "tool_results_sent", "tools_offered"]


def tool_call(name: str, /, **arguments: Any) -> dict[str, Any]:
    """One tool call of a step's ``tool_calls``."""
    return {"name": name, "arguments": arguments}


def shell(cmd: str, **extra: Any) -> dict[str, Any]:
    """A call of the shell tool running ``cmd``."""
    return tool_call("run_shell_command", cmd=cmd, **extra)


def call_step(name: str, /, **arguments: Any) -> dict[str, Any]:
    """A step whose answer is one call of the tool ``name``."""
    return {"tool_calls": [tool_call(name, **arguments)]}


def tool_results_sent(server: ScriptedModelServer, *, distinct: bool = False) -> list[str]:
    """The content of every tool message the model was sent, request by request; with
    ``distinct``, each once, in the order first sent (a later request repeats the earlier)."""
    sent = [
        str(m["content"])
        for request in server.requests
        for m in request["messages"]
        if m["role"] == "tool"
    ]
    return list(dict.fromkeys(sent)) if distinct else sent


def tool_messages(server: ScriptedModelServer, request: int = -1) -> list[str]:
    """The content of the tool messages of one request the model was sent (the last one by
    default)."""
    return [str(m["content"]) for m in server.requests[request]["messages"] if m["role"] == "tool"]


def tools_offered(request: dict[str, Any]) -> list[str]:
    """The names of the tools a request offered the model, in the order offered."""
    return [t["function"]["name"] for t in request.get("tools", [])]
