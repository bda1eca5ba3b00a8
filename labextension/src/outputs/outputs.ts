/**
 * Co's outputs on a page that did not send the turn's request.
 *
 * JupyterLab hands a request's iopub output only to the page that sent it: a
 * reloaded page or a second tab on the same notebook never shows the rest of
 * a turn that resumes after an approval. Every Co output carries
 * `metadata.co = {request, display_id, cell}` (`OUTPUT_TAG` in
 * `co_kernel/frontend/_publisher.py`) and a saved notebook keeps it, so such a
 * page finds the cell by the request's id (or, holding nothing of the turn
 * yet, by JupyterLab's cell id) and the output an update replaces by its
 * display id.
 *
 * An approval card is an ipywidgets view, and its widgets die with the kernel:
 * after a restart a waiting card is drawn cancelled, a decided one by its
 * static fallback.
 */
import type { KernelMessage } from '@jupyterlab/services';

import { TOOL_CALL_MIME } from '../api';

/** The metadata key of the kernel's tag on each Co output. */
export const OUTPUT_TAG = 'co';

/** ipywidgets' MIME type for a widget view. */
export const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';

/** What a card cut by a restart says instead of "Decision: waiting". */
export const CANCELLED_TEXT = 'Decision: ⏹ Cancelled (the kernel restarted)';

/** The verdict line of a cancelled card, as the kernel words decided ones. */
export const CANCELLED_VERDICT = '⏹ Cancelled (the kernel restarted)';

