import { describe, expect, it } from 'vitest';

import type { IActivityResponse, IActivityRow } from '../../src/api';
import {
  ActivityPanel,
  renderRows,
  renderSessions,
  sinceFor
} from '../../src/activity/panel';

const NOW = new Date(2026, 0, 15, 12, 0, 0);
const T = NOW.getTime() / 1000;

const ROW: IActivityRow = {
  id: 1,
  ts: T - 60,
  session_id: 'abcdef0123456789',
  turn: 3,
  tool: 'run_shell_command',
  action: 'call',
  target: 'ls -la',
  decision: 'approved',
  status: 'ok',
  result_size: 120,
  duration_ms: 41.6,
  detail: null
};

function texts(row: Element): string[] {
  return Array.from(row.querySelectorAll('td')).map(td => td.textContent ?? '');
}

describe('activity tables', () => {
  it('lists tool calls with their decisions', () => {
    const denied = {
      ...ROW,
      id: 2,
      decision: 'denied',
      status: 'denied',
      target: null
    };
    const table = renderRows([ROW, denied], document, NOW);
    const rows = table.querySelectorAll('tbody tr');
    expect(rows).toHaveLength(2);
    expect(texts(rows[0])).toEqual([
      '11:59:00',
      'abcdef01',
      '3',
      'run_shell_command',
      'ls -la',
      'approved · by you',
      'done',
      '42 ms',
      ''
    ]);
    const decisions = Array.from(
      table.querySelectorAll<HTMLElement>('.co-Activity-decision')
    );
    expect(decisions.map(d => d.dataset.allowed)).toEqual(['true', 'false']);
    expect(decisions.map(d => d.className)).toEqual([
      'co-Activity-decision co-verdict-approved',
      'co-Activity-decision co-verdict-denied'
    ]);
  });

  it('says a call waits, who decided it, and never done before it ran', () => {
    const rows: IActivityRow[] = [
      { ...ROW, decision: 'waiting', status: 'waiting', duration_ms: null },
      { ...ROW, decision: 'approved all', status: 'running' },
      { ...ROW, decision: 'yolo' },
      { ...ROW, decision: 'allowed by rule `Bash(ls:*)` (project)' },
      { ...ROW, decision: 'timed out', status: 'denied' },
      { ...ROW, decision: 'waiting', status: 'kernel ended' }
    ];
    const table = renderRows(rows, document, NOW);
    const cells = Array.from(table.querySelectorAll('tbody tr')).map(r =>
      texts(r).slice(5, 7)
    );
    expect(cells).toEqual([
      ['waiting for approval · nobody yet', 'waiting'],
      ['approved all · by you, Approve all', 'running'],
      ['yolo · by yolo', 'done'],
      ['allowed by rule `Bash(ls:*)` (project) · by a rule', 'done'],
      ['timed out (denied) · nobody answered', 'denied'],
      ['waiting for approval · nobody yet', 'kernel ended']
    ]);
    const kinds = Array.from(
      table.querySelectorAll<HTMLElement>('.co-Activity-decision')
    ).map(d => d.dataset.verdict);
    expect(kinds).toEqual([
      'waiting',
      'approved-all',
      'yolo',
      'rule',
      'timed-out',
      'waiting'
    ]);
  });

  it('words and colours each verdict as the cards do', () => {
    const rows = ['timed out', 'interrupted', 'approved (1 of 2 cells: 1)'].map(
      (decision, i) => ({ ...ROW, id: 10 + i, decision, status: 'denied' })
    );
    const table = renderRows(rows, document, NOW);
    const decisions = Array.from(
      table.querySelectorAll<HTMLElement>('.co-Activity-decision')
    );
    expect(decisions.map(d => [d.textContent, d.dataset.tone])).toEqual([
      ['timed out (denied) · nobody answered', 'danger'],
      ['interrupted · turn stopped', 'neutral'],
      ['applied 1 of 2 cells (cell 1) · by you', 'success']
    ]);
  });

  it('lists sessions and picks one on click', () => {
    const picked: string[] = [];
    const table = renderSessions(
      [
        {
          session_id: 's-one',
          first: T - 600,
          last: T - 60,
          turns: 2,
          calls: 5,
          refused: 1,
          notebook: 'work/analysis.ipynb',
          cost: '$0.0045'
        },
        {
          session_id: 's-two',
          first: T - 900,
          last: T - 800,
          turns: 1,
          calls: 1,
          refused: 0,
          notebook: null,
          console: true
        }
      ],
      's-two',
      id => picked.push(id),
      document,
      NOW
    );
    const rows = table.querySelectorAll<HTMLTableRowElement>('tbody tr');
    expect(texts(rows[0])).toEqual([
      's-one',
      'work/analysis.ipynb',
      '11:50:00',
      '11:59:00',
      '2',
      '5',
      '1',
      '$0.0045'
    ]);
    expect(texts(rows[1]).slice(-1)).toEqual(['—']);
    expect(texts(rows[1]).slice(0, 2)).toEqual(['s-two', 'console']);
    expect(rows[1].classList.contains('co-mod-selected')).toBe(true);
    rows[0].click();
    expect(picked).toEqual(['s-one']);
  });

  it('turns a time window into a since filter', () => {
    expect(sinceFor(3600, 10_000_000)).toBe(10_000 - 3600);
    expect(sinceFor(0, 10_000_000)).toBeUndefined();
  });
});

