/**
 * The extension's commands: answer the pending approval, open the activity
 * panel. Their shortcuts live in `schema/plugin.json`.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { ICommandPalette } from '@jupyterlab/apputils';
import { Notification } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';

import type { ApprovalChoice } from './approvals/approval';
import { findPendingButton } from './approvals/approval';
import { CARD_CLASS, pendingIdOf } from './approvals/guard';
import { ACTIVITY_TITLE, CommandIDs } from './keys';
import type { CoApprovals } from './approvals/model';

const PALETTE_CATEGORY = 'Co';
/*
 * Every command's label starts "Co: " (the palette lists them among all the
 * others' commands and its search matches the prefix): "Co: Approve …",
 * "Co: Open Activity".
 */

/** None of the commands takes arguments. */
const NO_ARGS = { args: { type: 'object' as const, properties: {} } };

/** The active cell first, then the notebook's other cells, as search roots. */
function searchRoots(tracker: INotebookTracker): HTMLElement[] {
  const panel = tracker.currentWidget;
  if (!panel) {
    return [];
  }
  const active = panel.content.activeCell;
  const others = panel.content.widgets.filter(cell => cell !== active);
  return [...(active ? [active] : []), ...others].map(cell => cell.node);
}

/**
 * Answer the pending approval with `choice` through the kernel's comm: the
 * call whose card is nearest (the active cell first), else, without a card on
 * the page (a reload, a second tab), the first call the kernel says waits.
 * Says so when none waits. Never by clicking the card: a scripted click
 * decides nothing (`approvals/guard.ts`).
 */
export function answerPendingApproval(
  tracker: INotebookTracker,
  choice: ApprovalChoice,
  approvals?: CoApprovals
): boolean {
  const button = findPendingButton(searchRoots(tracker), choice);
  const card = button?.closest(`.${CARD_CLASS}`);
  const panel = tracker.currentWidget;
  if (panel && approvals) {
    const id = card ? pendingIdOf(card) : approvals.pendingIn(panel)[0]?.id;
    if (id && approvals.decide(panel, id, choice)) {
      return true;
    }
  }
  Notification.info('No Co tool call is waiting for approval here.', {
    autoClose: 3000
  });
  return false;
}

/** Register the commands and put them in the palette. */
export function addCommands(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  palette: ICommandPalette | null,
  openActivity: () => Promise<void>,
  approvals?: CoApprovals
): void {
  const hasNotebook = (): boolean => tracker.currentWidget !== null;
  const answers: Array<[string, ApprovalChoice, string, string]> = [
    [
      CommandIDs.approve,
      'approve',
      'Co: Approve the pending tool call',
      'Run the pending tool call'
    ],
    [
      CommandIDs.deny,
      'deny',
      'Co: Deny the pending tool call',
      'Do not run it; the model is told and can propose something else'
    ],
    [
      CommandIDs.approveAll,
      'approve_all',
      'Co: Approve all tool calls this session',
      'Run the pending call and every later one without asking (yolo)'
    ]
  ];
  for (const [id, choice, label, caption] of answers) {
    app.commands.addCommand(id, {
      label,
      caption,
      describedBy: NO_ARGS,
      isEnabled: hasNotebook,
      execute: () => answerPendingApproval(tracker, choice, approvals)
    });
  }
  app.commands.addCommand(CommandIDs.openActivity, {
    label: `Co: Open ${ACTIVITY_TITLE.replace(/^Co /, '')}`,
    caption: 'Sessions, turns, tool calls and decisions from the audit log',
    describedBy: NO_ARGS,
    execute: openActivity
  });
  if (palette) {
    for (const id of Object.values(CommandIDs)) {
      palette.addItem({ command: id, category: PALETTE_CATEGORY });
    }
  }
}
