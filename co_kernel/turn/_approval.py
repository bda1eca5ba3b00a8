"""Deciding side-effectful tool calls (seed 001 "Deferred Approval Pattern").

A call runs without asking only under session yolo or, for the shell tool, when the
command starts with a configured safe prefix and neither chains nor redirects.
Every decision has a label (``approved``, ``denied``, ``yolo``, ...) that the turn keeps
in ``TurnResult.decisions`` and the frontends write into the call's persistent card.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._shell_options import COMMANDS, Parsed, parse_arguments, parse_find

if TYPE_CHECKING:
    from ..deps import CoDeps
    from ._frontend import ApprovalDecision

__all__ = [
    "APPROVED",
    "APPROVED_ALL",
    "DENIED",
    "INTERRUPTED",
    "SAFE_PREFIX",
    "SHELL_TOOL",
    "TIMED_OUT",
    "YOLO",
    "auto_decision",
    "decision_label",
    "denial_message",
    "is_refusal",
    "is_safe_command",
    "normalise_args",
]

SHELL_TOOL = "run_shell_command"

# Decision labels, as written on the tool-call card and in TurnResult.decisions.
APPROVED = "approved"
APPROVED_ALL = "approved all"
DENIED = "denied"
TIMED_OUT = "timed out"
INTERRUPTED = "interrupted"
YOLO = "yolo"
SAFE_PREFIX = "safe-prefix"

_LABELS: dict[str, str] = {
    "approve": APPROVED,
    "approve_all": APPROVED_ALL,
    "deny": DENIED,
    "timed_out": TIMED_OUT,
}

# Anything that chains, redirects, substitutes or spans lines makes a command unsafe,
# whatever it starts with.
_UNSAFE = re.compile(r"[;&|<>`\n\r]|\$\(|\$\{")

PathCheck = Callable[[list[str], bool], bool]
"""Given a safe command's path arguments and whether it reads whole trees, whether they
may be read without asking."""


def _arguments(prefix: str, words: list[str]) -> Parsed | None:
    """The arguments after ``prefix``, parsed by its option table; None when one writes."""
    args = words[len(prefix.split()) :]
    if prefix == "find":
        return parse_find(args)
    spec = COMMANDS.get(prefix)
    if spec is None:
        # A configured prefix Co knows nothing about: its arguments, but no options.
        if any(w.startswith("-") for w in args):
            return None
        return Parsed(paths=list(args))
    return parse_arguments(spec, args)


def is_safe_command(
    command: str, safe_prefixes: list[str], paths_ok: PathCheck | None = None
) -> bool:
    """True when ``command`` is a safe prefix with only read-only options and arguments.

    ``paths_ok``, when given, also vets the files the command would read.
    """
    cmd = command.strip()
    if not cmd or _UNSAFE.search(cmd):
        return False
    try:
        words = shlex.split(cmd)
    except ValueError:  # unbalanced quotes: the shell would not read it as we do
        return False
    for prefix in safe_prefixes:
        prefix = " ".join(prefix.split())
        if prefix and words[: len(prefix.split())] == prefix.split():
            parsed = _arguments(prefix, words)
            if parsed is None:
                return False
            return paths_ok is None or paths_ok(parsed.paths, parsed.recursive)
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
    """The reason a call is approved without asking (``yolo``, ``safe-prefix``), or None."""
    if deps.auto_confirm:
        return YOLO
    if tool_name == SHELL_TOOL:
        command = args.get("cmd", args.get("command"))
        if isinstance(command, str) and is_safe_command(command, deps.settings.shell_safe_commands):
            return SAFE_PREFIX
    return None


def decision_label(choice: ApprovalDecision) -> str:
    """The card label of a person's answer."""
    return _LABELS.get(choice, DENIED)


def is_refusal(label: str | None) -> bool:
    """Whether a decision label means the call did not run."""
    return label in (DENIED, TIMED_OUT, INTERRUPTED)


def denial_message(label: str, timeout: float | None = None) -> str:
    """What the model reads when a call was refused, so it can propose something else."""
    if label == TIMED_OUT:
        waited = f" within {timeout:g} s" if timeout else ""
        return (
            f"Nobody answered the approval request{waited}, so this action did not run. "
            "Do not retry it as is; say what you wanted to do so the user can decide."
        )
    return (
        "The user denied this action. Do not retry it as is; explain what you wanted to do "
        "and suggest an alternative."
    )