describe('activity panel', () => {
  const data: IActivityResponse = {
    db: '/home/me/.local/share/co/telemetry.db',
    rows: [ROW],
    sessions: [
      {
        session_id: ROW.session_id,
        first: ROW.ts,
        last: ROW.ts,
        turns: 1,
        calls: 1,
        refused: 0
      }
    ],
    tools: ['run_shell_command'],
    decisions: ['auto', 'approved', 'denied']
  };

  it('loads with the chosen filters and draws the answer', async () => {
    const queries: unknown[] = [];
    const panel = new ActivityPanel(async query => {
      queries.push(query);
      return data;
    });
    await panel.refresh();
    expect(
      panel.node.querySelectorAll('.co-Activity-calls tbody tr')
    ).toHaveLength(1);
    expect(panel.node.querySelector('.co-Activity-info')!.textContent).toBe(
      `1 call(s) · ${data.db}`
    );
    const decision = panel.node.querySelector<HTMLSelectElement>(
      'select[name=decision]'
    )!;
    expect(Array.from(decision.options).map(o => o.value)).toEqual([
      '',
      'auto',
      'approved',
      'denied'
    ]);
    decision.value = 'denied';
    decision.dispatchEvent(new Event('change'));
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(queries).toHaveLength(2);
    expect(queries[1]).toMatchObject({ decision: 'denied', limit: 500 });
    expect((queries[1] as { since: number }).since).toBeGreaterThan(0);
    panel.dispose();
  });

  it('shows a failed load in the panel', async () => {
    const panel = new ActivityPanel(async () => {
      throw new Error('403 Forbidden');
    });
    await panel.refresh();
    const info = panel.node.querySelector('.co-Activity-info')!;
    expect(info.textContent).toBe('Could not load the activity: 403 Forbidden');
    expect(info.classList.contains('co-mod-error')).toBe(true);
    panel.dispose();
  });

  it('says when nothing matches', async () => {
    const panel = new ActivityPanel(async () => ({
      ...data,
      rows: [],
      sessions: []
    }));
    await panel.refresh();
    expect(
      Array.from(panel.node.querySelectorAll('.co-Activity-empty')).map(
        p => p.textContent
      )
    ).toEqual([
      'No sessions in this time window.',
      'No tool calls match these filters.'
    ]);
    panel.dispose();
  });
});
