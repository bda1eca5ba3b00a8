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

/** The button text for each answer (`co_kernel/frontend/_widgets.py`). */
export const BUTTON_LABELS: Record<ApprovalChoice, string> = {
  approve: 'Approve',
  deny: 'Deny',
  approve_all: 'Approve all'
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
 * Shift+Enter the running cell is usually no longer the active one.
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
