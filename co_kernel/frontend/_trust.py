"""Asking the person whether to trust the notebook's folder (``config._trust``).

The question is worded from the folder's files, which are untrusted text: every line is
Markdown rendered through ``_safe_html`` (nothing in it can run or style the card), and
the card answers only a person, exactly as an approval card does:

- notebook: a card with **Trust folder** / **Not now**. It carries the approval card's
  classes and waits in ``PendingApprovals`` like a call, so the extension answers a real
  click through the ``co.approvals`` comm and a scripted click decides nothing
  (``WidgetApprover`` explains why); other tabs list it with the waiting calls;
- console: ``Trust this folder? [y]es / [n]o``;
- headless runs (nbclient, papermill) are never asked: the notice says how to trust.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from typing import Any

from ..permissions import APPROVED, DENIED
from ..turn import ApprovalDecision, ApprovalRequest, ToolCallView
from ._base import wait_for_answer
from ._controls import mark_hidden, terminal_safe
from ._pending import PendingApprovals
from ._publisher import OUTPUT_TAG, Publisher
from ._safe_html import markdown_to_html
from ._stdin import KernelStdin
from ._widgets import CARD_CLASS, card_box, choice_buttons, decide_card

__all__ = ["TRUST_BUTTONS", "TRUST_TOOL", "TrustCard", "ask_trust_stdin", "ask_trust_widget"]

log = logging.getLogger(__name__)

TRUST_TOOL = "trust this folder"
"""How the question is listed among waiting calls (the extension's panel, other tabs)."""
TRUST_BUTTONS: tuple[tuple[str, ApprovalDecision, str, str], ...] = (
    ("Trust folder", "approve", "success", "Let this folder's settings and files act from now on"),
    ("Not now", "deny", "", "Keep them off; Co goes on with your own settings"),
)
"""(label, decision, button style, tooltip): the extension maps labels to choices."""
_PROMPT = "Trust this folder? [y]es / [n]o: "
_TRUSTED = ("✅ Folder trusted", "its `.co/` settings and files apply from now on")
_NOT_NOW = ("Not trusted", "Co goes on with your own settings; `%trust` when you are ready")


class TrustCard:
    """The widgets of one trust question and its answer (an approval card's shape)."""

    def __init__(
        self, notice: str, on_choice: Callable[[ApprovalDecision], None], pending_id: str
    ) -> None:
        import ipywidgets as w  # pyright: ignore[reportMissingTypeStubs]  # ships no types

        self.notice = notice
        self.decision: str | None = None
        self.buttons: list[Any] = choice_buttons(TRUST_BUTTONS, on_choice)
        self.box = card_box(
            "✋ Trust this folder?",
            [w.HTML(markdown_to_html(notice))],
            self.buttons,
            [CARD_CLASS, f"{CARD_CLASS}-{pending_id}"],
        )

    def finish(self, trusted: bool) -> None:
        """Turn the card into the record of the answer: one line, no buttons."""
        self.decision = "trusted" if trusted else "not trusted"
        verdict, about = _TRUSTED if trusted else _NOT_NOW
        decide_card(self.box, verdict, markdown_to_html(about), APPROVED if trusted else DENIED)

    def bundle(self) -> dict[str, Any]:
        bundle = self.box._repr_mimebundle_()
        assert bundle is not None  # a Box always has a widget view
        data: dict[str, Any] = dict(bundle)
        if self.decision is None:
            data["text/plain"] = f"{self.notice}\n\nDecision: waiting"
            data["text/html"] = markdown_to_html(f"{self.notice}\n\n**Decision: waiting**")
        else:
            verdict, about = _TRUSTED if self.decision == "trusted" else _NOT_NOW
            data["text/plain"] = f"{verdict} — {about}"
            data["text/html"] = markdown_to_html(f"**{verdict}** — {about}")
        return data

    def metadata(self) -> dict[str, Any]:
        return {OUTPUT_TAG: {"trust": self.decision or "waiting"}}


def _request(notice: str, folder: str, timeout: float | None) -> ApprovalRequest:
    call = ToolCallView(
        call_id=f"trust-{uuid.uuid4().hex[:8]}",
        name=TRUST_TOOL,
        args={"folder": folder},
        needs_approval=True,
        detail=notice,
    )
    return ApprovalRequest(call, timeout=timeout)


async def ask_trust_widget(
    publisher: Publisher,
    pending: PendingApprovals | None,
    notice: str,
    *,
    folder: str,
    timeout: float | None,
) -> bool:
    """Show the card in the running cell and wait; whether the person trusted the folder."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[ApprovalDecision] = loop.create_future()

    def on_choice(choice: ApprovalDecision) -> None:
        with contextlib.suppress(RuntimeError):  # the cell's loop has gone
            loop.call_soon_threadsafe(_settle, answer, choice)

    def on_button(choice: ApprovalDecision) -> None:
        if pending is not None and pending.extension_connected():
            log.info("ignored a widget click on the trust card: the extension decides")
            return
        on_choice(choice)

    display_id = uuid.uuid4().hex
    card = TrustCard(notice, on_button, display_id)
    publisher.display(card.bundle(), card.metadata(), display_id=display_id)
    if pending is not None:
        card_output = {"data": card.bundle(), "metadata": card.metadata()}
        pending.add(display_id, _request(notice, folder, timeout), on_choice, card=card_output)
    trusted = False  # also when interrupted
    try:
        choice = await wait_for_answer(answer, timeout)
        trusted = choice in ("approve", "approve_all")
    finally:
        card.finish(trusted)
        publisher.display(card.bundle(), card.metadata(), display_id=display_id, update=True)
        if pending is not None:
            pending.settle(display_id, "approved" if trusted else "denied")
    return trusted


def _settle(future: asyncio.Future[ApprovalDecision], choice: ApprovalDecision) -> None:
    if not future.done():
        future.set_result(choice)


async def ask_trust_stdin(
    stdin: KernelStdin, publisher: Publisher, notice: str, *, timeout: float | None
) -> bool:
    """Print the question and read ``y`` / ``n`` on the console."""
    # The notice names the folder's files: shown, not obeyed, and nothing in it styled
    # like the question's marker; the question then starts on a plain line of its own.
    shown = mark_hidden(terminal_safe(notice.rstrip("\n"), keep_sgr=False))
    publisher.stream("stdout", f"\x1b[0m{shown}\n")
    publisher.flush()

    async def ask() -> ApprovalDecision:
        for _ in range(3):
            text = (await stdin.ask(_PROMPT)).strip().lower()
            if text in ("y", "yes"):
                return "approve"
            if text in ("n", "no", "\x04", ""):
                return "deny"
            publisher.stream("stdout", "Please answer y (yes) or n (no).\n")
            publisher.flush()
        return "deny"

    trusted = await wait_for_answer(ask(), timeout) == "approve"
    verdict, about = _TRUSTED if trusted else _NOT_NOW
    publisher.stream("stdout", f"{verdict}: {about}\n")
    publisher.flush()
    return trusted
