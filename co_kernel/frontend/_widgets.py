"""JupyterLab approvals: an ipywidgets card with Approve / Deny / Approve all / Always allow.

The cell keeps running while the card waits. ipykernel>=7.4 dispatches comm messages
while the cell holds the shell lock, so the turn simply awaits an asyncio future that the
button handler resolves. JupyterLab 4.6 may send widget messages on a kernel subshell,
whose handler runs on another thread: the handler therefore only hands the answer to the
turn's loop with ``call_soon_threadsafe``; every widget change happens on that loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

from ..permissions import INTERRUPTED, decision_label
from ..turn import ApprovalDecision, ApprovalRequest, ToolCallView
from ._base import DECISION_TEXT, approval_text, wait_for_answer
from ._decisions import ACCENTS, CHOICES, verdict_tone
from ._pending import PendingApprovals
from ._publisher import OUTPUT_TAG, Publisher
from ._toolcard import args_html, diff_html, hidden_html

__all__ = [
    "BUTTONS",
    "CARD_CLASS",
    "PART_TOGGLE_CLASS",
    "ApprovalCard",
    "WidgetApprover",
    "card_box",
    "choice_buttons",
    "decide_card",
]

log = logging.getLogger(__name__)

BUTTONS: tuple[tuple[str, ApprovalDecision, str, str], ...] = tuple(
    (c.label, c.decision, c.tone, c.tooltip) for c in CHOICES
)
"""(label, decision, button style, tooltip) of each button, in order (``_decisions``: the
tones are ipywidgets' button styles)."""
_RULE_SHOWN = 48
"""Characters of the proposed rule on the "Always allow" button (the tooltip has it all)."""

CARD_CLASS = "co-approval-card"
"""Class of the card's box; with ``-<pending id>`` it names the question (labextension)."""

_CARD_CSS = "padding: 2px 8px; margin: 4px 0"

PART_TOGGLE_CLASS = "co-part-toggle"
"""Class of a cell's accept/reject control on a card that offers a choice per cell
(``labextension/src/approvals/parts.ts`` reads a real click on it, nothing else does)."""


def _who(call: ToolCallView) -> str:
    return f"Co's subagent <code>{html.escape(call.agent)}</code>" if call.agent else "Co"


def _settle(future: asyncio.Future[ApprovalDecision], choice: ApprovalDecision) -> None:
    if not future.done():  # a second click, or a click racing the timeout, is ignored
        future.set_result(choice)


def card_box(title: str, body: list[Any], buttons: list[Any], classes: list[str]) -> Any:
    """A card: a bold title (HTML), its body widgets, a row of buttons and a status line.

    ``classes`` name the card's box for the extension (``CARD_CLASS``). Returns the box;
    its children are ``[title, *body, buttons row, status]``, in that order.
    """
    import ipywidgets as w  # pyright: ignore[reportMissingTypeStubs]  # ships no types

    parts: list[Any] = [w.HTML(f"<b>{title}</b>"), *body]
    parts += [w.HBox(buttons), w.HTML("<i>Waiting for your decision…</i>")]
    return w.VBox(parts, layout=w.Layout(border_left=_accent(None)), _dom_classes=classes)


def choice_buttons(
    specs: tuple[tuple[str, ApprovalDecision, str, str], ...],
    on_choice: Callable[[ApprovalDecision], None],
) -> list[Any]:
    """One button per (label, decision, style, tooltip), each calling ``on_choice``."""
    import ipywidgets as w  # pyright: ignore[reportMissingTypeStubs]  # ships no types

    buttons: list[Any] = []
    for label, choice, style, tooltip in specs:
        button: Any = w.Button(description=label, button_style=style, tooltip=tooltip)

        def clicked(_button: Any, chosen: ApprovalDecision = choice) -> None:
            on_choice(chosen)

        button.on_click(clicked)
        buttons.append(button)
    return buttons


def decide_card(box: Any, verdict: str, about: str, decision: str) -> None:
    """Turn a card made by ``card_box`` into the record of its decision.

    One line remains, ``verdict`` (bold) — ``about`` (both HTML); the body, the buttons
    and the status line go (the tool card keeps the arguments and the change). The
    border takes the tone of ``decision`` (a decision label).
    """
    title = box.children[0]
    title.value = f"<b>{verdict}</b> — {about}"
    box.children = (title,)
    box.layout.border_left = _accent(decision)


def _accent(decision: str | None) -> str:
    """The card's left border: orange while it waits, then its verdict's tone."""
    return f"3px solid {ACCENTS[verdict_tone(decision) if decision else 'warning']}"


class ApprovalCard:
    """The widgets of one approval question and the record of its answer."""

    def __init__(
        self,
        call: ToolCallView,
        on_choice: Callable[[ApprovalDecision], None],
        rule: str | None = None,
        pending_id: str | None = None,
        choose_parts: bool = False,
    ) -> None:
        """``rule``: the session rule "Always allow" adds; without it, no such button.

        ``pending_id``: the question's id on the ``co.approvals`` comm, put in the card's
        classes so the extension answers a click on it through the comm.

        ``choose_parts``: a call with several cells (``call.parts``) shows each cell's diff
        with an accept/reject control. Only Co's extension reads those controls (a real
        click, sent with the Approve click over the comm), so without it the card shows the
        whole change and says it is applied all or nothing.
        """
        import ipywidgets as w  # pyright: ignore[reportMissingTypeStubs]  # ships no types

        self.call = call
        self.decision: str | None = None
        self.verdict = ""
        """How the decision reads on the card (set with it)."""
        body: list[Any] = [w.HTML(f"<pre style='margin:2px 0'>{args_html(call.args)}</pre>")]
        warning = hidden_html(call)
        if warning:  # above the arguments: read before anything else on the card
            body.insert(0, w.HTML(warning))
        if call.parts and choose_parts:
            body += [w.HTML(_part_html(i, len(call.parts), p)) for i, p in enumerate(call.parts)]
        elif call.detail:
            together = (
                f"<i>All {len(call.parts)} cells are applied together (choosing cells one by "
                "one needs Co's JupyterLab extension).</i>"
                if call.parts
                else ""
            )
            body.append(
                w.HTML(
                    f"<details open><summary>Change</summary>{diff_html(call.detail)}"
                    f"{together}</details>"
                )
            )
        self.buttons: list[Any] = choice_buttons(BUTTONS, on_choice)
        if rule:
            shown = rule if len(rule) <= _RULE_SHOWN else rule[: _RULE_SHOWN - 1] + "…"
            button: Any = w.Button(
                description=f"Always allow {shown}",
                tooltip=f"Run this call, and without asking every call matching {rule} "
                "for the rest of the session (%permissions lists it)",
                layout=w.Layout(width="auto"),
            )

            def always(_button: Any) -> None:
                on_choice("always_allow")

            button.on_click(always)
            self.buttons.append(button)
        classes = [CARD_CLASS, f"{CARD_CLASS}-{pending_id}"] if pending_id else [CARD_CLASS]
        self.box = card_box(
            f"✋ {_who(call)} wants to run <code>{html.escape(call.name)}</code> "
            "— approve it to continue.",
            body,
            self.buttons,
            classes,
        )

    def finish(self, decision: str, chosen: str = "") -> None:
        """Make the card the record of ``decision``: what was decided, no buttons.

        ``chosen``: the verdict instead, when the person took some of the cells.
        """
        self.decision = decision
        self.verdict = chosen or DECISION_TEXT.get(decision, decision)
        for button in self.buttons:
            button.disabled = True  # a click racing the update decides nothing
        verdict = html.escape(self.verdict)
        decide_card(
            self.box,
            verdict,
            f"{_who(self.call)} asked to run <code>{html.escape(self.call.name)}</code>",
            decision,
        )

    def metadata(self) -> dict[str, Any]:
        """Marks the output as an approval card, waiting or decided.

        A page whose kernel restarted draws a waiting card as cancelled and a decided
        one without its widget view (its widgets died with the kernel).
        """
        return {OUTPUT_TAG: {"approval": self.decision or "waiting"}}

    def bundle(self) -> dict[str, Any]:
        """The widget view plus fallbacks that carry the decision without widget state."""
        bundle = self.box._repr_mimebundle_()
        assert bundle is not None  # a Box always has a widget view
        data: dict[str, Any] = dict(bundle)
        question = approval_text(self.call)
        verdict = self.verdict if self.decision else "waiting"
        data["text/plain"] = f"{question}Decision: {verdict}"
        # The card where its widget is not drawn (an untrusted page: a second tab, a
        # reload) or kept (a saved notebook elsewhere): the same card, without buttons.
        accent = _accent(self.decision)
        if self.decision:
            shown = (
                f"<b>{html.escape(verdict)}</b> — {_who(self.call)} asked to run "
                f"<code>{html.escape(self.call.name)}</code>"
            )
        else:
            asked = f"✋ {_who(self.call)} wants to run <code>{html.escape(self.call.name)}</code>"
            shown = f"<b>{asked}</b>{hidden_html(self.call)}<pre>{args_html(self.call.args)}</pre>"
            if self.call.detail:
                shown += diff_html(self.call.detail)
            shown += "<i>Waiting for a decision (Co's status item answers it).</i>"
        data["text/html"] = (
            f'<div class="co-approval" data-decision="{html.escape(self.decision or "")}" '
            f'style="border-left: {accent}; {_CARD_CSS}">{shown}</div>'
        )
        return data


class WidgetApprover:
    """Asks in the running cell with an ``ApprovalCard``; an ``Approver``."""

    def __init__(self, publisher: Publisher, pending: PendingApprovals | None = None) -> None:
        """``pending``: where pages that lack the card (a reload, a second tab) find it."""
        self._pub = publisher
        self._pending = pending
        self.cards: list[ApprovalCard] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[ApprovalDecision] = loop.create_future()

        def on_choice(choice: ApprovalDecision) -> None:
            # May run on a subshell thread: hand the answer over, touch nothing else.
            # A click on a card whose loop has gone (a stale output) has nobody to tell.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, answer, choice)

        def on_parts(choice: ApprovalDecision, accepted: list[int]) -> None:
            # Only from the ``co.approvals`` comm, i.e. the extension's record of the
            # person's real clicks on the cells' controls, sent with a real Approve click
            # (``labextension/src/approvals/parts.ts``). The controls are plain HTML: no widget
            # message carries a choice, so a script toggling them or sending widget
            # messages changes nothing that is applied. What it cannot stop: a script
            # that rewrites the card's text before the person clicks (it can rewrite any
            # of the page), or one that opens its own kernel connection (see on_button).
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle_parts, answer, request, choice, accepted)

        def on_button(choice: ApprovalDecision) -> None:
            # A decision needs a person. Any script in the page can send this
            # widget message (``button.click()``); Co's extension instead answers a click
            # on the card through the ``co.approvals`` comm, and only for a real gesture
            # (``event.isTrusted``). So while such a page is connected, the widget's own
            # message decides nothing. This stops a script that clicks or forges widget
            # events in the page; it cannot stop one that has the server's token and opens
            # a kernel connection of its own: that one can send anything a page can, which
            # is why no script may run from Co's outputs at all (``_safe_html``). Clients
            # without the extension (no comm) keep the widget buttons as their path.
            if self._pending is not None and self._pending.extension_connected():
                log.info("ignored a widget click on an approval card: the extension decides")
                return
            on_choice(choice)

        display_id = uuid.uuid4().hex
        # Cells are chosen one by one only where the extension carries the choice.
        choose = self._pending is not None and self._pending.extension_connected()
        card = ApprovalCard(
            request.call, on_button, request.rule, pending_id=display_id, choose_parts=choose
        )
        self.cards.append(card)
        self._pub.display(card.bundle(), card.metadata(), display_id=display_id)
        if self._pending is not None:
            self._pending.add(
                display_id,
                request,
                on_choice,
                on_parts if choose else None,
                card={"data": card.bundle(), "metadata": card.metadata()},
            )
        try:
            choice = await wait_for_answer(answer, request.timeout)
        except asyncio.CancelledError:
            self._finish(card, INTERRUPTED, display_id)
            raise
        self._finish(card, decision_label(choice), display_id, _chosen(request))
        return choice

    def _finish(self, card: ApprovalCard, decision: str, display_id: str, chosen: str = "") -> None:
        card.finish(decision, chosen)
        self._pub.display(card.bundle(), card.metadata(), display_id=display_id, update=True)
        if self._pending is not None:
            self._pending.settle(display_id, decision)


