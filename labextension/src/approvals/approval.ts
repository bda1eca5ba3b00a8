/**
 * Finding the pending approval's buttons in a notebook.
 *
 * The kernel asks with an ipywidgets card whose buttons read exactly
 * "Approve", "Deny" and "Approve all"; once answered they are disabled. The
 * commands press the live button, so the answer travels the same way as a
 * click: through the widget's comm to the waiting turn.
 */

/** What a person can answer. */
export type ApprovalChoice = 'approve' | 'deny' | 'approve_all';

/**
 * A colour of the decision language: ipywidgets' button style of that name,
 * drawn from the theme (green, red, orange), or grey for a question nobody
 * decided. Deny is red because it stops what was proposed, Approve all orange
 * because it lets later calls run unasked.
 */
export type Tone = 'success' | 'danger' | 'warning' | 'neutral';

/** How an answer is offered everywhere: its button, its console key, its tone. */
export interface IChoiceLook {
  label: string;
  key: string;
  tone: Tone;
}

/** How a verdict reads in a sentence, and its tone. */
export interface IVerdictLook {
  text: string;
  tone: Tone;
}

/*
 * The decision language, the twin of `co_kernel/frontend/_decisions.py`:
 * `tests/frontend/test_decisions.py` reads both tables and keeps them equal,
 * so keep each entry on one line as written.
 */

/** Each answer, in the order offered (`CHOICES` in `_decisions.py`). */
export const CHOICES: Record<ApprovalChoice, IChoiceLook> = {
  approve: { label: 'Approve', key: 'y', tone: 'success' },
  deny: { label: 'Deny', key: 'n', tone: 'danger' },
  approve_all: { label: 'Approve all', key: 'a', tone: 'warning' }
};

/** Each decision label's verdict (`VERDICTS` in `_decisions.py`). */
export const VERDICTS: Record<string, IVerdictLook> = {
  approved: { text: 'approved', tone: 'success' },
  'approved all': { text: 'approved all', tone: 'success' },
  'always allowed': { text: 'always allowed', tone: 'success' },
  denied: { text: 'denied', tone: 'danger' },
  'timed out': { text: 'timed out (denied)', tone: 'danger' },
  interrupted: { text: 'interrupted', tone: 'neutral' },
  cancelled: { text: 'cancelled', tone: 'neutral' }
};

/** The class that gives an element a tone's colour (`style/base.css`). */
export function toneClass(tone: Tone): string {
  return `co-mod-${tone}`;
}

/** The button text for each answer, as the kernel's card has it. */
export const BUTTON_LABELS: Record<ApprovalChoice, string> = {
  approve: CHOICES.approve.label,
  deny: CHOICES.deny.label,
  approve_all: CHOICES.approve_all.label
};

/** The enabled button for `choice` inside `root`'s outputs, if there is one. */
export function findApprovalButton(
  root: ParentNode,
  choice: ApprovalChoice
): HTMLButtonElement | null {
  const label = BUTTON_LABELS[choice];
  const buttons = root.querySelectorAll<HTMLButtonElement>(
    '.jp-OutputArea-output button'
  );
  for (const button of Array.from(buttons)) {
    if (!button.disabled && button.textContent?.trim() === label) {
      return button;
    }
  }
  return null;
}

/**
 * The button to press: in the first root that has one. Callers pass the
 * active cell first, then the notebook's other cells, because after
 * Shift+Enter the running cell is usually not the active one.
 */
export function findPendingButton(
  roots: Iterable<ParentNode>,
  choice: ApprovalChoice
): HTMLButtonElement | null {
  for (const root of roots) {
    const button = findApprovalButton(root, choice);
    if (button) {
      return button;
    }
  }
  return null;
}
