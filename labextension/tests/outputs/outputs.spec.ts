import type { KernelMessage } from '@jupyterlab/services';
import { describe, expect, it } from 'vitest';

import { TOOL_CALL_MIME } from '../../src/api';
import type { IOutputJSON, IOutputList } from '../../src/outputs/outputs';
import {
  CANCELLED_TEXT,
  WIDGET_VIEW_MIME,
  cancelCards,
  cancelledCardHTML,
  outputTag,
  placeCard,
  placeOutput
} from '../../src/outputs/outputs';

/** A cell's outputs, as JupyterLab's output area model keeps them. */
class Outputs implements IOutputList {
  constructor(public items: IOutputJSON[] = []) {}
  trusted = false;
  get length(): number {
    return this.items.length;
  }
  get(index: number): { toJSON(): IOutputJSON } {
    const item = this.items[index];
    return { toJSON: () => item };
  }
  set(index: number, output: IOutputJSON): void {
    this.items[index] = output;
  }
  add(output: IOutputJSON): number {
    return this.items.push(output);
  }
  clear(): void {
    this.items = [];
  }
}

function message(
  type: string,
  content: Record<string, unknown>,
  request = 'req-1'
): KernelMessage.IMessage {
  return {
    channel: 'iopub',
    header: { msg_id: `m-${Math.random()}`, msg_type: type, session: 'k' },
    parent_header: { msg_id: request, session: 'other-page' },
    metadata: {},
    content
  } as unknown as KernelMessage.IMessage;
}

function shown(
  data: Record<string, unknown>,
  tag: Record<string, unknown>
): IOutputJSON {
  return { output_type: 'display_data', data, metadata: { co: tag } };
}

describe('outputs of a turn another page started', () => {
  const chip = (status: string): IOutputJSON =>
    shown(
      { [TOOL_CALL_MIME]: { call_id: 'c1', tool: 'run', status } },
      { request: 'req-1', display_id: 'chip' }
    );

  it('replaces the output an update names and adds the rest to its cell', () => {
    const other = new Outputs([
      shown({ 'text/plain': 'x' }, { request: 'req-0', display_id: 'a' })
    ]);
    const cell = new Outputs([chip('waiting')]);
    const update = message('update_display_data', {
      data: { [TOOL_CALL_MIME]: { call_id: 'c1', tool: 'run', status: 'ok' } },
      metadata: { co: { request: 'req-1', display_id: 'chip' } },
      transient: { display_id: 'chip' }
    });
    expect(placeOutput([other, cell], update)).toBe(true);
    expect(cell.items[0].data).toEqual({
      [TOOL_CALL_MIME]: { call_id: 'c1', tool: 'run', status: 'ok' }
    });
    const answer = message('display_data', {
      data: { 'text/markdown': 'Done.' },
      metadata: { co: { request: 'req-1', display_id: 'answer' } },
      transient: { display_id: 'answer' }
    });
    expect(placeOutput([other, cell], answer)).toBe(true);
    expect(cell.items).toHaveLength(2);
    expect(other.items).toHaveLength(1);
    // The saved form keeps the tag (metadata), never the transient part.
    expect(outputTag(cell.items[1])?.displayId).toBe('answer');
    expect(cell.items[1]).not.toHaveProperty('transient');
    expect(
      placeOutput(
        [other, cell],
        message('stream', { name: 'stdout', text: 'hi' })
      )
    ).toBe(true);
    expect(cell.items[2]).toEqual({
      output_type: 'stream',
      name: 'stdout',
      text: 'hi'
    });
  });

  it('finds by its cell id a cell that holds nothing of the turn yet', () => {
    const stale = new Outputs([
      shown({ 'text/plain': 'old' }, { request: 'req-0', cell: 'c-1' })
    ]);
    const answer = message('display_data', {
      data: { 'text/markdown': 'Done.' },
      metadata: { co: { request: 'req-1', display_id: 'a', cell: 'c-1' } },
      transient: { display_id: 'a' }
    });
    const byCell = (id: string): Outputs | null =>
      id === 'c-1' ? stale : null;
    expect(placeOutput([stale], answer, byCell)).toBe(true);
    // Cleared first, as running the cell would have; then the turn's output.
    expect(stale.items.map(o => outputTag(o)?.request)).toEqual(['req-1']);
    const footer = message('display_data', {
      data: { 'text/plain': 'footer' },
      metadata: { co: { request: 'req-1', display_id: 'f', cell: 'c-1' } }
    });
    expect(placeOutput([stale], footer, byCell)).toBe(true);
    expect(stale.items).toHaveLength(2);
    const elsewhere = message(
      'display_data',
      {
        data: { 'text/plain': 'x' },
        metadata: { co: { request: 'req-2', cell: 'c-9' } }
      },
      'req-2'
    );
    expect(placeOutput([stale], elsewhere, byCell)).toBe(false);
  });

  it('adds an update of an output shown before the page loaded', () => {
    const empty = new Outputs([]);
    const card = message('update_display_data', {
      data: { 'text/plain': 'approved' },
      metadata: {
        co: { request: 'req-1', display_id: 'card', cell: 'c-1', count: 3 }
      },
      transient: { display_id: 'card' }
    });
    const chipUpdate = message('update_display_data', {
      data: { 'text/plain': 'ok' },
      metadata: { co: { request: 'req-1', display_id: 'chip', cell: 'c-1' } },
      transient: { display_id: 'chip' }
    });
    const byCell = (id: string): Outputs | null =>
      id === 'c-1' ? empty : null;
    expect(placeOutput([empty], card, byCell)).toBe(true);
    expect(placeOutput([empty], chipUpdate, byCell)).toBe(true);
    expect(empty.items.map(o => outputTag(o)?.displayId)).toEqual([
      'card',
      'chip'
    ]);
    expect(outputTag(empty.items[0])?.count).toBe(3);
  });

  it('leaves alone what belongs to no cell on the page', () => {
    const cell = new Outputs([chip('waiting')]);
    const stranger = message(
      'display_data',
      { data: { 'text/plain': 'x' }, metadata: {} },
      'req-9'
    );
    expect(placeOutput([cell], stranger)).toBe(false);
    const unknownUpdate = message('update_display_data', {
      data: { 'text/plain': 'x' },
      metadata: {},
      transient: { display_id: 'nowhere' }
    });
    expect(placeOutput([cell], unknownUpdate)).toBe(false);
    expect(
      placeOutput([cell], message('status', { execution_state: 'idle' }))
    ).toBe(false);
    expect(cell.items).toEqual([chip('waiting')]);
  });
});

