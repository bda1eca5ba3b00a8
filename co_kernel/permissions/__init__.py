"""The guards on side-effectful tool calls: permission rules and approval decisions.

Permission rules (``_rules``) say which rule, if any, decides a call; ``_approval``
decides a call without asking when rules, session yolo or a safe shell command allow it
(read-only options: ``_shell_options``; git repositories that could run commands:
``_git_repo``), and labels every decision for the tool-call card; ``_outbound`` sends
requests the person did not choose to the card. Both read a shell
command as the shell does (``_shell_parse``: its simple commands; ``_shell_programs``:
wrappers, opaque programs, writing options).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._approval import (
    ALWAYS_ALLOWED,
    APPROVED,
    APPROVED_ALL,
    DENIED,
    INTERRUPTED,
    OUTBOUND,
    RECORDED,
    SAFE_PREFIX,
    TIMED_OUT,
    YOLO,
    ApprovalDecision,
    auto_decision,
    decision_label,
    denial_message,
    is_refusal,
    is_safe_command,
    normalise_args,
    outbound_floor,
    record_decision,
    replayed_decision,
)
from ._parts import ALL_PARTS_REJECTED, accepted_parts, partial_label

if TYPE_CHECKING:
    from ._outbound import OutboundGate
    from ._rules import (
        PermissionGate,
        accept_project_rules,
        active_rules,
        narrowest_rule,
        pending_project_rules,
        project_rules_notice,
    )

__all__ = [
    "ALL_PARTS_REJECTED",
    "ALWAYS_ALLOWED",
    "APPROVED",
    "APPROVED_ALL",
    "DENIED",
    "INTERRUPTED",
    "OUTBOUND",
    "RECORDED",
    "SAFE_PREFIX",
    "TIMED_OUT",
    "YOLO",
    "ApprovalDecision",
    "OutboundGate",
    "PermissionGate",
    "accept_project_rules",
    "accepted_parts",
    "active_rules",
    "auto_decision",
    "decision_label",
    "denial_message",
    "is_refusal",
    "is_safe_command",
    "narrowest_rule",
    "normalise_args",
    "outbound_floor",
    "partial_label",
    "pending_project_rules",
    "project_rules_notice",
    "record_decision",
    "replayed_decision",
]

_RULES = frozenset(
    {
        "PermissionGate",
        "accept_project_rules",
        "active_rules",
        "narrowest_rule",
        "pending_project_rules",
        "project_rules_notice",
    }
)


_OUTBOUND = frozenset({"OutboundGate"})


def __getattr__(name: str) -> Any:
    # The rules load pydantic-ai's capabilities: with the first agent or magic that needs
    # them, not with the package (kernel start imports it for the decision labels).
    if name in _OUTBOUND:
        from . import _outbound

        return getattr(_outbound, name)
    if name not in _RULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _rules

    return getattr(_rules, name)
