/**
 * The status item of Co notebooks: provider:model, session tokens, a YOLO
 * badge (`model.ts`), and the tools waiting for a decision
 * (`approvals/model.ts`). In JupyterLab it sits in the status bar; Notebook 7
 * puts it in each notebook's toolbar (`toolbar.ts`).
 */
import { Widget } from '@lumino/widgets';

import type { ICoStatus } from '../api';
import type { CoApprovals } from '../approvals/model';
import { statusText, statusTitle, waitingText } from '../format';
import type { CoStatusModel } from './model';

/**
 * Draw a status into an item's node (kept apart for unit tests): the status
 * bar's item in JupyterLab, the notebook toolbar's in Notebook 7.
 */
export function renderStatus(
  node: HTMLElement,
  status: ICoStatus | null,
  waiting: readonly string[] = []
): void {
  const doc = node.ownerDocument;
  const text = doc.createElement('span');
  text.className = 'co-StatusBar-text';
  text.textContent = statusText(status);
  const children: HTMLElement[] = [text];
  if (status?.yolo) {
    const yolo = doc.createElement('span');
    yolo.className = 'co-StatusBar-yolo';
    yolo.textContent = 'YOLO';
    children.push(yolo);
  }
  if (waiting.length) {
    const wait = doc.createElement('span');
    wait.className = 'co-StatusBar-waiting';
    wait.textContent = waitingText(waiting);
    children.push(wait);
  }
  node.replaceChildren(...children);
  node.title = statusTitle(status);
  node.dataset.yolo = String(status?.yolo ?? false);
  node.dataset.waiting = String(waiting.length > 0);
}

/** The status bar widget of the current notebook; a click opens the activity panel. */
export class CoStatusWidget extends Widget {
  constructor(
    status: CoStatusModel,
    approvals: CoApprovals,
    onClick: () => void
  ) {
    super();
    this.addClass('co-StatusBar');
    this.addClass('jp-StatusBar-TextItem');
    this._status = status;
    this._approvals = approvals;
    status.changed.connect(this._update, this);
    approvals.changed.connect(this._update, this);
    this.node.addEventListener('click', onClick);
    this._update();
  }

  private _update(): void {
    renderStatus(this.node, this._status.status, this._approvals.waiting);
  }

  private _status: CoStatusModel;
  private _approvals: CoApprovals;
}
