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
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IStatusBar } from '@jupyterlab/statusbar';

import type { ActivityPanel } from './activity';
import { fetchActivity } from './api';
import { addCommands } from './commands';
import { CommandIDs } from './keys';
// Needed at activation: the status bar item follows notebooks from the start.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { CoStatusModel, CoStatusWidget } from './statusbar';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'co-kernel-lab:plugin',
  description:
    'Co kernel: status bar, approval shortcuts and the agent activity panel.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, IStatusBar, ILabShell],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    statusBar: IStatusBar | null,
    labShell: ILabShell | null
  ) => {
    const model = new CoStatusModel(tracker);
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

    // Each answered Co cell may have written audit rows: keep an open panel current.
    model.cellDone.connect(() => {
      if (panel && !panel.isDisposed && panel.isVisible) {
        void panel.refresh();
      }
    });

    addCommands(app, tracker, palette, openActivity);

    const showActivity = (): void => {
      void app.commands.execute(CommandIDs.openActivity);
    };
    if (statusBar) {
      statusBar.registerStatusItem('co-kernel-lab:status', {
        item: new CoStatusWidget(model, showActivity),
        align: 'left',
        rank: 4,
        isActive: () => model.isCo,
        activeStateChanged: model.changed
      });
    } else {
      // No status bar (Notebook 7): the item goes into each notebook's toolbar.
      void import('./toolbar').then(({ addToolbarItem }) => {
        tracker.forEach(notebook => {
          addToolbarItem(notebook, model, showActivity);
        });
        tracker.widgetAdded.connect((_, notebook) => {
          addToolbarItem(notebook, model, showActivity);
        });
      });
    }
  }
};

export default plugin;
