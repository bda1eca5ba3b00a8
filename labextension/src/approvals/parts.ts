/**
 * Choosing cells one by one on a card that proposes several.
 *
 * When one call inserts or deletes several cells, the kernel's card shows each
 * cell's diff under a control (`PART_TOGGLE_CLASS`, `_part_html` in
 * `co_kernel/frontend/_widgets.py`), every cell accepted to begin with. The
 * control is plain HTML, not a widget: it sends the kernel nothing. This module
 * keeps its own record of the cells the person rejected, changed only by a
 * real click (`event.isTrusted`), and the decision sent for a real Approve
 * click or key press (on the card, or in the status item's panel) carries that
 * record (`decisionMessage`) in the same `co.approvals` message. The kernel
 * takes a choice of cells from nowhere else. "Approve all" and "Always allow"
 * take the whole call.
 *
 * So a script in the page that clicks a control (`click()`, a synthetic
 * event), toggles a widget or sends widget messages changes nothing that is
 * applied. What it cannot stop: a script that rewrites the card before the
 * person clicks (its text, which control names which cell: it can rewrite any
 * of the page), or one that opens a kernel connection of its own (`guard.ts`).
 *
 * A page without this extension gets no controls: the kernel draws the whole
 * change and applies it all or nothing.
 */
import type { CardChoice } from './guard';
import { byPerson, CARD_CLASS, pendingIdOf } from './guard';

/** Class of a cell's control (`PART_TOGGLE_CLASS` in `_widgets.py`). */
export const PART_TOGGLE_CLASS = 'co-part-toggle';

/** The cells rejected on each waiting card, by the question's id. */
export class PartChoices {
  /** The cells (from 0) rejected on the card of question `id`, in order. */
  rejectedOf(id: string): number[] {
    return [...(this._rejected.get(id) ?? [])].sort((a, b) => a - b);
  }

  /** Flip cell `part` of question `id`; whether it is rejected now. */
  toggle(id: string, part: number): boolean {
    const rejected = this._rejected.get(id) ?? new Set<number>();
    this._rejected.set(id, rejected);
    if (rejected.delete(part)) {
      return false;
    }
    rejected.add(part);
    return true;
  }

  private _rejected = new Map<string, Set<number>>();
}

/** The choices of this page: what `decisionMessage` reads by default. */
export const partChoices = new PartChoices();

/** A cell's control at `target`, with its card's question, if it is one. */
export function partToggleAt(target: EventTarget | null): {
  toggle: HTMLElement;
  id: string;
  part: number;
  parts: number;
} | null {
  const element = target instanceof Element ? target : null;
  const toggle = element?.closest<HTMLElement>(`.${PART_TOGGLE_CLASS}`);
  const card = toggle?.closest(`.${CARD_CLASS}`);
  const id = card ? pendingIdOf(card) : null;
  const part = Number(toggle?.dataset.part);
  const parts = Number(toggle?.dataset.parts);
  if (!toggle || !id || !Number.isInteger(part) || !Number.isInteger(parts)) {
    return null;
  }
  return { toggle, id, part, parts };
}

/**
 * A cell's control as the kernel words it (`_part_html`): `✓ Apply cell 2 of 2:
 * new Markdown cell`, or rejected, `✗ Rejected cell 2 of 2: new Markdown cell
 * (click to apply it)`. `what` is the kernel's `data-what` ('' for none).
 */
export function partLabel(
  part: number,
  parts: number,
  what: string,
  rejected: boolean
): string {
  const cell = `cell ${part + 1} of ${parts}${what ? `: ${what}` : ''}`;
  return rejected
    ? `✗ Rejected ${cell} (click to apply it)`
    : `✓ Apply ${cell}`;
}

/** Draw a control (and its cell's diff) as accepted or rejected. */
export function showPart(
  toggle: HTMLElement,
  part: number,
  parts: number,
  rejected: boolean
): void {
  toggle.textContent = partLabel(
    part,
    parts,
    toggle.dataset.what ?? '',
    rejected
  );
  toggle.setAttribute('aria-pressed', String(!rejected));
  toggle.classList.toggle('co-mod-rejected', rejected);
  const diff = toggle.parentElement?.querySelector<HTMLElement>('pre');
  if (diff) {
    diff.style.opacity = rejected ? '0.4' : '';
    diff.style.textDecoration = rejected ? 'line-through' : '';
  }
}

/**
 * Watch `target` (the window) in the capture phase for clicks on a cell's
 * control: a real click flips the cell, any other is stopped. Returns the
 * function that removes the listener.
 */
export function installPartChoice(
  target: Window,
  choices: PartChoices = partChoices,
  isPerson: (event: Event) => boolean = byPerson
): () => void {
  const onClick = (event: MouseEvent): void => {
    const hit = partToggleAt(event.target);
    if (!hit) {
      return;
    }
    event.stopImmediatePropagation();
    event.preventDefault();
    if (isPerson(event)) {
      const rejected = choices.toggle(hit.id, hit.part);
      showPart(hit.toggle, hit.part, hit.parts, rejected);
    }
  };
  target.addEventListener('click', onClick, true);
  return () => target.removeEventListener('click', onClick, true);
}

/**
 * The `co.approvals` message that answers question `id` with `choice`: an
 * approval names the cells rejected on its card, if any.
 */
export function decisionMessage(
  id: string,
  choice: CardChoice,
  choices: PartChoices = partChoices
): { decide: string; choice: CardChoice; reject?: number[] } {
  // "Approve all" and "Always allow" take the whole call, as yolo and rules do.
  const reject = choice === 'approve' ? choices.rejectedOf(id) : [];
  return reject.length
    ? { decide: id, choice, reject }
    : { decide: id, choice };
}
