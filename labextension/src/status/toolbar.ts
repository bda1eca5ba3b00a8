/**
 * Notebook 7 has no status bar: there each Co notebook shows the same item
 * (model, tokens, YOLO, what waits for approval) in its toolbar.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';

import type { CoApprovals } from '../approvals/model';
import { renderStatus } from './item';
import type { CoStatusModel } from './model';

/** The toolbar item's name (toolbar items are keyed by name). */
export const TOOLBAR_ITEM = 'coStatus';

/** One notebook's Co status, hidden while the notebook runs another kernel. */
export class CoToolbarItem extends Widget {
  constructor(
    panel: NotebookPanel,
    status: CoStatusModel,
    approvals: CoApprovals,
    onClick: () => void
  ) {
    super();
    this.addClass('co-StatusBar');
    this.addClass('co-ToolbarStatus');
    this._panel = panel;
    this._status = status;
    this._approvals = approvals;
    status.changed.connect(this._update, this);
    approvals.changed.connect(this._update, this);
    this.node.addEventListener('click', onClick);
    this._update();
  }

  dispose(): void {
    this._status.changed.disconnect(this._update, this);
    this._approvals.changed.disconnect(this._update, this);
    super.dispose();
  }

  private _update(): void {
    const isCo = this._status.isCoPanel(this._panel);
    this.setHidden(!isCo);
    if (isCo) {
      renderStatus(
        this.node,
        this._status.statusOf(this._panel),
        this._approvals.waitingIn(this._panel)
      );
    }
  }

  private _panel: NotebookPanel;
  private _status: CoStatusModel;
  private _approvals: CoApprovals;
}

/**
 * Put the item into a notebook's toolbar, after the spacer where there is one;
 * the toolbar owns it from then on.
 */
export function addToolbarItem(
  panel: NotebookPanel,
  status: CoStatusModel,
  approvals: CoApprovals,
  onClick: () => void
): CoToolbarItem {
  const item = new CoToolbarItem(panel, status, approvals, onClick);
  if (!panel.toolbar.insertAfter('spacer', TOOLBAR_ITEM, item)) {
    panel.toolbar.addItem(TOOLBAR_ITEM, item);
  }
  return item;
}
