"""``co-kernel traces``: a static, self-contained HTML file with the span tree of each turn.

Per turn: a header (session, model, tokens, cost, requests, duration, status), the prompt when
content tracing is on, the tool calls with their decisions (from the audit events on the
spans), and the span tree as nested lists whose rows carry a waterfall bar positioned
by start time and duration within the turn. Everything comes from the database, already
redacted; the page has no scripts and loads nothing.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ._spans import SpanRow, read_spans

__all__ = ["TurnTrace", "collect_turns", "render_traces", "write_traces"]

_DETAIL_CHARS = 2000

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em;color:#222;
background:#fafafa}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:0 0 .3em}
.meta,.summary{color:#666;margin:.2em 0 .6em}
section.turn{background:#fff;border:1px solid #ddd;border-radius:6px;padding:1em 1.2em;
margin:1.2em 0}
section.turn.error{border-left:4px solid #c33}
blockquote.prompt{margin:.4em 0 .8em;padding:.4em .8em;border-left:3px solid #9cf;
background:#f4f9ff;white-space:pre-wrap}
ul.tree,ul.tree ul{list-style:none;margin:0;padding:0}
.row{display:grid;grid-template-columns:minmax(14em,26em) 1fr 6.5em 9em;gap:.6em;
align-items:center;padding:1px 0}
.row:hover{background:#f2f2f2}
.name{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-family:ui-monospace,monospace;
font-size:.92em}
.kind{display:inline-block;min-width:3.6em;font-size:.75em;color:#fff;border-radius:3px;
padding:0 .3em;margin-right:.4em;text-align:center}
.kind-turn>.row .kind{background:#0a7f8f}.kind-agent>.row .kind{background:#3b6fd1}
.kind-model>.row .kind{background:#9b3bd1}.kind-tool>.row .kind{background:#c98a00}
.kind-other>.row .kind{background:#888}
.track{position:relative;height:.9em;background:#eee;border-radius:2px}
.bar{position:absolute;top:0;bottom:0;border-radius:2px;min-width:2px;background:#7aa7e8}
.kind-turn>.row .bar{background:#0a7f8f}.kind-model>.row .bar{background:#b57ee0}
.kind-tool>.row .bar{background:#e0b040}
.status-ERROR>.row .bar{background:#d44}
.dur,.tokens{text-align:right;font-variant-numeric:tabular-nums;color:#444;font-size:.9em}
details.attrs{margin:0 0 .3em;font-size:.85em;color:#444}
details.attrs dl{display:grid;grid-template-columns:max-content 1fr;gap:.1em .8em;margin:.3em 0}
details.attrs dt{color:#777}details.attrs dd{margin:0;white-space:pre-wrap;word-break:break-word;
font-family:ui-monospace,monospace}
table.calls{border-collapse:collapse;margin:.3em 0 .8em;font-size:.9em}
table.calls th,table.calls td{border-bottom:1px solid #eee;padding:.15em .6em;text-align:left}
.decision-denied,.decision-scope-refused,.decision-policy-denied,.decision-rate-limited,
.decision-timed-out,.decision-interrupted{color:#b00;font-weight:600}
.error-text{color:#b00}
"""


@dataclass
class TurnTrace:
    """One turn's spans, as a tree."""

    root: SpanRow
    """The turn span."""
    children: dict[str, list[SpanRow]] = field(default_factory=dict)
    """span_id -> child spans in start order."""
    spans: list[SpanRow] = field(default_factory=list)
    """Every span of the turn, the root included."""

    @property
    def audits(self) -> list[dict[str, Any]]:
        """Audit events recorded on any span of the turn, in time order."""
        found = [
            e
            for span in self.spans
            for e in span.events
            if e.get("name") == "co.audit" and isinstance(e.get("attributes"), dict)
        ]
        return sorted(found, key=lambda e: e.get("time_ns", 0))


