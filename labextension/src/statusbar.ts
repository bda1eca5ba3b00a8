/**
 * The status bar item of Co notebooks: provider:model, session tokens and a
 * YOLO badge, refreshed from every `execute_reply` the notebook receives.
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { ISignal } from '@lumino/signaling';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import type { ICoStatus } from './api';
import { statusFromInfo, statusFromMessage } from './api';
import { statusText, statusTitle } from './format';

/** Follows the Co kernels of all open notebooks; shows the current one's. */
export class CoStatusModel {
  constructor(tracker: INotebookTracker) {
    this._tracker = tracker;
    tracker.widgetAdded.connect((_, panel) => this._watch(panel));
    tracker.forEach(panel => this._watch(panel));
    tracker.currentChanged.connect(() => this._changed.emit());
  }

  /** Fires when what the status bar shows may have changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Fires with the new status after each cell a Co kernel answered. */
  get cellDone(): ISignal<this, ICoStatus> {
    return this._cellDone;
  }

  /** Whether the current notebook runs a Co kernel. */
  get isCo(): boolean {
    const panel = this._tracker.currentWidget;
    if (!panel) {
      return false;
    }
    return (
      this._status.has(panel) ||
      panel.sessionContext.session?.kernel?.name === 'co'
    );
  }

  /** The current notebook's last known status. */
  get status(): ICoStatus | null {
    const panel = this._tracker.currentWidget;
    return panel ? (this._status.get(panel) ?? null) : null;
  }

  private _watch(panel: NotebookPanel): void {
    const context = panel.sessionContext;
    let kernel: Kernel.IKernelConnection | null = null;
    const onMessage = (
      _: Kernel.IKernelConnection,
      args: Kernel.IAnyMessageArgs
    ): void => {
      if (args.direction === 'recv') {
        this._onMessage(panel, args.msg);
      }
    };
    const attach = (): void => {
      kernel?.anyMessage.disconnect(onMessage);
      kernel = context.session?.kernel ?? null;
      this._status.delete(panel);
      this._changed.emit();
      if (!kernel) {
        return;
      }
      kernel.anyMessage.connect(onMessage);
      const current = kernel;
      void current.info
        .then(info => {
          const status = statusFromInfo(info);
          // A reply may have arrived meanwhile: keep the newer status.
          if (status && kernel === current && !this._status.has(panel)) {
            this._set(panel, status);
          }
        })
        .catch(() => undefined);
    };
    context.kernelChanged.connect(attach);
    context.sessionChanged.connect(attach);
    panel.disposed.connect(() => {
      kernel?.anyMessage.disconnect(onMessage);
      this._status.delete(panel);
      this._changed.emit();
    });
    attach();
  }

  private _onMessage(panel: NotebookPanel, msg: KernelMessage.IMessage): void {
    const status = statusFromMessage(msg);
    if (!status) {
      return;
    }
    this._set(panel, status);
    if (msg.header.msg_type === 'execute_reply') {
      this._cellDone.emit(status);
    }
  }

  private _set(panel: NotebookPanel, status: ICoStatus): void {
    this._status.set(panel, status);
    this._changed.emit();
  }

  private _tracker: INotebookTracker;
  private _status = new Map<NotebookPanel, ICoStatus>();
  private _changed = new Signal<this, void>(this);
  private _cellDone = new Signal<this, ICoStatus>(this);
}

/** Draw a status into the item's node (kept apart for unit tests). */
export function renderStatus(
  node: HTMLElement,
  status: ICoStatus | null
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
  node.replaceChildren(...children);
  node.title = statusTitle(status);
  node.dataset.yolo = String(status?.yolo ?? false);
}

/** The status bar widget; a click opens the activity panel. */
export class CoStatusWidget extends Widget {
  constructor(model: CoStatusModel, onClick: () => void) {
    super();
    this.addClass('co-StatusBar');
    this.addClass('jp-StatusBar-TextItem');
    this._model = model;
    model.changed.connect(this._update, this);
    this.node.addEventListener('click', onClick);
    this._update();
  }

  private _update(): void {
    renderStatus(this.node, this._model.status);
  }

  private _model: CoStatusModel;
}
