/**
 * Putting into their cells the outputs a page would otherwise lack: those of
 * turns another page (or this page before a reload) started, and the cards of
 * calls that wait for a decision; and cancelling the cards of a kernel that
 * restarted (`outputs.ts` says how each is found).
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';

import type { IPendingCall } from '../approvals/pending';
import { followKernels } from '../kernels';
import type { IOutputList } from './outputs';
import {
  cancelCards,
  outputOf,
  outputTag,
  placeCard,
  placeOutput
} from './outputs';

/** Places other pages' outputs in the open notebooks' cells. */
export class OutputPlacement {
  /** `pendingIn` gives the calls a notebook's kernel says wait now. */
  constructor(
    tracker: INotebookTracker,
    pendingIn: (panel: NotebookPanel) => readonly IPendingCall[]
  ) {
    this._pendingIn = pendingIn;
    followKernels(tracker, {
      received: (panel, kernel, msg) => this._placeForeign(panel, kernel, msg),
      statusChanged: (panel, kernel) => {
        if (RESTARTED.has(kernel.status)) {
          cancelCards(codeCells(panel).map(([, outputs]) => outputs));
        }
      }
    });
  }

  /**
   * The cards of calls that wait, in their cells on a page that lacks them (a
   * reload of an unsaved notebook, a second tab): a card there decides as it
   * does on the page that asked. Not in a shared document, which has them.
   */
  placeCards(panel: NotebookPanel): void {
    if (!panel.context.isReady) {
      // The comm may answer before the notebook's cells are loaded.
      void panel.context.ready.then(() => this.placeCards(panel));
      return;
    }
    const model = panel.content.model;
    if (!model || model.collaborative) {
      return;
    }
    const cells = codeCells(panel);
    for (const call of this._pendingIn(panel)) {
      if (call.output) {
        placeCard(
          cells.map(([, outputs]) => outputs),
          call.output,
          id => cells.find(([cellId]) => cellId === id)?.[1] ?? null
        );
      }
    }
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

  private _pendingIn: (panel: NotebookPanel) => readonly IPendingCall[];
  private _placed = new WeakMap<object, string>();
}

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
