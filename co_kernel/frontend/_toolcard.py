"""Tool calls as persistent MIME bundles.

Each call is one output with three representations: ``application/vnd.co.tool-call+json``
for the JupyterLab extension, ``text/html`` with ``<details>`` that reads well in any
frontend and in a saved notebook, and ``text/plain`` for consoles. The decision on an
approval is written into all three, so nothing depends on live widget state.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, cast

from ..permissions import RECORDED, normalise_args
from ..turn import ToolCallView, ToolResultView
from ._controls import hidden_characters, hidden_warning, mark_hidden

__all__ = [
    "MIME_TOOL_CALL",
    "args_html",
    "diff_html",
    "format_args",
    "hidden_html",
    "short_args",
    "tool_call_bundle",
]

MIME_TOOL_CALL = "application/vnd.co.tool-call+json"
_RESULT_CAP = 20_000
_ICONS = {
    "running": "⏳",
    "waiting": "✋",
    "ok": "✅",
    "error": "⚠️",
    "denied": "🚫",
    "interrupted": "⏹",
}


_DIFF_LINE_STYLE = {
    "+": "background:rgba(46,160,67,.2);box-shadow:inset 3px 0 #2e9e44",
    "-": "background:rgba(248,81,73,.2);box-shadow:inset 3px 0 #d9534f",
    "@": "color:#0969da",
}


_UNIFIED_DIFF = re.compile(r"^@@ .* @@|^--- .*\n\+\+\+ ", re.MULTILINE)
"""Hunk or file headers: what makes a detail a unified diff (``isUnifiedDiff`` in cards/diff.ts)."""


def diff_html(detail: str) -> str:
    """A change as a ``<pre>``; a unified diff's added and removed lines tinted.

    Inline styles, so the colours hold in every frontend (the JupyterLab tool card draws
    the same tints from the theme, ``labextension/src/cards/diff.ts``). Other detail (a memory's
    new text, a message to send) stays plain text, as on that card.
    """
    # Hidden characters (bidi controls, zero-width, tags) are marked where they are.
    detail = mark_hidden(detail)
    if not _UNIFIED_DIFF.search(detail):
        return f"<pre>{html.escape(detail)}</pre>"
    lines: list[str] = []
    for line in detail.rstrip("\n").split("\n"):
        header = line.startswith(("+++ ", "--- "))
        style = "font-weight:600" if header else _DIFF_LINE_STYLE.get(line[:1], "")
        lines.append(
            f'<span style="display:block;padding:0 4px;{style}">{html.escape(line) or " "}</span>'
        )
    return f"<pre style='margin:2px 0'>{''.join(lines)}</pre>"


def args_html(args: dict[str, Any] | str | None) -> str:
    """The arguments pretty-printed for a card's ``<pre>``: escaped, hidden characters marked."""
    return html.escape(mark_hidden(format_args(args)))


def hidden_found(call: ToolCallView) -> list[str]:
    """The hidden characters in a call's arguments and change (``hidden_characters``)."""
    return hidden_characters(format_args(call.args) + "\n" + (call.detail or ""))


def hidden_html(call: ToolCallView) -> str:
    """A card's warning about hidden characters in the call; "" when it has none."""
    warning = hidden_warning(hidden_found(call))
    if not warning:
        return ""
    return (
        '<div class="co-hidden-warning" style="color:#b35900;font-weight:600;margin:2px 0">'
        f"{html.escape(warning)}</div>"
    )


def _marked(value: Any) -> Any:
    """``value`` with every string in it marked (``mark_hidden``), for the extension's card."""
    if isinstance(value, str):
        return mark_hidden(value)
    if isinstance(value, dict):
        return {k: _marked(v) for k, v in cast(dict[str, Any], value).items()}
    if isinstance(value, list):
        return [_marked(v) for v in cast(list[Any], value)]
    return value


