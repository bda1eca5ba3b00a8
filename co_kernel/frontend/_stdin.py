"""Console approvals: a stdin ``input_request`` answered with y / n / a / w (always allow).

ipykernel's ``raw_input`` polls the stdin socket in a loop that holds the event loop, so
nothing else runs (no interrupt-as-cancel, no timeout) until the person answers. This
module speaks the same protocol (ipykernel 7.4 ``Kernel._input_request``: purge stale
replies, send ``input_request`` to the shell request's identity, read ``input_reply``)
but awaits the socket through ``zmq.asyncio``, so waiting is cancellable.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from ..turn import ApprovalDecision, ApprovalRequest
from ._base import parse_answer, wait_for_answer
from ._controls import mark_hidden, terminal_safe
from ._decisions import CHOICES
from ._publisher import Publisher

__all__ = ["PROMPT", "QUESTION_MARK", "KernelStdin", "StdinApprover"]

log = logging.getLogger(__name__)

PROMPT = "Decide: " + " / ".join(f"[{c.key}] {c.label}" for c in CHOICES) + ": "
"""The console's question, in the words of the card's buttons (``_decisions``)."""
QUESTION_MARK = "\x1b[0m\x1b[7m Co \x1b[0m "
"""What every question Co asks on the console starts with: a reset (no style left open by
the text above can hide the question) and " Co " in reverse video. Outside text reaches the
terminal through ``terminal_safe``, which shows reverse video instead of obeying it, and
jupyter console prints an input request's prompt as it is: so only Co can draw this."""
_EOF = "\x04"
_POLL_MS = 250  # re-check now and then in case an edge-triggered wake-up was missed
_MAX_TRIES = 3
_ALWAYS = ("w", "always")


class KernelStdin:
    """Input requests on a running ipykernel's stdin channel, awaited without blocking."""

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel

    async def ask(self, prompt: str, *, password: bool = False) -> str:
        """Send one ``input_request`` for the current cell; return the typed value."""
        import zmq
        import zmq.asyncio

        kernel = self._kernel
        sock = kernel.stdin_socket
        session = kernel.session
        # The cell's task runs in the execute_request's context, so these are that
        # request's routing identity and header (what raw_input would use).
        ident = kernel._parent_ident["shell"]
        parent = kernel.get_parent("shell")
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        self._purge(sock)
        content = {"prompt": QUESTION_MARK + prompt, "password": password}
        session.send(sock, "input_request", content, parent, ident=ident)
        poller = zmq.asyncio.Poller()
        poller.register(sock, zmq.POLLIN)
        while True:
            await poller.poll(timeout=_POLL_MS)
            while True:
                try:
                    _, reply = session.recv(sock, mode=zmq.NOBLOCK)
                except Exception:
                    log.warning("invalid message on the stdin channel", exc_info=True)
                    continue
                if reply is None:
                    break
                if reply["header"].get("msg_type") == "input_reply":
                    value = reply["content"].get("value", "")
                    return value if isinstance(value, str) else str(value)

    @staticmethod
    def _purge(sock: Any) -> None:
        """Drop replies to earlier requests (e.g. one answered after an interrupt)."""
        import zmq

        while True:
            try:
                sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return


class StdinApprover:
    """Asks ``[y/n/a]`` on the console; an ``Approver``."""

    def __init__(self, stdin: KernelStdin, publisher: Publisher) -> None:
        self._stdin = stdin
        self._pub = publisher

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        return await wait_for_answer(self._ask(request.rule), request.timeout)

    async def _ask(self, rule: str | None) -> ApprovalDecision:
        prompt = PROMPT if not rule else PROMPT[:-2] + f" / [w] Always allow {rule}: "
        # A rule is built from the call's arguments: shown, not obeyed, like them.
        prompt = mark_hidden(terminal_safe(prompt, keep_sgr=False))
        for _ in range(_MAX_TRIES):
            text = await self._stdin.ask(prompt)
            if text == _EOF:  # Ctrl-D: no
                return "deny"
            if rule and text.strip().lower() in _ALWAYS:
                return "always_allow"
            choice = parse_answer(text)
            if choice is not None:
                return choice
            keys = ", ".join(f"{c.key} ({c.label})" for c in CHOICES)
            also = " w (Always allow) adds the rule." if rule else ""
            self._pub.stream("stdout", f"Please answer {keys}.{also}\n")
            self._pub.flush()
        return "deny"
