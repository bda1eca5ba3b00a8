/**
 * The status bar item of Co notebooks: provider:model, session tokens, a YOLO
 * badge, refreshed from every `execute_reply` the notebook receives, and the
 * tools waiting for an approval click, from the cards the kernel shows.
 * It also puts the output of turns another page started into their cells and
 * cancels the cards of a kernel that restarted (`outputs.ts`).
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { ISignal } from '@lumino/signaling';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import type { ICoStatus } from './api';
import type { CardChoice } from './guard';
import type { IApprovalsMessage, IPendingCall } from './pending';
import { APPROVALS_TARGET, parseApprovals, SEEN_INTERVAL_MS } from './pending';
import type { IOutputList } from './outputs';
import {
  cancelCards,
  outputOf,
  outputTag,
  placeCard,
  placeOutput
} from './outputs';
import { decisionMessage } from './parts';
import {
  approvalFromMessage,
  parseCoStatus,
  statusFromInfo,
  statusFromMessage
} from './api';
import { statusText, statusTitle, waitingText } from './format';

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
    return panel ? this.isCoPanel(panel) : false;
  }

  /** The current notebook's last known status. */
  get status(): ICoStatus | null {
    const panel = this._tracker.currentWidget;
    return panel ? this.statusOf(panel) : null;
  }

  /** Tools of the current notebook's calls that wait for a decision. */
  get waiting(): string[] {
    const panel = this._tracker.currentWidget;
    return panel ? this.waitingIn(panel) : [];
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

  /** Fires with each message of a notebook kernel's `co.approvals` comm. */
  get approvals(): ISignal<this, [NotebookPanel, IApprovalsMessage]> {
    return this._approvals;
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
      if (status && !this._status.has(panel)) {
        this._set(panel, status);
      }
      if (message) {
        // While something waits, say this page still shows it: the kernel denies a
        // call no page has shown for `approval_timeout_unseen`.
        this._seen(panel, comm, message.pending.length > 0);
        this._pending.set(panel, message.pending);
        this._placeCards(panel);
        this._changed.emit();
        this._approvals.emit([panel, message]);
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

  private _watch(panel: NotebookPanel): void {
    const context = panel.sessionContext;
    let kernel: Kernel.IKernelConnection | null = null;
    const onMessage = (
      connection: Kernel.IKernelConnection,
      args: Kernel.IAnyMessageArgs
    ): void => {
      if (args.direction === 'recv') {
        this._onMessage(panel, args.msg);
        this._placeForeign(panel, connection, args.msg);
        if (endsForeignCell(connection, args.msg)) {
          // Its execute_reply, with the new tokens, went to the page that ran it
          // (or to this page before a reload): ask for the status.
          void connection.requestKernelInfo().catch(() => undefined);
        }
      }
    };
    // A kernel that dies or restarts answers no question it asked.
    // After a restart the kernel forgot the comm: open it again once it answers.
    const onStatus = (connection: Kernel.IKernelConnection): void => {
      if (RESTARTED.has(connection.status)) {
        cancelCards(codeCells(panel).map(([, outputs]) => outputs));
      }
      if (GONE.has(connection.status)) {
        this._dropApprovals(panel);
        if (this._waiting.delete(panel)) {
          this._changed.emit();
        }
      } else if (connection.status === 'idle' || connection.status === 'busy') {
        this._openApprovals(panel, connection);
      }
    };
    const attach = (): void => {
      kernel?.anyMessage.disconnect(onMessage);
      kernel?.statusChanged.disconnect(onStatus);
      kernel = context.session?.kernel ?? null;
      this._status.delete(panel);
      this._waiting.delete(panel);
      this._dropApprovals(panel);
      this._changed.emit();
      if (!kernel) {
        return;
      }
      kernel.anyMessage.connect(onMessage);
      kernel.statusChanged.connect(onStatus);
      // Sent once the connection is up (the kernel connection queues it).
      this._openApprovals(panel, kernel);
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
      kernel?.statusChanged.disconnect(onStatus);
      this._status.delete(panel);
      this._waiting.delete(panel);
      this._dropApprovals(panel);
      this._changed.emit();
    });
    attach();
  }

  /**
   * Output of a turn another page (or this page before a reload) started: the
   * page drops it, so put it into the cell it belongs to. Once per notebook
   * model, however many views of it are open. Not in a shared document (real-
   * time collaboration): the page that ran the cell writes its outputs there,
   * and every page shows them already.
   */
  private _placeForeign(
    panel: NotebookPanel,
    kernel: Kernel.IKernelConnection,
    msg: KernelMessage.IMessage
  ): void {
    const model = panel.content.model;
    const parent = msg.parent_header as Partial<KernelMessage.IHeader>;
    if (
      !model ||
      model.collaborative ||
      msg.channel !== 'iopub' ||
      !parent.session ||
      parent.session === kernel.clientId ||
      this._placed.get(model) === msg.header.msg_id
    ) {
      return;
    }
    this._placed.set(model, msg.header.msg_id);
    const cells = codeCells(panel);
    const placed = placeOutput(
      cells.map(([, outputs]) => outputs),
      msg,
      id => cells.find(([cellId]) => cellId === id)?.[1] ?? null
    );
    // The execution count came in the reply this page never gets: each Co
    // output carries it, so the cell ends with `[n]:` here too.
    const output = outputOf(msg);
    const tag = output ? outputTag(output) : null;
    if (placed && tag?.count !== null && tag?.count !== undefined) {
      setCount(panel, tag.request, tag.count);
    }
  }

  /**
   * The cards of calls that wait, in their cells on a page that lacks them (a
   * reload of an unsaved notebook, a second tab): a card there decides as it
   * does on the page that asked. Not in a shared document, which has them.
   */
  private _placeCards(panel: NotebookPanel): void {
    if (!panel.context.isReady) {
      // The comm may answer before the notebook's cells are loaded.
      void panel.context.ready.then(() => this._placeCards(panel));
      return;
    }
    const model = panel.content.model;
    if (!model || model.collaborative) {
      return;
    }
    const cells = codeCells(panel);
    for (const call of this._pending.get(panel) ?? []) {
      if (call.output) {
        placeCard(
          cells.map(([, outputs]) => outputs),
          call.output,
          id => cells.find(([cellId]) => cellId === id)?.[1] ?? null
        );
      }
    }
  }

  private _onMessage(panel: NotebookPanel, msg: KernelMessage.IMessage): void {
    const approval = approvalFromMessage(msg);
    if (approval) {
      this._setWaiting(
        panel,
        approval.callId,
        approval.waiting && approval.tool
      );
      return;
    }
    const replied = msg.header.msg_type === 'execute_reply';
    // The cell is over: nothing of it waits any more, whatever its cards said.
    const cleared = replied && this._waiting.delete(panel);
    const status = statusFromMessage(msg);
    if (status) {
      this._set(panel, status);
      if (replied) {
        this._cellDone.emit(status);
      }
    } else if (cleared) {
      this._changed.emit();
    }
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

  private _set(panel: NotebookPanel, status: ICoStatus): void {
    this._status.set(panel, status);
    this._changed.emit();
  }

  private _tracker: INotebookTracker;
  private _status = new Map<NotebookPanel, ICoStatus>();
  private _waiting = new Map<NotebookPanel, Map<string, string>>();
  private _pending = new Map<NotebookPanel, IPendingCall[]>();
  private _comms = new Map<NotebookPanel, Kernel.IComm>();
  private _pings = new Map<NotebookPanel, number>();
  private _placed = new WeakMap<object, string>();
  private _approvals = new Signal<this, [NotebookPanel, IApprovalsMessage]>(
    this
  );
  private _changed = new Signal<this, void>(this);
  private _cellDone = new Signal<this, ICoStatus>(this);
}

/** Kernel states in which no cell is running any more. */
const GONE = new Set<string>([
  'dead',
  'restarting',
  'autorestarting',
  'terminating',
  'unknown'
]);

/**
 * Kernel states after which none of its widgets or waiting calls live: it
 * restarted, died, or (seen from a page that did not restart it) a new
 * process starts.
 */
const RESTARTED = new Set<string>([
  'dead',
  'restarting',
  'autorestarting',
  'starting'
]);

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

/** Show `count` on the code cell holding an output of `request`. */
function setCount(
  panel: NotebookPanel,
  request: string | null,
  count: number
): void {
  const cells = panel.content.model?.cells;
  for (let i = 0; i < (cells?.length ?? 0); i++) {
    const cell = cells?.get(i) as
      { executionCount?: number | null; outputs?: IOutputList } | undefined;
    const outputs = cell?.outputs;
    if (!cell || !outputs) {
      continue;
    }
    for (let j = 0; j < outputs.length; j++) {
      if (outputTag(outputs.get(j).toJSON())?.request === request) {
        if (cell.executionCount !== count) {
          cell.executionCount = count;
        }
        return;
      }
    }
  }
}

/** The id and outputs of each code cell of a notebook. */
function codeCells(panel: NotebookPanel): [string, IOutputList][] {
  const cells = panel.content.model?.cells;
  const found: [string, IOutputList][] = [];
  for (let i = 0; i < (cells?.length ?? 0); i++) {
    const cell = cells?.get(i) as
      { id: string; outputs?: IOutputList } | undefined;
    if (cell?.outputs) {
      found.push([cell.id, cell.outputs]);
    }
  }
  return found;
}

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
    renderStatus(this.node, this._model.status, this._model.waiting);
  }

  private _model: CoStatusModel;
}
