/**
 * The tool-call card: a collapsible `<details>` built from the kernel's
 * bundle. Text only (never `innerHTML`), so it is safe to render from an
 * untrusted, saved notebook.
 */
import type { IToolCall } from '../api';
import { isUnifiedDiff, diffStats, parseDiff, renderDiff } from './diff';
import {
  STATUS_LABELS,
  decisionAllows,
  decisionLabel,
  decisionTitle,
  decisionTone,
  formatArgs,
  formatDuration,
  hiddenCharacters,
  hiddenWarning,
  markHidden,
  shortArgs
} from '../format';

/** How the card is drawn. */
export interface ICardOptions {
  /** Whether the card starts expanded. */
  open: boolean;
  /** The shortcuts to mention on a waiting card, e.g. `Alt+Y` and `Alt+N`. */
  shortcuts?: { approve: string; deny: string };
  /** Called when the person expands or collapses the card. */
  onToggle?: (open: boolean) => void;
}

function el<K extends keyof HTMLElementTagNameMap>(
  doc: Document,
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = doc.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function section(
  doc: Document,
  name: string,
  title: string,
  body: HTMLElement
): HTMLElement {
  const wrap = el(doc, 'div', `co-ToolCard-section co-ToolCard-${name}`);
  wrap.appendChild(el(doc, 'div', 'co-ToolCard-heading', title));
  wrap.appendChild(body);
  return wrap;
}

/** The one-line summary: status, tool, arguments, decision, duration. */
function summary(doc: Document, call: IToolCall): HTMLElement {
  const node = el(doc, 'summary', 'co-ToolCard-summary');
  const status = el(
    doc,
    'span',
    'co-ToolCard-status',
    STATUS_LABELS[call.status]
  );
  status.dataset.status = call.status;
  node.appendChild(status);
  node.appendChild(el(doc, 'span', 'co-ToolCard-tool', call.tool));
  node.appendChild(
    el(
      doc,
      'span',
      'co-ToolCard-argsLine',
      `(${markHidden(shortArgs(call.args))})`
    )
  );
  if (call.decision && call.decision !== call.status) {
    const decision = el(
      doc,
      'span',
      'co-ToolCard-decision',
      decisionLabel(call.decision)
    );
    decision.dataset.allowed = String(decisionAllows(call.decision));
    decision.dataset.tone = decisionTone(call.decision);
    decision.title = decisionTitle(call.decision) ?? call.decision;
    node.appendChild(decision);
  }
  if (call.duration !== null) {
    node.appendChild(
      el(doc, 'span', 'co-ToolCard-duration', formatDuration(call.duration))
    );
  }
  return node;
}

/**
 * The hidden characters of a call's arguments and change: those the kernel
 * named, and any left unmarked (a card saved by an older Co, or written by
 * someone else into the notebook file).
 */
function hiddenFound(call: IToolCall): string[] {
  const found = [...call.hidden];
  const text = `${formatArgs(call.args)}\n${call.detail ?? ''}`;
  for (const code of hiddenCharacters(text)) {
    if (!found.some(h => h === code || h.startsWith(`${code} `))) {
      found.push(code);
    }
  }
  return found;
}

/**
 * What the card calls a call's change: after a denial nothing changed, so it
 * is what was proposed and not applied (`_change_title` in `_toolcard.py`).
 */
function changeTitle(status: IToolCall['status']): string {
  return status === 'denied' || status === 'interrupted'
    ? 'Proposed change, not applied'
    : 'Change';
}

/** The card for one tool call. */
export function renderToolCard(
  call: IToolCall,
  options: ICardOptions,
  doc: Document = document
): HTMLDetailsElement {
  const card = el(doc, 'details', 'co-ToolCard');
  card.dataset.status = call.status;
  card.dataset.callId = call.callId;
  if (call.decision) {
    card.dataset.decision = call.decision;
  }
  card.open = options.open;
  card.appendChild(summary(doc, call));

  const body = el(doc, 'div', 'co-ToolCard-body');
  card.appendChild(body);
  const warning = hiddenWarning(hiddenFound(call));
  if (warning) {
    body.appendChild(el(doc, 'div', 'co-ToolCard-hidden', warning));
  }
  card.addEventListener('toggle', () => options.onToggle?.(card.open));
  if (call.status === 'waiting') {
    // The approval card below shows the arguments and the change while it
    // asks: once is enough. Decided, this card is their record.
    const keys = options.shortcuts;
    body.appendChild(
      el(
        doc,
        'div',
        'co-ToolCard-hint',
        'Waiting for your decision on the card below' +
          (keys ? ` (${keys.approve} approves, ${keys.deny} denies).` : '.')
      )
    );
    return card;
  }
  body.appendChild(
    section(
      doc,
      'args',
      'Arguments',
      el(doc, 'pre', 'co-ToolCard-pre', markHidden(formatArgs(call.args)))
    )
  );
  if (call.detail) {
    const detail = markHidden(call.detail);
    if (isUnifiedDiff(detail)) {
      const stats = diffStats(parseDiff(detail));
      body.appendChild(
        section(
          doc,
          'change',
          `${changeTitle(call.status)} (+${stats.added} −${stats.removed})`,
          renderDiff(detail, doc)
        )
      );
    } else {
      body.appendChild(
        section(
          doc,
          'change',
          call.status === 'denied' || call.status === 'interrupted'
            ? 'Details, not applied'
            : 'Details',
          el(doc, 'pre', 'co-ToolCard-pre', detail)
        )
      );
    }
  }
  if (call.result !== null) {
    body.appendChild(
      section(
        doc,
        'result',
        'Result',
        el(doc, 'pre', 'co-ToolCard-pre', markHidden(call.result) || '(empty)')
      )
    );
  }
  if (call.decision) {
    body.appendChild(
      el(
        doc,
        'div',
        'co-ToolCard-footer',
        `Decision: ${decisionLabel(call.decision)}` +
          (decisionTitle(call.decision)
            ? ` (${decisionTitle(call.decision)})`
            : '')
      )
    );
  }
  return card;
}