def format_args(args: dict[str, Any] | str | None) -> str:
    """Arguments pretty-printed, whatever form they arrived in."""
    value = normalise_args(args)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def short_args(args: dict[str, Any] | str | None, limit: int = 60) -> str:
    value = normalise_args(args)
    parts: list[str] = []
    for key, val in value.items():
        text = val if isinstance(val, str) else json.dumps(val, ensure_ascii=False, default=str)
        text = text.replace("\n", " ")
        parts.append(f"{key}={text!r}" if isinstance(val, str) else f"{key}={text}")
    joined = ", ".join(parts)
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def _result_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):
        # A result with images beside it (run_python): the images are drawn in the cell
        # and described in the result's text; the card shows the text.
        data = [item for item in cast(list[Any], content) if not hasattr(item, "media_type")]
        content = data[0] if len(data) == 1 else data
    if isinstance(content, dict) and isinstance(cast(dict[str, Any], content).get("display"), str):
        # Tools return {"display": ..., ...}: the display text is what a person reads.
        content = cast(dict[str, Any], content)["display"]
    if isinstance(content, str):
        text = content
    else:
        text = json.dumps(content, indent=2, ensure_ascii=False, default=str)
    if len(text) > _RESULT_CAP:
        text = text[:_RESULT_CAP] + f"\n… ({len(text) - _RESULT_CAP:,} more characters)"
    return text


def _change_title(status: str) -> str:
    """What a card calls the call's change: after a denial nothing changed (the twin of
    ``changeTitle`` in ``labextension/src/cards/toolcard.ts``)."""
    return "Proposed change, not applied" if status in ("denied", "interrupted") else "Change"


def tool_call_bundle(
    call: ToolCallView,
    result: ToolResultView | None = None,
    *,
    state: str | None = None,
    decision: str | None = None,
) -> dict[str, Any]:
    """The MIME bundle for a tool call in its current state."""
    status = state or (result.status if result else "running")
    decision = decision or (result.decision if result else None) or call.decision
    duration = result.duration if result else None
    # The extension draws the card from this payload: the arguments and the change with
    # hidden characters marked, and which ones they were.
    hidden = hidden_found(call)
    args = normalise_args(call.args)
    payload = {
        "call_id": call.call_id,
        "tool": call.name,
        "args": _marked(args),
        "status": status,
        "decision": decision,
        "duration": round(duration, 3) if duration is not None else None,
        "result": _result_text(result.content) if result else None,
        "detail": mark_hidden(call.detail) if call.detail else call.detail,
        "needs_approval": call.needs_approval,
    }
    if len(args) > 1:
        # A saved notebook sorts an output's keys: the page restores the model's order.
        payload["arg_order"] = list(args)
    if hidden:
        payload["hidden"] = hidden
    if call.agent:
        # Only a subagent's calls say whose they are; Co's own cards stay as they were.
        payload["agent"] = call.agent
    shown_status = "waiting for approval" if status == "waiting" else status
    who = f"{call.agent} › " if call.agent else ""
    summary_bits = [
        f"{_ICONS.get(status, '•')} {who}{call.name}({short_args(call.args)})",
        shown_status,
    ]
    if decision and decision != status:
        # A decision a replay took from its script says so in words: no person made it.
        recorded = decision.endswith(RECORDED)
        summary_bits.append(
            decision.removesuffix(RECORDED) + " (recorded decision)" if recorded else decision
        )
    if duration is not None:
        summary_bits.append(f"{duration:.2f}s")
    summary = " · ".join(summary_bits)
    body = [hidden_html(call), f"<b>Arguments</b><pre>{args_html(call.args)}</pre>"]
    if call.detail:
        body.append(f"<b>{_change_title(status)}</b>{diff_html(call.detail)}")
    if result is not None:
        body.append(f"<b>Result</b><pre>{html.escape(_result_text(result.content))}</pre>")
    html_text = (
        f'<details class="co-tool-call" data-status="{status}" '
        f'data-decision="{html.escape(decision or "")}">'
        f"<summary>{html.escape(summary)}</summary>{''.join(body)}</details>"
    )
    return {
        MIME_TOOL_CALL: payload,
        "text/html": html_text,
        "text/plain": summary,
    }
