/**
 * The Co JupyterLab extension: status bar, approval commands and the activity
 * panel. The tool-call card is the MIME renderer extension in `mime.ts`.
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

import type { ActivityPanel } from './activity';
import { fetchActivity } from './api';
// The status bar loads it at start already: importing it here costs nothing more.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { decisionLabel } from './format';
import { addCommands } from './commands';
import { installApprovalGuard } from './guard';
import { CommandIDs } from './keys';
import { untrustSavedMarkdown } from './legacy';
// Needed at activation: Co's saved outputs render from the start (no image loads unasked).
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { installImageLoader, neutraliseSavedImages } from './images';
import { installPartChoice } from './parts';
// Needed at activation: the status bar item follows notebooks from the start.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { CoStatusModel, CoStatusWidget } from './statusbar';
import { PendingPanel } from './pending';
// Needed at activation: the kernel reads its notebook from the start.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { followNotebooks } from './notebook';

/** The small panel over the status item with the notebook's waiting calls. */
function showPendingPopup(
  model: CoStatusModel,
  notebook: NotebookPanel,
  anchor: Widget
): void {
  const body = new PendingPanel(
    () => model.pendingIn(notebook),
    (id, choice) => model.decide(notebook, id, choice)
  );
  const popup = showPopup({ body, anchor, align: 'left' });
  // Once nothing waits (decided here, in another tab or on a card), the panel
  // has nothing to offer: it closes rather than saying so.
  const refresh = (): void => {
    if (model.pendingIn(notebook).length) {
      body.refresh();
    } else {
      popup.dispose();
    }
  };
  model.changed.connect(refresh);
  popup.disposed.connect(() => model.changed.disconnect(refresh));
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
    const model = new CoStatusModel(tracker);
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
        return panel ? model.decide(panel, id, choice) : false;
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
        const { ActivityPanel } = await import('./activity');
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
    model.cellDone.connect(refreshActivity);
    model.approvals.connect(refreshActivity);

    addCommands(app, tracker, palette, openActivity, model);

    // A call the kernel denied because no page showed it: say so on the next page.
    model.approvals.connect((_, [, message]) => {
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
      if (notebook && model.pendingIn(notebook).length) {
        showPendingPopup(model, notebook, anchor);
      } else {
        void app.commands.execute(CommandIDs.openActivity);
      }
    };
    if (statusBar) {
      const item: CoStatusWidget = new CoStatusWidget(model, () =>
        onItemClick(item)
      );
      statusBar.registerStatusItem('co-kernel-lab:status', {
        item,
        align: 'left',
        rank: 4,
        isActive: () => model.isCo,
        activeStateChanged: model.changed
      });
    } else {
      // No status bar (Notebook 7): the item goes into each notebook's toolbar.
      void import('./toolbar').then(({ addToolbarItem }) => {
        tracker.forEach(notebook => {
          const item = addToolbarItem(notebook, model, () => onItemClick(item));
        });
        tracker.widgetAdded.connect((_, notebook) => {
          const item = addToolbarItem(notebook, model, () => onItemClick(item));
        });
      });
    }
  }
};

export default plugin;
