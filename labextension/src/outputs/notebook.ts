/**
 * The `co.notebook` comm (`co_kernel/notebook/_page.py`): the Co kernel reads
 * the notebook as the person sees it now, unsaved edits included, and applies
 * the cell edits the person approved, each as ONE undoable step.
 *
 * Every notebook panel whose kernel is a Co kernel opens the comm (JupyterLab
 * and Notebook 7 alike) and answers the kernel's requests from the panel's
 * shared notebook model; with real-time collaboration that model is the
 * shared document, so other people see an approved edit too.
 */
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';

/** The comm target the kernel registers. */
export const NOTEBOOK_TARGET = 'co.notebook';

/** Characters of each output value sent to the kernel (it summarises further). */
export const OUTPUT_CLIP = 2000;

type JSONObject = Record<string, unknown>;

/** The notebook's shared model, as far as this module uses it. */
export interface ISharedCells {
  readonly cells: ReadonlyArray<ISharedCell>;
  transact(f: () => void, undoable?: boolean): void;
  insertCells(index: number, cells: JSONObject[]): ReadonlyArray<ISharedCell>;
  deleteCell(index: number): void;
  moveCell(from: number, to: number): void;
  readonly undoManager?: { stopCapturing(): void } | null;
}

/** One shared cell. */
export interface ISharedCell {
  readonly id: string;
  readonly cell_type: string;
  getSource(): string;
  setSource(value: string): void;
  toJSON(): unknown;
  setOutputs?(outputs: unknown[]): void;
  execution_count?: number | null;
}

/** A change the kernel asks for (see `_page.py`). */
export interface IChange {
  op: 'insert' | 'set' | 'delete' | 'move' | 'outputs';
  index?: number;
  cells?: { cell_type: string; source: string }[];
  id?: string;
  expect?: string;
  source?: string;
  cell_type?: string;
  to?: number;
  outputs?: unknown[];
  execution_count?: number | null;
}

function clip(value: unknown): unknown {
  if (typeof value === 'string') {
    return value.length > OUTPUT_CLIP ? value.slice(0, OUTPUT_CLIP) : value;
  }
  if (Array.isArray(value)) {
    return clip(value.join(''));
  }
  return value;
}

/** An output with every value clipped and no traceback (the kernel keeps ename/evalue). */
export function clipOutput(output: unknown): JSONObject {
  const out = { ...((output ?? {}) as JSONObject) };
  delete out.traceback;
  if (typeof out.text !== 'undefined') {
    out.text = clip(out.text);
  }
  if (out.data && typeof out.data === 'object') {
    const data: JSONObject = {};
    for (const [mime, value] of Object.entries(out.data as JSONObject)) {
      data[mime] =
        typeof value === 'object' && !Array.isArray(value) ? '' : clip(value);
    }
    out.data = data;
  }
  return out;
}

/** The cells as the kernel reads them: nbformat cells with clipped outputs. */
export function readCells(shared: ISharedCells): JSONObject[] {
  return shared.cells.map(cell => {
    const json: JSONObject = { ...(cell.toJSON() as JSONObject), id: cell.id };
    if (Array.isArray(json.outputs)) {
      json.outputs = json.outputs.map(clipOutput);
    }
    if (Array.isArray(json.source)) {
      json.source = json.source.join('');
    }
    delete json.attachments;
    return json;
  });
}

function indexOf(shared: ISharedCells, change: IChange): number {
  const index = shared.cells.findIndex(cell => cell.id === change.id);
  if (index < 0) {
    throw new Error(`no cell with id ${change.id} in the notebook now`);
  }
  if (
    change.expect !== undefined &&
    shared.cells[index].getSource() !== change.expect
  ) {
    throw new Error(
      `cell ${change.id} changed since it was read (the person edited it); nothing was applied`
    );
  }
  return index;
}

/**
 * Apply changes as one undoable step, after checking every cell they name
 * still holds what the kernel read; returns the ids of inserted cells.
 */