describe('cards of a kernel that restarted', () => {
  const card = (approval: string, plain: string): IOutputJSON =>
    shown(
      {
        [WIDGET_VIEW_MIME]: { model_id: 'w1' },
        'text/html': '<div class="co-approval">…</div>',
        'text/plain': plain
      },
      { request: 'req-1', display_id: 'card', approval }
    );

  it('draws a waiting card cancelled and a decided one without its widgets', () => {
    const cell = new Outputs([
      card('waiting', 'Co wants to run run_shell_command\nDecision: waiting'),
      card('approved', 'Co wants to run ls\nDecision: ✅ Approved'),
      shown({ 'text/markdown': 'Hi' }, { request: 'req-1', display_id: 'm' })
    ]);
    expect(cancelCards([cell])).toBe(2);
    expect(cell.items[0].data).toEqual({
      'text/plain': `Co wants to run run_shell_command\n${CANCELLED_TEXT}`,
      'text/html': cancelledCardHTML('Co wants to run run_shell_command')
    });
    // A card the page renders, not monospace text, whose text is escaped.
    expect(cancelledCardHTML('Co wants to run <x>:\n  {}')).toContain(
      '<b>⏹ Cancelled (the kernel restarted)</b> — Co asked to run &lt;x&gt;</div>'
    );
    expect(outputTag(cell.items[0])?.approval).toBe('cancelled');
    expect(outputTag(cell.items[0])?.displayId).toBe('card');
    expect(cell.items[1].data).toEqual({
      'text/html': '<div class="co-approval">…</div>',
      'text/plain': 'Co wants to run ls\nDecision: ✅ Approved'
    });
    expect(cell.items[2].data).toEqual({ 'text/markdown': 'Hi' });
    // Done once: nothing left to change.
    expect(cancelCards([cell])).toBe(0);
  });

  it('draws a tool call still waiting or running as interrupted', () => {
    const cell = new Outputs([
      shown(
        {
          [TOOL_CALL_MIME]: { tool: 'run', status: 'waiting', decision: null }
        },
        {}
      ),
      shown(
        {
          [TOOL_CALL_MIME]: {
            tool: 'run',
            status: 'running',
            decision: 'approved'
          }
        },
        {}
      ),
      shown({ [TOOL_CALL_MIME]: { tool: 'run', status: 'ok' } }, {})
    ]);
    expect(cancelCards([cell])).toBe(2);
    const calls = cell.items.map(
      o => (o.data as Record<string, Record<string, unknown>>)[TOOL_CALL_MIME]
    );
    expect(calls.map(c => [c.status, c.decision])).toEqual([
      ['interrupted', 'interrupted'],
      ['interrupted', 'approved'],
      ['ok', undefined]
    ]);
  });
});

describe('the card of a call that waits, on a page that lacks it', () => {
  const card = shown(
    { 'text/html': '<div class="co-approval">✋ Co wants to run x</div>' },
    { approval: 'waiting', request: 'req-1', display_id: 'd-1', cell: 'c-2' }
  );

  it('replaces the outputs of its cell, found by the cell id', () => {
    const first = new Outputs();
    const second = new Outputs([shown({ 'text/plain': 'old' }, {})]);
    const cells: Record<string, Outputs> = { 'c-1': first, 'c-2': second };
    expect(placeCard([first, second], card, id => cells[id] ?? null)).toBe(
      true
    );
    expect(second.items).toEqual([card]);
    expect(second.trusted).toBe(true);
    expect(first.items).toEqual([]);
  });

  it('joins the outputs of its request, and is placed once', () => {
    const answer = shown(
      { 'text/plain': 'I will run x' },
      { request: 'req-1' }
    );
    const cell = new Outputs([answer]);
    expect(placeCard([cell], card, () => null)).toBe(true);
    expect(placeCard([cell], card, () => cell)).toBe(false);
    expect(cell.items).toEqual([answer, card]);
  });

  it('leaves a page that shows it (the asking page, a saved notebook) alone', () => {
    const cell = new Outputs([card]);
    expect(placeCard([cell], card, () => cell)).toBe(false);
    expect(cell.items).toEqual([card]);
  });
});
