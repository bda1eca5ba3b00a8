"""Deciding side-effectful tool calls (seed 001 "Deferred Approval Pattern").

A call runs without asking only under session yolo or, for the shell tool, when the
command starts with a configured safe prefix and neither chains nor redirects.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._deps import CoDeps

__all__ = ["SHELL_TOOL", "auto_decision", "is_safe_command", "normalise_args"]

SHELL_TOOL = "run_shell_command"

# Anything that chains, redirects, substitutes or spans lines makes a command unsafe,
# whatever it starts with.
_UNSAFE = re.compile(r"[;&|<>`\n\r]|\$\(|\$\{")


def is_safe_command(command: str, safe_prefixes: list[str]) -> bool:
    """True when ``command`` is one of the safe prefixes, alone or followed by arguments."""
    cmd = command.strip()
    if not cmd or _UNSAFE.search(cmd):
        return False
    for prefix in safe_prefixes:
        prefix = prefix.strip()
        if prefix and (cmd == prefix or cmd.startswith(prefix + " ")):
            return True
    return False


def normalise_args(args: dict[str, Any] | str | None) -> dict[str, Any]:
    """Tool-call args arrive as a JSON string, a dict or nothing; always return a dict."""
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    try:
        value = json.loads(args) if args.strip() else {}
    except json.JSONDecodeError:
        return {"_raw": args}
    return value if isinstance(value, dict) else {"_value": value}


def auto_decision(tool_name: str, args: dict[str, Any], deps: CoDeps) -> str | None:
    """The reason a call is approved without asking ("yolo", "safe-prefix"), or None."""
    if deps.auto_confirm:
        return "yolo"
    if tool_name == SHELL_TOOL:
        command = args.get("cmd", args.get("command"))
        if isinstance(command, str) and is_safe_command(command, deps.settings.shell_safe_commands):
            return "safe-prefix"
    return None
