"""The ``co.approvals`` comm: every waiting approval, for any page that connects (issue 27).

A card lives in the output of the cell that asked; a reloaded page, a second tab or a
notebook that was never saved has no such output. The JupyterLab extension therefore
opens a comm with target ``co.approvals`` when it connects to a kernel. The kernel
answers with the calls waiting now and sends the list again after every change:

- kernel -> page: ``{"pending": [call, ...], "decided": [outcome, ...]}``; a call is
  ``{id, call_id, tool, arguments, detail, agent, rule}`` (``arguments`` pretty-printed,
  everything redacted like the cell's outputs), an outcome ``{id, tool, decision, text}``
  with the decision label and how the card words it. ``{"error": message}`` answers a
  message the kernel cannot read.
- page -> kernel: ``{"decide": id, "choice": "approve" | "deny" | "approve_all" |
  "always_allow"}``. It settles the same future as the card's buttons, so a call is
  decided once however many tabs (and the card) answer.

Comm messages may be handled on another thread than the turn's loop (a subshell), so
the registry is guarded by a lock and a decision reaches the turn only through the
thread-safe callback the approver registered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args

from ..turn._frontend import ApprovalDecision, ApprovalRequest
from ._base import DECISION_TEXT
from ._toolcard import format_args

__all__ = ["APPROVALS_TARGET", "PendingApprovals"]

APPROVALS_TARGET = "co.approvals"

_CHOICES = tuple(c for c in get_args(ApprovalDecision) if c != "timed_out")
"""What a page may answer; ``timed_out`` is the kernel's own."""


@dataclass
class _Waiting:
    call: dict[str, Any]
    """The call as pages receive it."""
    decide: Callable[[ApprovalDecision], None]
    """Hands a choice to the waiting turn; safe from any thread, ignored once decided."""


class PendingApprovals:
    """The calls waiting for a decision now, and the pages (comms) that watch them."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        self._redact = redact
        self._lock = threading.Lock()
        self._waiting: dict[str, _Waiting] = {}
        self._comms: dict[str, Any] = {}

    def register(self, comm_manager: Any) -> None:
        """Answer the extension's ``co.approvals`` comms (the kernel's comm manager)."""
        comm_manager.register_target(APPROVALS_TARGET, self._open)

    # -- the approver's side ------------------------------------------------------

    def add(
        self, pending_id: str, request: ApprovalRequest, decide: Callable[[ApprovalDecision], None]
    ) -> None:
        """A call starts waiting; ``decide`` is how a page's answer reaches it."""
        call = request.call
        view = {
            "id": pending_id,
            "call_id": call.call_id,
            "tool": call.name,
            "arguments": self._redact(format_args(call.args)),
            "detail": self._redact(call.detail) if call.detail else None,
            "agent": call.agent,
            "rule": self._redact(request.rule) if request.rule else None,
        }
        with self._lock:
            self._waiting[pending_id] = _Waiting(view, decide)
        self._broadcast([])

    def settle(self, pending_id: str, decision: str) -> None:
        """The call was decided (``decision`` is its card label) or its turn ended."""
        with self._lock:
            waiting = self._waiting.pop(pending_id, None)
        if waiting is None:
            return
        outcome = {
            "id": pending_id,
            "tool": waiting.call["tool"],
            "decision": decision,
            "text": DECISION_TEXT.get(decision, decision),
        }
        self._broadcast([outcome])

    def waiting(self) -> list[dict[str, Any]]:
        """The calls waiting now, as pages receive them."""
        with self._lock:
            return [w.call for w in self._waiting.values()]

    # -- the pages' side ------------------------------------------------------------

    def _open(self, comm: Any, msg: Any) -> None:
        comm.on_msg(lambda m: self._message(comm, m))
        comm.on_close(lambda _m: self._forget(comm))
        with self._lock:
            self._comms[comm.comm_id] = comm
        comm.send({"pending": self.waiting(), "decided": []})

    def _forget(self, comm: Any) -> None:
        with self._lock:
            self._comms.pop(comm.comm_id, None)

    def _message(self, comm: Any, msg: Any) -> None:
        data = msg.get("content", {}).get("data")
        if not isinstance(data, dict) or "decide" not in data:
            comm.send({"error": "Expected {decide: <id>, choice: <approve|deny|approve_all>}."})
            return
        pending_id, choice = data.get("decide"), data.get("choice")
        if choice not in _CHOICES:
            comm.send({"error": f"Unknown choice {choice!r}: one of {', '.join(_CHOICES)}."})
            return
        with self._lock:
            waiting = self._waiting.get(pending_id) if isinstance(pending_id, str) else None
        if waiting is None:
            # Decided already (another tab, the card) or never asked: nothing to do.
            comm.send({"pending": self.waiting(), "decided": []})
            return
        if choice == "always_allow" and not waiting.call["rule"]:
            comm.send({"error": "This call has no rule to always allow."})
            return
        waiting.decide(choice)

    def _broadcast(self, decided: list[dict[str, Any]]) -> None:
        with self._lock:
            comms = list(self._comms.values())
        message = {"pending": self.waiting(), "decided": decided}
        for comm in comms:
            comm.send(message)
