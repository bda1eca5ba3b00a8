/**
 * A decision needs a person.
 *
 * The kernel asks with an ipywidgets card. Any script that runs in the page
 * can call `button.click()` on it, and the widget sends the same message as a
 * real click. So while this extension is connected (its `co.approvals` comm
 * is open), the kernel ignores the widget's own message and takes decisions
 * only from the comm, and this module sends one only for a real gesture:
 *
 * - a click on a card's button reaches the comm only when `event.isTrusted`
 *   (the browser sets it for input from the person, never for `click()`,
 *   `dispatchEvent` or a synthetic `MouseEvent`); an untrusted click on a card
 *   is stopped before the widget sees it;
 * - an untrusted key press that would run one of the approval shortcuts is
 *   stopped before JupyterLab's keymap sees it (Lumino does not check).
 *
 * What it cannot stop: a script that reads the server's token from the page
 * and opens a kernel connection of its own can send the comm message itself,
 * as can one given the application object (JupyterLab's
 * `expose_app_in_browser`, off by default) through `app.commands`. No page
 * check stops code that is as able as the page. That is why no script may run
 * from what Co shows at all: the kernel renders every Markdown output to
 * sanitised HTML (`co_kernel/frontend/_safe_html.py`), and `outputs/legacy.ts` renders
 * the Markdown an older Co saved as untrusted.
 */
import type { ApprovalChoice } from './approval';

/** Whether an event is the person's own input (the browser's `isTrusted`). */
export function byPerson(event: Event): boolean {
  return event.isTrusted;
}

/** What a card's button answers: a choice, or the card's "Always allow". */
export type CardChoice = ApprovalChoice | 'always_allow';

/** Class of the card's box (`CARD_CLASS` in `co_kernel/frontend/_widgets.py`). */
export const CARD_CLASS = 'co-approval-card';

/** The question's id that a card names in its classes (`<CARD_CLASS>-<id>`). */
export function pendingIdOf(card: Element): string | null {
  const prefix = `${CARD_CLASS}-`;
  for (const name of Array.from(card.classList)) {
    if (name.startsWith(prefix) && name.length > prefix.length) {
      return name.slice(prefix.length);
    }
  }
  return null;
}

/**
 * What a card's button answers, by its label (`BUTTONS` in `_widgets.py`; the folder
 * trust card's `TRUST_BUTTONS` in `_trust.py`).
 */
export function choiceOf(button: Element): CardChoice | null {
  const label = button.textContent?.trim() ?? '';
  if (label === 'Approve' || label === 'Trust folder') {
    return 'approve';
  }
  if (label === 'Deny' || label === 'Not now') {
    return 'deny';
  }
  if (label === 'Approve all') {
    return 'approve_all';
  }
  return label.startsWith('Always allow') ? 'always_allow' : null;
}

/** The card's question and the answer a click at `target` gives, if any. */
export function cardAnswer(
  target: EventTarget | null
): { card: HTMLElement; id: string; choice: CardChoice } | null {
  const element = target instanceof Element ? target : null;
  const button = element?.closest('button');
  const card = button?.closest<HTMLElement>(`.${CARD_CLASS}`);
  if (!button || !card || button.disabled) {
    return null;
  }
  const id = pendingIdOf(card);
  const choice = choiceOf(button);
  return id && choice ? { card, id, choice } : null;
}

/** How the guard reaches the kernel and knows the approval shortcuts. */
export interface IGuardOptions {
  /** Send the decision through the comm of the card's notebook; false without one. */
  decide: (card: HTMLElement, id: string, choice: CardChoice) => boolean;
  /** Whether a key press would run an approval command (a keymap match). */
  isApprovalKey: (event: KeyboardEvent) => boolean;
  /** Whether an event is the person's (`byPerson`; tests of the rest replace it). */
  isPerson?: (event: Event) => boolean;
}

/**
 * Watch `target` (the window) in the capture phase, ahead of every widget and
 * of JupyterLab's keymap. Returns the function that removes the listeners.
 */
export function installApprovalGuard(
  target: Window,
  options: IGuardOptions
): () => void {
  const isPerson = options.isPerson ?? byPerson;
  const onClick = (event: MouseEvent): void => {
    const answer = cardAnswer(event.target);
    if (!answer) {
      return;
    }
    if (!isPerson(event)) {
      event.stopImmediatePropagation();
      event.preventDefault();
      return;
    }
    // The widget's own message follows and is ignored by the kernel; without a
    // comm (the kernel never answered it) that message is the only way.
    options.decide(answer.card, answer.id, answer.choice);
  };
  const onKeydown = (event: KeyboardEvent): void => {
    if (!isPerson(event) && options.isApprovalKey(event)) {
      event.stopImmediatePropagation();
      event.preventDefault();
    }
  };
  target.addEventListener('click', onClick, true);
  target.addEventListener('keydown', onKeydown, true);
  return () => {
    target.removeEventListener('click', onClick, true);
    target.removeEventListener('keydown', onKeydown, true);
  };
}
