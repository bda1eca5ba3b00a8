/**
 * The status of Co notebooks' kernels: provider:model, session tokens and
 * YOLO, refreshed from every `execute_reply` a notebook receives. The status
 * item (`item.ts`, `toolbar.ts`) draws it beside the calls that wait
 * (`approvals/model.ts`).
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { ISignal } from '@lumino/signaling';
import { Signal } from '@lumino/signaling';

import type { ICoStatus } from '../api';
import { statusFromInfo, statusFromMessage } from '../api';
import { followKernels } from '../kernels';

/** Follows the Co kernels of all open notebooks; knows the current one's. */
export class CoStatusModel {
  constructor(tracker: INotebookTracker) {
    this._tracker = tracker;
    followKernels(tracker, {
      attached: (panel, kernel) => this._attached(panel, kernel),
      received: (panel, kernel, msg) => this._received(panel, kernel, msg),
      closed: panel => this._forget(panel)
    });
    tracker.currentChanged.connect(() => this._changed.emit());
  }

  /** Fires when what the status item shows may have changed. */
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
    return panel ? this.isCoPanel(panel) : false;
  }

  /** The current notebook's last known status. */
  get status(): ICoStatus | null {
    const panel = this._tracker.currentWidget;
    return panel ? this.statusOf(panel) : null;
  }

  /** Whether a notebook runs a Co kernel. */
  isCoPanel(panel: NotebookPanel): boolean {
    return (
      this._status.has(panel) ||
      panel.sessionContext.session?.kernel?.name === 'co'
    );
  }

  /** A notebook's last known status. */
  statusOf(panel: NotebookPanel): ICoStatus | null {
    return this._status.get(panel) ?? null;
  }

  /**
   * A status the kernel sent outside a reply (with its approvals comm's
   * messages): a page that connects while a cell runs gets no kernel_info
   * reply until the cell ends. Kept only while none is known, since a reply's
   * is newer.
   */
  report(panel: NotebookPanel, status: ICoStatus): void {
    if (!this._status.has(panel)) {
      this._set(panel, status);
    }
  }

  private _attached(
    panel: NotebookPanel,
    kernel: Kernel.IKernelConnection | null
  ): void {
    this._status.delete(panel);
    this._changed.emit();
    if (!kernel) {
      return;
    }
    void kernel.info
      .then(info => {
        const status = statusFromInfo(info);
        // A reply may have arrived meanwhile: keep the newer status.
        if (status && panel.sessionContext.session?.kernel === kernel) {
          this.report(panel, status);
        }
      })
      .catch(() => undefined);
  }

  private _received(
    panel: NotebookPanel,
    kernel: Kernel.IKernelConnection,
    msg: KernelMessage.IMessage
  ): void {
    const status = statusFromMessage(msg);
    if (status) {
      this._set(panel, status);
      if (msg.header.msg_type === 'execute_reply') {
        this._cellDone.emit(status);
      }
    }
    if (endsForeignCell(kernel, msg)) {
      // Its execute_reply, with the new tokens, went to the page that ran it
      // (or to this page before a reload): ask for the status.
      void kernel.requestKernelInfo().catch(() => undefined);
    }
  }

  private _forget(panel: NotebookPanel): void {
    this._status.delete(panel);
    this._changed.emit();
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

/** Whether `msg` says a cell another page (or session) ran has ended. */
function endsForeignCell(
  kernel: Kernel.IKernelConnection,
  msg: KernelMessage.IMessage
): boolean {
  const parent = msg.parent_header as Partial<KernelMessage.IHeader>;
  return (
    msg.channel === 'iopub' &&
    msg.header.msg_type === 'status' &&
    (msg.content as { execution_state?: string }).execution_state === 'idle' &&
    parent.msg_type === 'execute_request' &&
    !!parent.session &&
    parent.session !== kernel.clientId
  );
}