def collect_turns(
    db_path: Path, *, session_id: str | None = None, limit: int = 50
) -> list[TurnTrace]:
    """The last ``limit`` turns (of one session, or all), oldest first, with their spans."""
    roots = read_spans(db_path, session_id=session_id, kind="turn", limit=limit, newest=True)
    if not roots:
        return []
    spans = read_spans(db_path, trace_ids=[r.trace_id for r in roots])
    by_trace: dict[str, list[SpanRow]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    turns = []
    for root in roots:
        members = sorted(by_trace[root.trace_id], key=lambda s: (s.start_ns, s.id))
        ids = {s.span_id for s in members}
        children: dict[str, list[SpanRow]] = defaultdict(list)
        for span in members:
            if span.span_id == root.span_id:
                continue
            # A span whose parent was not stored still belongs to the turn.
            parent = span.parent_id if span.parent_id in ids else root.span_id
            children[parent].append(span)
        turns.append(TurnTrace(root, dict(children), members))
    return turns


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _clock(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")


def _tokens(span: SpanRow) -> str:
    if span.input_tokens is None and span.output_tokens is None:
        return ""
    return f"{span.input_tokens or 0:,} → {span.output_tokens or 0:,}"


def _cost(span: SpanRow) -> str:
    """``$0.0123 · `` for a turn Co priced (or "price unknown · "), else nothing."""
    cost = span.cost
    return "" if cost is None else f"{cost} · "


def _details(span: SpanRow) -> list[tuple[str, str]]:
    attrs = span.attributes
    rows: list[tuple[str, str]] = []
    if span.model:
        rows.append(("model", span.model))
    if span.tool:
        rows.append(("tool", span.tool))
    for key, label in (
        ("gen_ai.tool.call.arguments", "arguments"),
        ("gen_ai.tool.call.result", "result"),
        ("gen_ai.response.finish_reasons", "finish"),
    ):
        if key in attrs:
            value = attrs[key]
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            rows.append((label, text[:_DETAIL_CHARS]))
    if span.status_message:
        rows.append(("error", span.status_message[:_DETAIL_CHARS]))
    for event in span.events:
        if event.get("name") == "exception":
            a = event.get("attributes", {})
            rows.append(
                ("exception", f"{a.get('exception.type', '')}: {a.get('exception.message', '')}")
            )
    return rows


def _render_span(span: SpanRow, turn: TurnTrace, out: list[str], depth: int = 0) -> None:
    root = turn.root
    total = max(root.end_ns - root.start_ns, 1)
    left = max(0.0, (span.start_ns - root.start_ns) / total * 100)
    width = max(0.0, min(100.0 - left, (span.end_ns - span.start_ns) / total * 100))
    out.append(
        f'<li class="span kind-{_esc(span.kind)} status-{_esc(span.status)}" '
        f'data-span-id="{_esc(span.span_id)}" data-parent-id="{_esc(span.parent_id or "")}" '
        f'data-kind="{_esc(span.kind)}" data-name="{_esc(span.name)}">'
    )
    out.append(
        '<div class="row">'
        # Only the name is indented, so every bar shares one time axis.
        f'<span class="name" style="padding-left:{depth * 1.2:.1f}em">'
        f'<span class="kind">{_esc(span.kind)}</span>{_esc(span.name)}</span>'
        f'<span class="track"><span class="bar" style="left:{left:.2f}%;width:{width:.2f}%">'
        "</span></span>"
        f'<span class="dur">{span.duration_ms:,.1f} ms</span>'
        f'<span class="tokens">{_esc(_tokens(span))}</span>'
        "</div>"
    )
    details = _details(span)
    # A turn shows its facts in the header; an agent run only when it failed.
    if details and (span.kind not in ("turn", "agent") or span.status == "ERROR"):
        out.append(
            f'<details class="attrs" style="margin-left:{depth * 1.2 + 1.2:.1f}em">'
            "<summary>details</summary><dl>"
        )
        for key, value in details:
            out.append(f"<dt>{_esc(key)}</dt><dd>{_esc(value)}</dd>")
        out.append("</dl></details>")
    kids = turn.children.get(span.span_id, [])
    if kids:
        out.append("<ul>")
        for child in kids:
            _render_span(child, turn, out, depth + 1)
        out.append("</ul>")
    out.append("</li>")


def _render_calls(turn: TurnTrace, out: list[str]) -> None:
    audits = turn.audits
    if not audits:
        return
    out.append(
        '<table class="calls"><thead><tr><th>tool</th><th>target</th><th>decision</th>'
        "<th>status</th><th>result</th><th>took</th></tr></thead><tbody>"
    )
    for event in audits:
        a = event["attributes"]
        size = a.get("co.result_size")
        took = a.get("co.duration_ms")
        decision = str(a.get("co.decision", ""))
        out.append(
            f'<tr class="call" data-tool="{_esc(a.get("co.tool", ""))}" '
            f'data-decision="{_esc(decision)}">'
            f"<td>{_esc(a.get('co.tool', ''))}</td>"
            f"<td>{_esc(a.get('co.target', '') or '')}</td>"
            f'<td class="decision-{_esc(decision)}">{_esc(decision)}</td>'
            f"<td>{_esc(a.get('co.status', ''))}</td>"
            f"<td>{'' if size is None else f'{size:,} chars'}</td>"
            f"<td>{'' if took is None else f'{took:,.1f} ms'}</td></tr>"
        )
    out.append("</tbody></table>")


def _render_turn(turn: TurnTrace, out: list[str]) -> None:
    root = turn.root
    attrs = root.attributes
    requests = attrs.get("co.usage.requests", 0)
    status = "error" if root.status == "ERROR" else "ok"
    if attrs.get("co.status") == "interrupted":
        status = "interrupted"
    out.append(
        f'<section class="turn {status}" id="trace-{_esc(root.trace_id)}" '
        f'data-trace-id="{_esc(root.trace_id)}" data-session-id="{_esc(root.session_id or "")}" '
        f'data-turn="{_esc(root.turn if root.turn is not None else "")}">'
    )
    out.append(
        f"<h2>Turn {_esc(root.turn if root.turn is not None else '?')} "
        f'<span class="meta">session {_esc((root.session_id or "-")[:8])} · '
        f"{_esc(_clock(root.start_ns))}</span></h2>"
    )
    # Every tool call is audited, also those that never ran (denied, unknown tool).
    calls = [a for a in turn.audits if a["attributes"].get("co.tool") != "model_request"]
    tools = max(len(calls), sum(1 for s in turn.spans if s.kind == "tool"))
    out.append(
        f'<p class="summary">{_esc(root.model or "")} · {_esc(_tokens(root) or "0 → 0")} tokens · '
        f"{_esc(_cost(root))}"
        f"{_esc(requests)} request(s) · {tools} tool call(s) · {root.duration_ms:,.1f} ms · "
        f"{_esc(status)}</p>"
    )
    if root.status_message:
        out.append(f'<p class="error-text">{_esc(root.status_message)}</p>')
    prompt = attrs.get("co.prompt")
    if isinstance(prompt, str) and prompt:
        out.append(f'<blockquote class="prompt">{_esc(prompt)}</blockquote>')
    _render_calls(turn, out)
    out.append('<ul class="tree">')
    _render_span(root, turn, out)
    out.append("</ul></section>")


def render_traces(turns: list[TurnTrace], *, title: str = "Co traces") -> str:
    """The whole page."""
    sessions = {t.root.session_id for t in turns}
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<header><h1>{_esc(title)}</h1>",
        f'<p class="meta">{len(turns)} turn(s) in {len(sessions)} session(s) · generated '
        f"{_esc(datetime.now().strftime('%Y-%m-%d %H:%M:%S'))}</p></header>",
    ]
    if not turns:
        out.append('<p class="meta">No turns recorded yet.</p>')
    for turn in turns:
        _render_turn(turn, out)
    out.append("</body></html>")
    return "\n".join(out)


def write_traces(
    db_path: Path, output: Path, *, session_id: str | None = None, limit: int = 50
) -> int:
    """Write the page; returns the number of turns in it."""
    turns = collect_turns(db_path, session_id=session_id, limit=limit)
    title = f"Co traces · session {session_id}" if session_id else "Co traces"
    output.write_text(render_traces(turns, title=title), encoding="utf-8")
    return len(turns)
