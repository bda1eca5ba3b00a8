/**
 * The Co JupyterLab extension: status bar, approval commands and the activity
 * panel, composed from the folders of `src/`: `status/` (the status item),
 * `approvals/` (what waits for a decision, and deciding it), `outputs/` (Co's
 * outputs and the notebook the kernel reads), `activity/` (the panel). The
 * tool-call card is the MIME renderer extension in `cards/mime.ts`.
 *
 * It runs in Notebook 7 too, whose shell has no status bar and holds one
 * widget in its main area: there the status goes into each Co notebook's
 * toolbar and the activity panel into the right side panel.
 */
import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ILabShell } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { CommandRegistry } from '@lumino/commands';
import { IStatusBar, showPopup } from '@jupyterlab/statusbar';
import type { Widget } from '@lumino/widgets';

import type { ActivityPanel } from './activity/panel';
import { fetchActivity } from './api';
// The status bar loads it at start already: importing it here costs nothing more.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { decisionLabel } from './format';
import { addCommands } from './commands';
import { installApprovalGuard } from './approvals/guard';
import { CommandIDs } from './keys';
import { untrustSavedMarkdown } from './outputs/legacy';
// Needed at activation: Co's saved outputs render from the start (no image loads unasked).
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { installImageLoader, neutraliseSavedImages } from './outputs/images';
import { installPartChoice } from './approvals/parts';
// Needed at activation: the status item, the waiting calls and the outputs of other
// pages follow notebooks from the start.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { CoStatusModel } from './status/model';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { CoStatusWidget } from './status/item';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { CoApprovals } from './approvals/model';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { OutputPlacement } from './outputs/placement';
import { PendingPanel } from './approvals/pending';
// Needed at activation: the kernel reads its notebook from the start.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { followNotebooks } from './outputs/notebook';

/** The small panel over the status item with the notebook's waiting calls. */
function showPendingPopup(
  approvals: CoApprovals,
  notebook: NotebookPanel,
  anchor: Widget
): void {
  const body = new PendingPanel(
    () => approvals.pendingIn(notebook),
    (id, choice) => approvals.decide(notebook, id, choice)
  );
  const popup = showPopup({ body, anchor, align: 'left' });
  // Once nothing waits (decided here, in another tab or on a card), the panel
  // has nothing to offer: it closes rather than saying so.
  const refresh = (): void => {
    if (approvals.pendingIn(notebook).length) {
      body.refresh();
    } else {
      popup.dispose();
    }
  };
  approvals.changed.connect(refresh);
  popup.disposed.connect(() => approvals.changed.disconnect(refresh));
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'co-kernel-lab:plugin',
  description:
    'Co kernel: status bar, approval shortcuts and the agent activity panel.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ICommandPalette, IStatusBar, ILabShell],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    rendermime: IRenderMimeRegistry,
    palette: ICommandPalette | null,
    statusBar: IStatusBar | null,
    labShell: ILabShell | null
  ) => {
    untrustSavedMarkdown(rendermime);
    neutraliseSavedImages(rendermime);
    installImageLoader(window);
    const status = new CoStatusModel(tracker);
    const approvals = new CoApprovals(tracker);
    const placement = new OutputPlacement(tracker, notebook =>
      approvals.pendingIn(notebook)
    );
    // The status a comm message carries stands in until a reply brings one, and
    // the calls it says wait get their cards on this page.
    approvals.statusReported.connect((_, [notebook, reported]) =>
      status.report(notebook, reported)
    );
    approvals.messages.connect((_, [notebook]) =>
      placement.placeCards(notebook)
    );
    followNotebooks(tracker);
    const approvalCommands: Set<string> = new Set([
      CommandIDs.approve,
      CommandIDs.deny,
      CommandIDs.approveAll
    ]);
    installPartChoice(window);
    installApprovalGuard(window, {
      decide: (card, id, choice) => {
        const panel = tracker.find(p => p.node.contains(card));
        return panel ? approvals.decide(panel, id, choice) : false;
      },
      isApprovalKey: event => {
        const stroke = CommandRegistry.keystrokeForKeydownEvent(event);
        return app.commands.keyBindings.some(
          b => approvalCommands.has(b.command) && b.keys[0] === stroke
        );
      }
    });
    let panel: ActivityPanel | null = null;
    // JupyterLab's main area takes any number of tabs; Notebook 7's only its page.
    const activityArea = labShell ? 'main' : 'right';

    const openActivity = async (): Promise<void> => {
      if (!panel || panel.isDisposed) {
        // The panel's code loads the first time someone opens it.
        const { ActivityPanel } = await import('./activity/panel');
        panel = new ActivityPanel(query =>
          fetchActivity(query, app.serviceManager.serverSettings)
        );
        app.shell.add(panel, activityArea, { rank: 1000 });
      }
      app.shell.activateById(panel.id);
      void panel.refresh();
    };

    // Each answered Co cell may have written audit rows, and so does a call that
    // starts or stops waiting for approval: keep an open panel current.
    const refreshActivity = (): void => {
      if (panel && !panel.isDisposed && panel.isVisible) {
        void panel.refresh();
      }
    };
    status.cellDone.connect(refreshActivity);
    approvals.messages.connect(refreshActivity);

    addCommands(app, tracker, palette, openActivity, approvals);

    // A call the kernel denied because no page showed it: say so on the next page.
    approvals.messages.connect((_, [, message]) => {
      for (const outcome of message.decided) {
        if (outcome.reason) {
          Notification.warning(
            `Co: ${outcome.tool} — ${decisionLabel(outcome.decision)}: ${outcome.reason}.`,
            { autoClose: false }
          );
        }
      }
    });

    // A click on the item: the calls waiting for approval if any, else the activity.
    const onItemClick = (anchor: Widget): void => {
      const notebook = tracker.currentWidget;
      if (notebook && approvals.pendingIn(notebook).length) {
        showPendingPopup(approvals, notebook, anchor);
      } else {
        void app.commands.execute(CommandIDs.openActivity);
      }
    };
    if (statusBar) {
      const item: CoStatusWidget = new CoStatusWidget(status, approvals, () =>
        onItemClick(item)
      );
      statusBar.registerStatusItem('co-kernel-lab:status', {
        item,
        align: 'left',
        rank: 4,
        isActive: () => status.isCo,
        activeStateChanged: status.changed
      });
    } else {
      // No status bar (Notebook 7): the item goes into each notebook's toolbar.
      void import('./status/toolbar').then(({ addToolbarItem }) => {
        tracker.forEach(notebook => {
          const item = addToolbarItem(notebook, status, approvals, () =>
            onItemClick(item)
          );
        });
        tracker.widgetAdded.connect((_, notebook) => {
          const item = addToolbarItem(notebook, status, approvals, () =>
            onItemClick(item)
          );
        });
      });
    }
  }
};

export default plugin;
