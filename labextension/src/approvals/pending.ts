/**
 * The calls a Co kernel waits on, from its `co.approvals` comm
 * (`co_kernel/frontend/_pending.py`), and the small panel that answers them.
 *
 * A reloaded page, a second tab or an unsaved notebook has no card for a call
 * that waits; the kernel still knows it. The status item's "waiting for
 * approval" opens this panel, and Alt+Y / Alt+N / Alt+Shift+Y answer through
 * it when no card is on the page. The answer settles the same future as the
 * card's buttons, so a call is decided once however many tabs answer.
 */
import { Widget } from '@lumino/widgets';

import type { ApprovalChoice } from './approval';
import { BUTTON_LABELS, CHOICES as LOOKS, toneClass } from './approval';
import { isUnifiedDiff, renderDiff } from '../cards/diff';
import { byPerson } from './guard';
import type { IOutputJSON } from '../outputs/outputs';

/** The comm target the kernel registers. */
export const APPROVALS_TARGET = 'co.approvals';

/** One call waiting for a decision. */
export interface IPendingCall {
  /** The kernel's id of the question (a decision names it). */
  id: string;
  /** Tool name. */
  tool: string;
  /** The arguments, pretty-printed by the kernel. */
  arguments: string;
  /** The change it makes (a diff), when there is one. */
  detail: string | null;
  /** The subagent that asks; null for Co. */
  agent: string | null;
  /** Its card as the cell shows it (an nbformat output), or null. */
  output: IOutputJSON | null;
}

/** A decision the kernel reports. */
export interface IDecided {
  id: string;
  tool: string;
  /** The decision label (approved, denied, timed out, ...). */
  decision: string;
  /** How a card words it. */
  text: string;
  /** Why the kernel decided it itself (nobody saw it), or null. */
  reason: string | null;
}

/** How often an open page tells the kernel it still shows what waits (ms). */
export const SEEN_INTERVAL_MS = 20_000;

/** One message of the comm: the calls waiting now and what was just decided. */
export interface IApprovalsMessage {
  pending: IPendingCall[];
  decided: IDecided[];
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** A card's output as the kernel sent it; null when it is not a display. */
function outputJSON(value: unknown): IOutputJSON | null {
  if (typeof value !== 'object' || value === null) {
    return null;
  }
  const { output_type, data, metadata } = value as Record<string, unknown>;
  if (output_type !== 'display_data' || typeof data !== 'object' || !data) {
    return null;
  }
  return {
    output_type,
    data,
    metadata: typeof metadata === 'object' && metadata ? metadata : {}
  };
}

/** A comm message's data as calls and decisions; null when it is neither. */
export function parseApprovals(data: unknown): IApprovalsMessage | null {
  if (typeof data !== 'object' || data === null) {
    return null;
  }
  const { pending, decided } = data as Record<string, unknown>;
  if (!Array.isArray(pending)) {
    return null;
  }
  const calls: IPendingCall[] = pending.flatMap(raw => {
    const item = (raw ?? {}) as Record<string, unknown>;
    const id = str(item.id);
    return id
      ? [
          {
            id,
            tool: str(item.tool) ?? '?',
            arguments: str(item.arguments) ?? '',
            detail: str(item.detail),
            agent: str(item.agent),
            output: outputJSON(item.output)
          }
        ]
      : [];
  });
  const outcomes: IDecided[] = (Array.isArray(decided) ? decided : []).flatMap(
    raw => {
      const item = (raw ?? {}) as Record<string, unknown>;
      const id = str(item.id);
      const decision = str(item.decision);
      return id && decision
        ? [
            {
              id,
              decision,
              tool: str(item.tool) ?? '?',
              text: str(item.text) ?? decision,
              reason: str(item.reason)
            }
          ]
        : [];
    }
  );
  return { pending: calls, decided: outcomes };
}

const CHOICES: ApprovalChoice[] = ['approve', 'deny', 'approve_all'];

/** Draw the waiting calls, each with its buttons (kept apart for unit tests). */
export function renderPending(
  node: HTMLElement,
  calls: readonly IPendingCall[],
  decide: (id: string, choice: ApprovalChoice) => void,
  isPerson: (event: Event) => boolean = byPerson
): void {
  const doc = node.ownerDocument;
  if (!calls.length) {
    const none = doc.createElement('div');
    none.className = 'co-Pending-none';
    none.textContent = 'No Co tool call is waiting for approval.';
    node.replaceChildren(none);
    return;
  }
  node.replaceChildren(
    ...calls.map(call => {
      const card = doc.createElement('div');
      card.className = 'co-Pending-call';
      card.dataset.id = call.id;
      const title = doc.createElement('div');
      title.className = 'co-Pending-title';
      const who = call.agent ? `Co's subagent ${call.agent}` : 'Co';
      title.textContent = `✋ ${who} wants to run ${call.tool}`;
      const args = doc.createElement('pre');
      args.textContent = call.arguments;
      const parts: HTMLElement[] = [title, args];
      if (call.detail) {
        // A diff in colour, as on the tool card; other detail as text.
        const detail = isUnifiedDiff(call.detail)
          ? renderDiff(call.detail, doc)
          : doc.createElement('pre');
        detail.classList.add('co-Pending-detail');
        if (!detail.childElementCount) {
          detail.textContent = call.detail;
        }
        parts.push(detail);
      }
      const buttons = doc.createElement('div');
      buttons.className = 'co-Pending-buttons';
      for (const choice of CHOICES) {
        const button = doc.createElement('button');
        // The card's colours for the same answers (approval.ts).
        button.className = `jp-mod-styled ${toneClass(LOOKS[choice].tone)} co-Pending-${choice}`;
        button.textContent = BUTTON_LABELS[choice];
        button.addEventListener('click', event => {
          // A decision needs a person: a script's click() is not one (guard.ts).
          if (!isPerson(event)) {
            return;
          }
          // One answer per call from this page; the kernel ignores any later one.
          buttons
            .querySelectorAll('button')
            .forEach(b => ((b as HTMLButtonElement).disabled = true));
          decide(call.id, choice);
        });
        buttons.appendChild(button);
      }
      parts.push(buttons);
      card.replaceChildren(...parts);
      return card;
    })
  );
}

/** The panel's body: the calls of one notebook, redrawn as they change. */
export class PendingPanel extends Widget {
  constructor(
    calls: () => readonly IPendingCall[],
    decide: (id: string, choice: ApprovalChoice) => void
  ) {
    super();
    this.addClass('co-Pending');
    this._calls = calls;
    this._decide = decide;
    this.refresh();
  }

  /** Draw the calls as they are now. */
  refresh(): void {
    renderPending(this.node, this._calls(), this._decide);
  }

  private _calls: () => readonly IPendingCall[];
  private _decide: (id: string, choice: ApprovalChoice) => void;
}