def _settle_parts(
    future: asyncio.Future[ApprovalDecision],
    request: ApprovalRequest,
    choice: ApprovalDecision,
    accepted: list[int],
) -> None:
    """An approval of some cells; every cell rejected is a denial."""
    if future.done():
        return
    request.accepted = accepted
    future.set_result(choice if accepted else "deny")


def _chosen(request: ApprovalRequest) -> str:
    """The verdict that says which cells went in, when the person chose some; else ""."""
    accepted, parts = request.accepted, request.call.parts or []
    if accepted is None or len(accepted) == len(parts):
        return ""
    if not accepted:
        return f"🚫 Nothing applied: all {len(parts)} cells rejected"
    which = "cell" if len(accepted) == 1 else "cells"
    shown = ", ".join(str(i + 1) for i in accepted)
    return f"✅ Applied {len(accepted)} of {len(parts)} cells ({which} {shown})"


_NEW_CELL = re.compile(r"^\+\+\+ new cell \d+ \(([^)]*)\)", re.MULTILINE)
_OLD_CELL = re.compile(r"^--- cell \d+ \(([^,)]*), id ([^)]*)\)\n\+\+\+ /dev/null", re.MULTILINE)
_KIND_NAMES = {"markdown": "Markdown", "python": "Python"}


def _part_title(diff: str) -> tuple[str, str]:
    """What one cell of a proposal does, and its diff without the file headers.

    The headers number the cell by where it lands in the notebook ("new cell 2"), beside
    the card's "cell 1 of 2": the card says it once, its own way ("new Markdown cell").
    """
    if found := _NEW_CELL.search(diff):
        what = f"new {_KIND_NAMES.get(found[1], found[1])} cell"
    elif found := _OLD_CELL.search(diff):
        what = f"delete the {_KIND_NAMES.get(found[1], found[1])} cell with id {found[2]}"
    else:
        return "", diff
    body = "".join(
        line for line in diff.splitlines(keepends=True) if not line.startswith(("--- ", "+++ "))
    )
    return what, body


def _part_html(index: int, total: int, diff: str) -> str:
    """One cell of a multi-cell proposal: its accept/reject control and its diff.

    The control is a plain button, not a widget: it sends nothing to the kernel. Co's
    extension turns a real click on it into a rejection it sends with the Approve click
    (and draws the label again from ``data-what``, ``labextension/src/approvals/parts.ts``).
    """
    what, body = _part_title(diff)
    label = f"cell {index + 1} of {total}" + (f": {what}" if what else "")
    return (
        f'<div class="co-part co-part-{index}" style="margin:4px 0">'
        f'<button type="button" class="{PART_TOGGLE_CLASS}" data-part="{index}" '
        f'data-parts="{total}" data-what="{html.escape(what)}" title="Click to reject or '
        f'accept this cell: Approve applies the cells accepted, Approve all every cell">'
        f"✓ Apply {html.escape(label)}</button>{diff_html(body)}</div>"
    )
