/**
 * The Co JupyterLab extension: status bar, approval commands and the activity
 * panel. The tool-call card is the MIME renderer extension in `mime.ts`.
 */
import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
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
  optional: [ICommandPalette, IStatusBar],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    statusBar: IStatusBar | null
  ) => {
    const model = new CoStatusModel(tracker);
    let panel: ActivityPanel | null = null;

    const openActivity = async (): Promise<void> => {
      if (!panel || panel.isDisposed) {
        // The panel's code loads the first time someone opens it.
        const { ActivityPanel } = await import('./activity');
        panel = new ActivityPanel(query =>
          fetchActivity(query, app.serviceManager.serverSettings)
        );
        app.shell.add(panel, 'main');
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

    if (statusBar) {
      statusBar.registerStatusItem('co-kernel-lab:status', {
        item: new CoStatusWidget(model, () =>
          app.commands.execute(CommandIDs.openActivity)
        ),
        align: 'left',
        rank: 4,
        isActive: () => model.isCo,
        activeStateChanged: model.changed
      });
    }
  }
};

export default plugin;