function escapeHTML(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/**
 * A waiting card cut by a restart, as a decided card reads (a card, not the
 * text record, in the past tense and grey as nobody decided):
 * `⏹ Cancelled (the kernel restarted) — Co asked to run x`.
 */
export function cancelledCardHTML(plain: string): string {
  const question = plain
    .split('\n', 1)[0]
    .replace(/:$/, '')
    .replace(/ wants to run /, ' asked to run ');
  return (
    '<div class="co-approval" data-decision="cancelled" ' +
    `style="border-left: 3px solid ${NEUTRAL_ACCENT}; padding: 2px 8px; margin: 4px 0">` +
    `<b>${CANCELLED_VERDICT}</b> — ${escapeHTML(question)}</div>`
  );
}

/** The neutral tone's colour in static HTML (`ACCENTS` in `_decisions.py`). */
const NEUTRAL_ACCENT = '#9e9e9e';

/** An output as a notebook stores it (nbformat), as far as used here. */
export interface IOutputJSON {
  output_type: string;
  data?: unknown;
  metadata?: unknown;
}

/** The part of JupyterLab's `IOutputAreaModel` used here. */
export interface IOutputList {
  readonly length: number;
  get(index: number): { toJSON(): IOutputJSON };
  set(index: number, output: IOutputJSON): void;
  add(output: IOutputJSON): number;
  clear(): void;
  /** Whether the outputs render as trusted (JupyterLab's output area model). */
  trusted?: boolean;
}

/** The kernel's tag on a Co output. */
export interface IOutputTag {
  /** The msg_id of the execute request whose turn showed it. */
  request: string | null;
  /** Its display id: the updates that replace it name it. */
  displayId: string | null;
  /** On an approval card: "waiting" or the decision label. */
  approval: string | null;
  /** The id of the notebook cell that ran the request, when JupyterLab sent it. */
  cell: string | null;
  /** The execution count of that request: a page that missed its reply shows it. */
  count: number | null;
}

type JSONObject = Record<string, unknown>;

function isObject(value: unknown): value is JSONObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** An output's Co tag; null on any other output. */
export function outputTag(output: IOutputJSON): IOutputTag | null {
  const tag = isObject(output.metadata) ? output.metadata[OUTPUT_TAG] : null;
  if (!isObject(tag)) {
    return null;
  }
  return {
    request: str(tag.request),
    displayId: str(tag.display_id),
    approval: str(tag.approval),
    cell: str(tag.cell),
    count: typeof tag.count === 'number' ? tag.count : null
  };
}

/** The output an iopub message adds or replaces; null for other messages. */
export function outputOf(msg: KernelMessage.IMessage): IOutputJSON | null {
  const content = msg.content as JSONObject;
  const shown = { data: content.data ?? {}, metadata: content.metadata ?? {} };
  switch (msg.header.msg_type) {
    case 'display_data':
    case 'update_display_data':
      return { output_type: 'display_data', ...shown };
    case 'execute_result':
      return {
        output_type: 'execute_result',
        execution_count: content.execution_count ?? null,
        ...shown
      } as IOutputJSON;
    case 'stream':
      return {
        output_type: 'stream',
        name: content.name,
        text: content.text
      } as IOutputJSON;
    case 'error':
      return {
        output_type: 'error',
        ename: content.ename,
        evalue: content.evalue,
        traceback: content.traceback
      } as IOutputJSON;
    default:
      return null;
  }
}

function* outputs(
  lists: readonly IOutputList[]
): Generator<[IOutputList, number, IOutputJSON]> {
  for (const list of lists) {
    for (let i = 0; i < list.length; i++) {
      yield [list, i, list.get(i).toJSON()];
    }
  }
}

/**
 * Put an iopub message of a request this page did not send where it belongs
 * (`lists`: the outputs of each code cell): an update replaces the outputs
 * with its display id, anything else joins the cell holding an output of the
 * same request. A cell holding none yet (an unsaved notebook reloaded, a tab
 * opened before the save) is found by the tag's cell id (`byCell`) and
 * cleared first, as running it would have. Returns whether it found a place.
 */
export function placeOutput(
  lists: readonly IOutputList[],
  msg: KernelMessage.IMessage,
  byCell: (cellId: string) => IOutputList | null = () => null
): boolean {
  const output = outputOf(msg);
  if (!output) {
    return false;
  }
  if (msg.header.msg_type === 'update_display_data') {
    const transient = (msg.content as JSONObject).transient;
    const displayId = isObject(transient) ? str(transient.display_id) : null;
    const targets = [...outputs(lists)].filter(
      ([, , shown]) => displayId && outputTag(shown)?.displayId === displayId
    );
    targets.forEach(([list, index]) => list.set(index, output));
    if (targets.length > 0 || !outputTag(output)) {
      return targets.length > 0;
    }
    // A Co output shown before this page loaded (an unsaved reload): the
    // update is its latest state, so it joins the cell as a new output.
  }
  const request = (msg.parent_header as Partial<KernelMessage.IHeader>).msg_id;
  for (const [list, , shown] of outputs(lists)) {
    if (request && outputTag(shown)?.request === request) {
      list.add(output);
      return true;
    }
  }
  const cellId = outputTag(output)?.cell;
  const cell = cellId ? byCell(cellId) : null;
  if (!cell) {
    return false;
  }
  cell.clear();
  cell.add(output);
  return true;
}

/**
 * Put the card of a call that waits (from the kernel's `co.approvals` comm)
 * into its cell, on a page that shows it nowhere: reloaded before the notebook
 * was saved, or a second tab opened before the save. It joins the outputs of
 * its request, or, the cell holding none yet, replaces the cell's outputs as
 * running it would have. Later updates find it by its display id. Returns
 * whether it placed the card.
 */
export function placeCard(
  lists: readonly IOutputList[],
  card: IOutputJSON,
  byCell: (cellId: string) => IOutputList | null
): boolean {
  const tag = outputTag(card);
  if (!tag?.displayId) {
    return false;
  }
  const shown = [...outputs(lists)].map(([list, , json]) => [
    list,
    outputTag(json)
  ]) as [IOutputList, IOutputTag | null][];
  if (shown.some(([, t]) => t?.displayId === tag.displayId)) {
    return false;
  }
  const sibling = shown.find(
    ([, t]) => tag.request && t?.request === tag.request
  );
  if (sibling) {
    sibling[0].add(card);
    return true;
  }
  const cell = tag.cell ? byCell(tag.cell) : null;
  if (!cell) {
    return false;
  }
  cell.clear();
  // Now the outputs of the kernel's run of this cell, which the page that ran it
  // renders as trusted (that is how its card's widget view is drawn). An
  // untrusted cell would show only the card's static HTML, without buttons.
  cell.trusted = true;
  cell.add(card);
  return true;
}

/**
 * The kernel restarted: its waiting calls and their widgets are gone. A
 * waiting approval card becomes its text record saying it was cancelled, a
 * decided one loses its (dead) widget view, and a tool call still waiting or
 * running is drawn interrupted. Returns how many outputs changed.
 */
export function cancelCards(lists: readonly IOutputList[]): number {
  let changed = 0;
  for (const [list, index, shown] of outputs(lists)) {
    const data = isObject(shown.data) ? shown.data : {};
    const tag = outputTag(shown);
    const call = data[TOOL_CALL_MIME];
    if (tag?.approval && WIDGET_VIEW_MIME in data) {
      const rest: JSONObject = { ...data };
      delete rest[WIDGET_VIEW_MIME];
      const waiting = tag.approval === 'waiting';
      const plain = str(data['text/plain']) ?? '';
      const metadata = isObject(shown.metadata) ? shown.metadata : {};
      list.set(index, {
        ...shown,
        data: waiting
          ? {
              'text/plain': plain.replace(/Decision: waiting$/, CANCELLED_TEXT),
              'text/html': cancelledCardHTML(plain)
            }
          : rest,
        metadata: waiting
          ? {
              ...metadata,
              [OUTPUT_TAG]: {
                ...(metadata[OUTPUT_TAG] as JSONObject),
                approval: 'cancelled'
              }
            }
          : metadata
      });
      changed++;
    } else if (
      isObject(call) &&
      (call.status === 'waiting' || call.status === 'running')
    ) {
      list.set(index, {
        ...shown,
        data: {
          ...data,
          [TOOL_CALL_MIME]: {
            ...call,
            status: 'interrupted',
            decision: call.decision ?? 'interrupted'
          }
        }
      });
      changed++;
    }
  }
  return changed;
}