export function applyChanges(
  shared: ISharedCells,
  changes: readonly IChange[]
): string[] {
  // Check everything first: a refused proposal changes nothing.
  for (const change of changes) {
    if (change.op !== 'insert') {
      indexOf(shared, change);
    } else if (
      change.index === undefined ||
      change.index < 0 ||
      change.index > shared.cells.length
    ) {
      throw new Error(`cannot insert at index ${change.index}`);
    }
  }
  const outputsOnly = changes.every(change => change.op === 'outputs');
  const ids: string[] = [];
  shared.undoManager?.stopCapturing();
  shared.transact(() => {
    for (const change of changes) {
      if (change.op === 'insert') {
        const cells = (change.cells ?? []).map(cell => ({
          cell_type: cell.cell_type,
          source: cell.source,
          metadata: {},
          ...(cell.cell_type === 'code'
            ? { outputs: [], execution_count: null }
            : {})
        }));
        for (const inserted of shared.insertCells(change.index ?? 0, cells)) {
          ids.push(inserted.id);
        }
        continue;
      }
      const index = indexOf(shared, change);
      const cell = shared.cells[index];
      if (change.op === 'set') {
        if (change.cell_type && change.cell_type !== cell.cell_type) {
          shared.deleteCell(index);
          shared.insertCells(index, [
            {
              id: cell.id,
              cell_type: change.cell_type,
              source: change.source ?? '',
              metadata: {},
              ...(change.cell_type === 'code'
                ? { outputs: [], execution_count: null }
                : {})
            }
          ]);
        } else {
          cell.setSource(change.source ?? '');
        }
      } else if (change.op === 'delete') {
        shared.deleteCell(index);
      } else if (change.op === 'move') {
        shared.moveCell(index, change.to ?? index);
      } else if (change.op === 'outputs' && cell.setOutputs) {
        cell.setOutputs(change.outputs ?? []);
        if (change.execution_count !== undefined) {
          cell.execution_count = change.execution_count;
        }
      }
    }
    // Outputs are not an edit of the document a person would undo.
  }, !outputsOnly);
  shared.undoManager?.stopCapturing();
  return ids;
}

/** The reply to one request of the kernel. */
export function answer(
  panel: NotebookPanel,
  data: JSONObject
): JSONObject | null {
  const request = data.request;
  if (typeof request !== 'string') {
    return null;
  }
  const shared = panel.content.model?.sharedModel as unknown as
    ISharedCells | undefined;
  if (!shared) {
    return { reply: request, error: 'the notebook is not loaded yet' };
  }
  try {
    if (data.op === 'read') {
      return {
        reply: request,
        cells: readCells(shared),
        path: panel.context.path,
        dirty: panel.context.model.dirty
      };
    }
    if (data.op === 'edit' && Array.isArray(data.changes)) {
      return {
        reply: request,
        ok: true,
        ids: applyChanges(shared, data.changes as IChange[])
      };
    }
    return { reply: request, error: `unknown request ${String(data.op)}` };
  } catch (error) {
    return { reply: request, error: (error as Error).message };
  }
}

const GONE = new Set<string>(['dead', 'restarting', 'autorestarting']);

/** Open `co.notebook` for one panel's Co kernel, again after each restart. */
function follow(panel: NotebookPanel): void {
  const context = panel.sessionContext;
  let kernel: Kernel.IKernelConnection | null = null;
  let comm: Kernel.IComm | null = null;
  const open = (): void => {
    if (
      (comm && !comm.isDisposed) ||
      !kernel ||
      kernel.name !== 'co' ||
      kernel.isDisposed
    ) {
      return;
    }
    // Kept in `comm` and disposed by `attach` or with the panel.
    // eslint-disable-next-line jupyter/require-disposable-transfer
    const opened = kernel.createComm(NOTEBOOK_TARGET);
    opened.onMsg = msg => {
      const reply = answer(panel, msg.content.data as JSONObject);
      if (reply && !opened.isDisposed) {
        opened.send(reply as Parameters<Kernel.IComm['send']>[0]);
      }
    };
    opened.onClose = () => {
      if (comm === opened) {
        comm = null;
      }
    };
    comm = opened;
    // The kernel answers only for the notebook it was started for (`_page.py`).
    opened.open({ path: panel.context.localPath });
  };
  const onStatus = (connection: Kernel.IKernelConnection): void => {
    if (GONE.has(connection.status)) {
      comm = null; // the kernel forgot it; open a new one once it answers
    } else if (connection.status === 'idle' || connection.status === 'busy') {
      open();
    }
  };
  const attach = (): void => {
    kernel?.statusChanged.disconnect(onStatus);
    if (comm && !comm.isDisposed) {
      comm.dispose();
    }
    comm = null;
    kernel = context.session?.kernel ?? null;
    if (kernel) {
      kernel.statusChanged.connect(onStatus);
      open();
    }
  };
  context.kernelChanged.connect(attach);
  context.sessionChanged.connect(attach);
  panel.disposed.connect(() => {
    kernel?.statusChanged.disconnect(onStatus);
    if (comm && !comm.isDisposed) {
      comm.close();
    }
  });
  attach();
}

/** Give the Co kernel of every notebook panel its live document. */
export function followNotebooks(tracker: INotebookTracker): void {
  tracker.forEach(follow);
  tracker.widgetAdded.connect((_, panel) => follow(panel));
}
