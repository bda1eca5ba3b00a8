/**
 * The tool calls Co notebooks' kernels wait on for a decision: from the cards
 * the kernel shows and from its `co.approvals` comm, which also carries the
 * person's decisions back (`guard.ts`, `parts.ts`, the status item's panel in
 * `pending.ts`).
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { ISignal } from '@lumino/signaling';
import { Signal } from '@lumino/signaling';

import type { ICoStatus } from '../api';
import { approvalFromMessage, parseCoStatus } from '../api';
import { followKernels } from '../kernels';
import type { CardChoice } from './guard';
import { decisionMessage } from './parts';
import type { IApprovalsMessage, IPendingCall } from './pending';
import { APPROVALS_TARGET, parseApprovals, SEEN_INTERVAL_MS } from './pending';

/** Follows what the Co kernels of all open notebooks wait on; answers it. */
export class CoApprovals {
  constructor(tracker: INotebookTracker) {
    this._tracker = tracker;
    followKernels(tracker, {
      attached: (panel, kernel) => this._attached(panel, kernel),
      received: (panel, _, msg) => this._received(panel, msg),
      statusChanged: (panel, kernel) => this._kernelStatus(panel, kernel),
      closed: panel => this._forget(panel)
    });
  }

  /** Fires when what waits may have changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Fires with each message of a notebook kernel's `co.approvals` comm. */
  get messages(): ISignal<this, [NotebookPanel, IApprovalsMessage]> {
    return this._messages;
  }

  /** Fires with the kernel's status that rides along a comm message. */
  get statusReported(): ISignal<this, [NotebookPanel, ICoStatus]> {
    return this._statusReported;
  }

  /** Tools of the current notebook's calls that wait for a decision. */
  get waiting(): string[] {
    const panel = this._tracker.currentWidget;
    return panel ? this.waitingIn(panel) : [];
  }

  /**
   * Tools of a notebook's calls that wait for a decision, in asking order:
   * from the cards on the page and from the kernel's own list (the calls a
   * reloaded page or a second tab has no card for).
   */
  waitingIn(panel: NotebookPanel): string[] {
    return [
      ...(this._waiting.get(panel)?.values() ?? []),
      ...this.pendingIn(panel).map(call => call.tool)
    ];
  }

  /** The calls a notebook's kernel says wait for a decision. */
  pendingIn(panel: NotebookPanel): IPendingCall[] {
    return this._pending.get(panel) ?? [];
  }

  /** Answer a waiting call through the kernel's comm; false without one. */
  decide(panel: NotebookPanel, id: string, choice: CardChoice): boolean {
    const comm = this._comms.get(panel);
    if (!comm || comm.isDisposed) {
      return false;
    }
    // An approval carries the cells rejected on its card (parts.ts).
    comm.send(decisionMessage(id, choice));
    return true;
  }

  /** Open the kernel's `co.approvals` comm: it sends what waits, now and later. */
  private _openApprovals(
    panel: NotebookPanel,
    kernel: Kernel.IKernelConnection
  ): void {
    if (this._comms.has(panel) || kernel.name !== 'co' || kernel.isDisposed) {
      return;
    }
    const comm = kernel.createComm(APPROVALS_TARGET);
    comm.onMsg = msg => {
      const message = parseApprovals(msg.content.data);
      // The kernel's status rides along: a page that connects while a cell
      // runs gets no kernel_info reply until it ends.
      const status = parseCoStatus(
        (msg.content.data as Record<string, unknown> | undefined)?.status
      );
      if (status) {
        this._statusReported.emit([panel, status]);
      }
      if (message) {
        // While something waits, say this page still shows it: the kernel denies a
        // call no page has shown for `approval_timeout_unseen`.
        this._seen(panel, comm, message.pending.length > 0);
        this._pending.set(panel, message.pending);
        this._changed.emit();
        this._messages.emit([panel, message]);
        const told = message.decided.filter(o => o.reason).map(o => o.id);
        if (told.length) {
          comm.send({ told });
        }
      }
    };
    comm.onClose = () => this._dropApprovals(panel, comm);
    this._comms.set(panel, comm);
    comm.open();
  }

  private _seen(
    panel: NotebookPanel,
    comm: Kernel.IComm,
    waiting: boolean
  ): void {
    const timer = this._pings.get(panel);
    if (waiting && timer === undefined) {
      const ping = (): void => {
        if (!comm.isDisposed) {
          comm.send({ seen: true });
        }
      };
      this._pings.set(panel, window.setInterval(ping, SEEN_INTERVAL_MS));
    } else if (!waiting && timer !== undefined) {
      window.clearInterval(timer);
      this._pings.delete(panel);
    }
  }

  private _dropApprovals(panel: NotebookPanel, comm?: Kernel.IComm): void {
    const current = this._comms.get(panel);
    if (!current || (comm && comm !== current)) {
      return;
    }
    this._seen(panel, current, false);
    this._comms.delete(panel);
    if (!comm && !current.isDisposed) {
      current.dispose();
    }
    if (this._pending.delete(panel)) {
      this._changed.emit();
    }
  }

  private _attached(
    panel: NotebookPanel,
    kernel: Kernel.IKernelConnection | null
  ): void {
    this._forget(panel);
    if (kernel) {
      // Sent once the connection is up (the kernel connection queues it).
      this._openApprovals(panel, kernel);
    }
  }

  /** A kernel that dies or restarts answers no question it asked. */
  private _kernelStatus(
    panel: NotebookPanel,
    kernel: Kernel.IKernelConnection
  ): void {
    if (GONE.has(kernel.status)) {
      this._dropApprovals(panel);
      if (this._waiting.delete(panel)) {
        this._changed.emit();
      }
    } else if (kernel.status === 'idle' || kernel.status === 'busy') {
      // After a restart the kernel forgot the comm: open it again once it answers.
      this._openApprovals(panel, kernel);
    }
  }

  private _received(panel: NotebookPanel, msg: KernelMessage.IMessage): void {
    const approval = approvalFromMessage(msg);
    if (approval) {
      this._setWaiting(
        panel,
        approval.callId,
        approval.waiting && approval.tool
      );
    } else if (
      msg.header.msg_type === 'execute_reply' &&
      this._waiting.delete(panel)
    ) {
      // The cell is over: nothing of it waits any more, whatever its cards said.
      this._changed.emit();
    }
  }

  private _forget(panel: NotebookPanel): void {
    this._waiting.delete(panel);
    this._dropApprovals(panel);
    this._changed.emit();
  }

  private _setWaiting(
    panel: NotebookPanel,
    callId: string,
    tool: string | false
  ): void {
    let calls = this._waiting.get(panel);
    if (tool) {
      if (!calls) {
        calls = new Map();
        this._waiting.set(panel, calls);
      }
      calls.set(callId, tool);
    } else if (!calls?.delete(callId)) {
      return;
    }
    this._changed.emit();
  }

  private _tracker: INotebookTracker;
  private _waiting = new Map<NotebookPanel, Map<string, string>>();
  private _pending = new Map<NotebookPanel, IPendingCall[]>();
  private _comms = new Map<NotebookPanel, Kernel.IComm>();
  private _pings = new Map<NotebookPanel, number>();
  private _messages = new Signal<this, [NotebookPanel, IApprovalsMessage]>(
    this
  );
  private _statusReported = new Signal<this, [NotebookPanel, ICoStatus]>(this);
  private _changed = new Signal<this, void>(this);
}

/** Kernel states in which no cell is running any more. */
const GONE = new Set<string>([
  'dead',
  'restarting',
  'autorestarting',
  'terminating',
  'unknown'
]);
