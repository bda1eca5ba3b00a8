import type { YCodeCell } from '@jupyter/ydoc';
import { YNotebook } from '@jupyter/ydoc';
import { describe, expect, it } from 'vitest';

import type { ISharedCells } from '../../src/outputs/notebook';
import {
  applyChanges,
  clipOutput,
  OUTPUT_CLIP,
  readCells
} from '../../src/outputs/notebook';

function notebook(): { doc: YNotebook; shared: ISharedCells } {
  const doc = YNotebook.create({});
  doc.insertCells(0, [
    { cell_type: 'markdown', source: '# Title', metadata: {} },
    { cell_type: 'code', source: 'ask me', metadata: {}, outputs: [] }
  ]);
  doc.undoManager.clear();
  return { doc, shared: doc as unknown as ISharedCells };
}

const sources = (doc: YNotebook): string[] =>
  doc.cells.map(cell => cell.getSource());

describe('the co.notebook comm', () => {
  it('reads every cell with its id and clipped outputs', () => {
    const { doc, shared } = notebook();
    (doc.cells[1] as YCodeCell).setOutputs([
      {
        output_type: 'display_data',
        data: { 'text/plain': 'x'.repeat(OUTPUT_CLIP + 50) },
        metadata: {}
      }
    ]);
    const cells = readCells(shared);
    expect(cells.map(c => c.source)).toEqual(['# Title', 'ask me']);
    expect(cells[0].id).toBe(doc.cells[0].id);
    const [output] = cells[1].outputs as Record<string, unknown>[];
    const text = (output.data as Record<string, string>)['text/plain'];
    expect(text.length).toBe(OUTPUT_CLIP);
  });

  it('drops tracebacks from error outputs', () => {
    expect(
      clipOutput({
        output_type: 'error',
        ename: 'E',
        evalue: 'v',
        traceback: ['long']
      })
    ).toEqual({ output_type: 'error', ename: 'E', evalue: 'v' });
  });

  it('applies several changes as one undo step', () => {
    const { doc, shared } = notebook();
    const [title, prompt] = doc.cells.map(c => c.id);
    const ids = applyChanges(shared, [
      {
        op: 'insert',
        index: 1,
        cells: [{ cell_type: 'code', source: '%%python\nx = 1' }]
      },
      { op: 'set', id: prompt, expect: 'ask me', source: 'ask again' },
      { op: 'move', id: title, expect: '# Title', to: 2 }
    ]);
    expect(ids).toHaveLength(1);
    expect(sources(doc)).toEqual(['%%python\nx = 1', 'ask again', '# Title']);
    doc.undo();
    expect(sources(doc)).toEqual(['# Title', 'ask me']);
  });

  it('refuses a change to a cell edited since it was read, changing nothing', () => {
    const { doc, shared } = notebook();
    const prompt = doc.cells[1].id;
    expect(() =>
      applyChanges(shared, [
        {
          op: 'insert',
          index: 0,
          cells: [{ cell_type: 'markdown', source: 'new' }]
        },
        { op: 'delete', id: prompt, expect: 'what the model read earlier' }
      ])
    ).toThrow(`cell ${prompt} changed since it was read`);
    expect(sources(doc)).toEqual(['# Title', 'ask me']);
  });
});
