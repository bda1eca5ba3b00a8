"""The ``co.approvals`` comm: every waiting approval, for any page that connects.

A card lives in the output of the cell that asked; a reloaded page, a second tab or a
notebook that was never saved has no such output. The JupyterLab extension therefore
opens a comm with target ``co.approvals`` when it connects to a kernel. The kernel
answers with the calls waiting now and sends the list again after every change:

- kernel -> page: ``{"pending": [call, ...], "decided": [outcome, ...]}`` (the first
  message also ``"status"``: what ``kernel_info`` reports for the status item); a call is
  ``{id, call_id, tool, arguments, detail, agent, rule, output}`` (``arguments``
  pretty-printed, ``output`` the card as the cell shows it, an nbformat output tagged with
  its request, cell and display id, or null; everything redacted like the cell's
  outputs), an outcome ``{id, tool, decision, text}`` with the decision label and how
  the card words it. ``{"error": message}`` answers a
  message the kernel cannot read.
- page -> kernel: ``{"decide": id, "choice": "approve" | "deny" | "approve_all" |
  "always_allow", "reject"?: [part, ...]}``. It settles the same future as the card's
  buttons, so a call is decided once however many tabs (and the card) answer. ``reject``
  names the cells (from 0) the person rejected on a card that offers a choice per cell
  (``ToolCallView.parts``), with ``approve`` only; an approval without it takes every
  cell, as "Approve all" and "Always allow" always do. ``{"seen": true}``: the page
  is still open (the extension says so every few seconds while something waits).

Nothing waits forever unseen: once a page with the extension has connected, a call that
no page has watched for ``approval_timeout_unseen`` seconds (every tab closed or
reloaded without the extension) is denied as ``timed out``; its outcome carries the
``reason``, and every page that opens the comm receives it until one answers
``{"told": [id, ...]}`` (it showed it to the person). A kernel no such page ever
reached (another client) cannot tell who watches, so there it waits for a decision.

Comm messages may be handled on another thread than the turn's loop (a subshell), so
the registry is guarded by a lock and a decision reaches the turn only through the
thread-safe callback the approver registered.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast, get_args

from ..turn import ApprovalDecision, ApprovalRequest
from ._base import DECISION_TEXT
from ._controls import mark_hidden
from ._publisher import OUTPUT_TAG
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
    since: float
    """When it started waiting (``time.monotonic``): the asking page saw it then."""
    reason: str | None = None
    """Why the kernel decided it itself, when it did."""
    watchdog: asyncio.Task[None] | None = None
    """Denies it once no page has watched for ``unseen_timeout``."""
    choose: Callable[[ApprovalDecision, list[int]], None] | None = None
    """Hands an approval with the parts accepted, for a card that offers a choice per cell."""
    parts: int = 0
    """How many cells the card offers to choose from."""


class PendingApprovals:
    """The calls waiting for a decision now, and the pages (comms) that watch them."""

    def __init__(
        self,
        redact: Callable[[str], str],
        origin: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        """``origin``: where an output shown now belongs (``KernelPublisher.origin``)."""
        self._redact = redact
        self._origin = origin
        self._lock = threading.Lock()
        self._waiting: dict[str, _Waiting] = {}
        self._comms: dict[str, Any] = {}
        self.unseen_timeout: float | None = None
        """``approval_timeout_unseen``; the dispatcher sets it from the settings."""
        self._watched_at: float | None = None
        """When a page last opened the comm or said it is open; None: never."""
        self._missed: list[dict[str, Any]] = []
        """Outcomes of calls decided while no page watched, for the next page."""
        self.decided_from: Callable[[str], None] | None = None
        """Called with the client session (``header.session``: one page's kernel connection)
        of each decision a page sends, before the call goes on; the kernel sends the
        notebook edits that follow to that page (``NotebookPage.prefer``)."""
        self.status: Callable[[], dict[str, Any]] | None = None
        """Called as a page opens the comm; returns the kernel's status for Co's status item
        (``status.lab_status``). The kernel sets it: a page that connects while a cell runs gets no
        ``kernel_info_reply`` until the cell ends, so the comm's first message carries it."""

    def register(self, comm_manager: Any) -> None:
        """Answer the extension's ``co.approvals`` comms (the kernel's comm manager)."""
        comm_manager.register_target(APPROVALS_TARGET, self._open)

    # -- the approver's side ------------------------------------------------------

    def add(
        self,
        pending_id: str,
        request: ApprovalRequest,
        decide: Callable[[ApprovalDecision], None],
        choose: Callable[[ApprovalDecision, list[int]], None] | None = None,
        card: dict[str, Any] | None = None,
    ) -> None:
        """A call starts waiting; ``decide`` is how a page's answer reaches it, ``choose``
        how an approval of some of its cells does (a card with a choice per cell).

        ``card``: the ``data`` and ``metadata`` of the card shown in the cell (its display
        id is ``pending_id``). A page that does not show it (reloaded before the notebook
        was saved, a second tab) puts it into the cell the call came from.
        """
        call = request.call
        view = {
            "id": pending_id,
            "call_id": call.call_id,
            "tool": call.name,
            "arguments": self._redact(mark_hidden(format_args(call.args))),
            "detail": self._redact(mark_hidden(call.detail)) if call.detail else None,
            "agent": call.agent,
            "rule": self._redact(request.rule) if request.rule else None,
            "output": self._output(pending_id, card) if card is not None else None,
        }
        waiting = _Waiting(view, decide, time.monotonic())
        if choose is not None and call.parts:
            waiting.choose, waiting.parts = choose, len(call.parts)
        if self.unseen_timeout is not None:
            waiting.watchdog = asyncio.get_running_loop().create_task(
                self._deny_unseen(pending_id, self.unseen_timeout)
            )
        with self._lock:
            self._waiting[pending_id] = waiting
        self._broadcast([])

    def _output(self, pending_id: str, card: dict[str, Any]) -> dict[str, Any]:
        """The card as a notebook output, tagged as the cell's copy is, redacted like it."""
        tag = {**card.get("metadata", {}).get(OUTPUT_TAG, {})}
        tag.update(self._origin() if self._origin is not None else {}, display_id=pending_id)
        output = {
            "output_type": "display_data",
            "data": card.get("data", {}),
            "metadata": {**card.get("metadata", {}), OUTPUT_TAG: tag},
        }
        return cast(dict[str, Any], _redacted(output, self._redact))

    async def _deny_unseen(self, pending_id: str, timeout: float) -> None:
        while True:
            with self._lock:
                waiting, watched = self._waiting.get(pending_id), self._watched_at
            if waiting is None or watched is None:
                return  # decided, or no page with the extension ever came: can't tell
            remaining = max(waiting.since, watched) + timeout - time.monotonic()
            if remaining <= 0:
                waiting.reason = f"no open page showed it for {timeout:g} s"
                waiting.decide("timed_out")
                return
            await asyncio.sleep(remaining)

    def settle(self, pending_id: str, decision: str) -> None:
        """The call was decided (``decision`` is its card label) or its turn ended."""
        with self._lock:
            waiting = self._waiting.pop(pending_id, None)
        if waiting is None:
            return
        if waiting.watchdog is not None and waiting.watchdog is not asyncio.current_task():
            waiting.watchdog.cancel()
        outcome = {
            "id": pending_id,
            "tool": waiting.call["tool"],
            "decision": decision,
            "text": DECISION_TEXT.get(decision, decision),
            "reason": waiting.reason,
        }
        if waiting.reason:
            with self._lock:
                self._missed.append(outcome)
        self._broadcast([outcome])

    def extension_connected(self) -> bool:
        """Whether a page with Co's extension has the comm open now.

        Then a decision is taken only from the comm, since it needs a person: the extension
        sends one only for a real click or key press (``event.isTrusted``), while the widget
        card's own button messages also come from a script's ``button.click()``.
        """
        with self._lock:
            return bool(self._comms)

    def waiting(self) -> list[dict[str, Any]]:
        """The calls waiting now, as pages receive them."""
        with self._lock:
            return [w.call for w in self._waiting.values()]

    # -- the pages' side ------------------------------------------------------------

    def _open(self, comm: Any, msg: Any) -> None:
        def on_msg(m: Any) -> None:
            self._message(comm, m)

        def on_close(_m: Any) -> None:
            self._forget(comm)

        comm.on_msg(on_msg)
        comm.on_close(on_close)
        with self._lock:
            self._comms[comm.comm_id] = comm
            self._watched_at = time.monotonic()
            missed = list(self._missed)
        opened: dict[str, Any] = {"pending": self.waiting(), "decided": missed}
        if self.status is not None:
            opened["status"] = self.status()
        comm.send(opened)

    def _forget(self, comm: Any) -> None:
        with self._lock:
            self._comms.pop(comm.comm_id, None)

    def _message(self, comm: Any, msg: Any) -> None:
        sent: object = msg.get("content", {}).get("data")
        data = cast(dict[str, Any], sent) if isinstance(sent, dict) else None
        with self._lock:
            self._watched_at = time.monotonic()
        if data is not None and data.get("seen") is True:
            return
        if data is not None and isinstance(data.get("told"), list):
            with self._lock:
                self._missed = [o for o in self._missed if o["id"] not in data["told"]]
            return
        if data is None or "decide" not in data:
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
        decision = cast(ApprovalDecision, choice)  # checked against _CHOICES above
        accepted = None
        if "reject" in data and choice == "approve":  # Approve all takes the whole call
            accepted = _accepted(data["reject"], waiting.parts)
            if accepted is None or waiting.choose is None:
                comm.send({"error": "reject names no cell of this call's card."})
                return
        client = msg.get("header", {}).get("session")
        if self.decided_from is not None and isinstance(client, str) and client:
            self.decided_from(client)
        if accepted is not None and waiting.choose is not None:
            waiting.choose(decision, accepted)
        else:
            waiting.decide(decision)

    def _broadcast(self, decided: list[dict[str, Any]]) -> None:
        with self._lock:
            comms = list(self._comms.values())
        message = {"pending": self.waiting(), "decided": decided}
        for comm in comms:
            comm.send(message)


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with every string in it redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redacted(v, redact) for k, v in cast(dict[str, Any], value).items()}
    if isinstance(value, list):
        return [_redacted(v, redact) for v in cast(list[Any], value)]
    return value


def _accepted(reject: Any, parts: int) -> list[int] | None:
    """The parts left accepted once ``reject`` (a page's list of parts) is taken out; None
    when it names anything but parts of the card."""
    if not isinstance(reject, list):
        return None
    rejected: set[int] = set()
    for part in cast(list[Any], reject):
        if not isinstance(part, int) or isinstance(part, bool) or not 0 <= part < parts:
            return None
        rejected.add(part)
    return [i for i in range(parts) if i not in rejected]
