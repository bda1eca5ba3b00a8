/**
 * The activity panel (the agent's activity monitor): sessions, turns,
 * tool calls and their decisions from the audit log, with filters.
 */
import { Widget } from '@lumino/widgets';

import type {
  IActivityQuery,
  IActivityResponse,
  IActivityRow,
  ISessionSummary
} from '../api';
import {
  decisionAllows,
  decisionLabel,
  decisionTitle,
  decisionTone,
  formatTime
} from '../format';
import { ACTIVITY_TITLE } from '../keys';

/** The time windows the panel offers, in seconds (0 = all time). */
export const SINCE_CHOICES: ReadonlyArray<[string, number]> = [
  ['Last hour', 3600],
  ['Last 24 hours', 86400],
  ['Last 7 days', 7 * 86400],
  ['All time', 0]
];

/** The `since` filter for a window, relative to `now` (milliseconds). */
export function sinceFor(
  windowSeconds: number,
  now: number = Date.now()
): number | undefined {
  return windowSeconds > 0 ? now / 1000 - windowSeconds : undefined;
}

function cell(
  doc: Document,
  tag: 'td' | 'th',
  text: string,
  className?: string
): HTMLTableCellElement {
  const node = doc.createElement(tag);
  node.textContent = text;
  if (className) {
    node.className = className;
  }
  return node;
}

function table(
  doc: Document,
  className: string,
  headers: string[]
): { table: HTMLTableElement; body: HTMLTableSectionElement } {
  const node = doc.createElement('table');
  node.className = `co-Activity-table ${className}`;
  const head = node.createTHead().insertRow();
  for (const header of headers) {
    head.appendChild(cell(doc, 'th', header));
  }
  const body = node.createTBody();
  return { table: node, body };
}

/** A session id short enough for a table cell. */
export function shortId(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id;
}

/** What a session ran in: its notebook, else a console, else unknown. */
export function sessionPlace(s: {
  notebook?: string | null;
  console?: boolean;
}): string {
  if (s.notebook) {
    return s.notebook;
  }
  return s.console ? 'console' : '';
}

/**
 * One column of a table: its header, its cell's text and how the cell is
 * marked. A column is added by adding an entry to a table's list.
 */
export interface IColumn<T> {
  /** The header's text. */
  header: string;
  /** The cell's text. */
  text: (item: T, now: Date) => string;
  /** Class names of the cell. */
  className?: string;
  /** The cell's tooltip. */
  title?: (item: T) => string;
  /** Anything more the cell needs (classes, data attributes). */
  mark?: (node: HTMLTableCellElement, item: T) => void;
}

/** The sessions table's columns, left to right. */
export const SESSION_COLUMNS: IColumn<ISessionSummary>[] = [
  {
    header: 'Session',
    text: s => shortId(s.session_id),
    className: 'co-Activity-mono',
    title: s => `Show only session ${s.session_id}`
  },
  {
    header: 'Notebook',
    text: s => sessionPlace(s),
    className: 'co-Activity-notebook',
    title: s =>
      sessionPlace(s) ||
      'Not recorded (the session ran before Co named notebooks)'
  },
  { header: 'First', text: (s, now) => formatTime(s.first, now) },
  { header: 'Last', text: (s, now) => formatTime(s.last, now) },
  { header: 'Turns', text: s => String(s.turns) },
  { header: 'Calls', text: s => String(s.calls) },
  { header: 'Refused', text: s => String(s.refused) },
  {
    header: 'Cost',
    text: s => s.cost ?? '—',
    title: s => (s.cost ? 'What its turns cost' : 'No priced turn')
  }
];

function columnCell<T>(
  doc: Document,
  column: IColumn<T>,
  item: T,
  now: Date
): HTMLTableCellElement {
  const node = cell(doc, 'td', column.text(item, now), column.className);
  if (column.title) {
    node.title = column.title(item);
  }
  column.mark?.(node, item);
  return node;
}

/** The sessions table; a click on a row picks that session. */
export function renderSessions(
  sessions: ISessionSummary[],
  selected: string | undefined,
  onPick: (sessionId: string) => void,
  doc: Document = document,
  now: Date = new Date(),
  columns: readonly IColumn<ISessionSummary>[] = SESSION_COLUMNS
): HTMLTableElement {
  const { table: node, body } = table(
    doc,
    'co-Activity-sessions',
    columns.map(c => c.header)
  );
  for (const s of sessions) {
    const row = body.insertRow();
    row.dataset.session = s.session_id;
    row.title = `Show only session ${s.session_id}`;
    if (s.session_id === selected) {
      row.classList.add('co-mod-selected');
    }
    row.append(...columns.map(c => columnCell(doc, c, s, now)));
    row.addEventListener('click', () => onPick(s.session_id));
  }
  return node;
}

/**
 * The kind of a decision, for its cell's class `co-verdict-<kind>`: waiting,
 * approved, approved-all, rule, yolo, safe, auto, denied, timed-out,
 * interrupted or refused.
 */
export function verdictKind(decision: string): string {
  const base = decision.replace(/ \(recorded\)$/, '');
  if (base === 'waiting') {
    return 'waiting';
  }
  if (base === 'timed out' || base === 'timed-out') {
    return 'timed-out';
  }
  if (['denied', 'interrupted'].includes(base)) {
    return base;
  }
  if (base === 'approved all') {
    return 'approved-all';
  }
  if (base.startsWith('allowed by rule')) {
    return 'rule';
  }
  if (base === 'yolo') {
    return 'yolo';
  }
  if (base === 'safe-prefix') {
    return 'safe';
  }
  if (base === 'auto') {
    return 'auto';
  }
  if (decisionAllows(base) || base.startsWith('approved')) {
    return 'approved';
  }
  return 'refused';
}

/** Who or what took each kind of decision, as the panel says it. */
export const DECIDED_BY: Record<string, string> = {
  waiting: 'nobody yet',
  approved: 'by you',
  'approved-all': 'by you, Approve all',
  rule: 'by a rule',
  yolo: 'by yolo',
  safe: 'read-only command',
  auto: 'no approval needed',
  denied: 'by you',
  'timed-out': 'nobody answered',
  interrupted: 'turn stopped',
  refused: 'by a guard'
};

/** How a decision reads in the panel: the decision, then who took it. */
export function decisionText(decision: string): string {
  const kind = verdictKind(decision);
  const label =
    kind === 'waiting' ? 'waiting for approval' : decisionLabel(decision);
  return `${label} · ${DECIDED_BY[kind]}`;
}

/** What a call's status reads as: "waiting" before a decision, never "ok" before it ran. */
export const ROW_STATUS: Record<string, string> = {
  waiting: 'waiting',
  running: 'running',
  ok: 'done'
};

/** The tool-call table's columns, left to right. */
export const CALL_COLUMNS: IColumn<IActivityRow>[] = [
  { header: 'Time', text: (r, now) => formatTime(r.ts, now) },
  {
    header: 'Session',
    text: r => shortId(r.session_id),
    className: 'co-Activity-mono',
    title: r => (r.notebook ? `${r.session_id} (${r.notebook})` : r.session_id)
  },
  { header: 'Turn', text: r => String(r.turn) },
  { header: 'Tool', text: r => r.tool, className: 'co-Activity-mono' },
  {
    header: 'Target',
    text: r => r.target ?? '',
    className: 'co-Activity-mono co-Activity-target',
    title: r => r.target ?? ''
  },
  {
    header: 'Decision',
    text: r => decisionText(r.decision),
    title: r =>
      verdictKind(r.decision) === 'waiting'
        ? 'Waiting for a person to approve or deny it: the tool has not run'
        : (decisionTitle(r.decision) ?? r.decision),
    mark: (node, r) => {
      // Plain classes, so the one table of decision colours can style them.
      const kind = verdictKind(r.decision);
      node.className = `co-Activity-decision co-verdict-${kind}`;
      node.dataset.verdict = kind;
      // The colour of the decision language (approvals/approval.ts), as on the cards.
      node.dataset.tone =
        kind === 'waiting' ? 'neutral' : decisionTone(r.decision);
      node.dataset.allowed =
        kind === 'waiting' ? 'pending' : String(decisionAllows(r.decision));
    }
  },
  {
    header: 'Status',
    text: r => ROW_STATUS[r.status] ?? r.status,
    className: 'co-Activity-status'
  },
  {
    header: 'Duration',
    text: r => (r.duration_ms === null ? '' : `${Math.round(r.duration_ms)} ms`)
  },
  {
    header: 'Detail',
    text: r => r.detail ?? '',
    className: 'co-Activity-detail'
  }
];

/** The tool-call table, newest first. */
export function renderRows(
  rows: IActivityRow[],
  doc: Document = document,
  now: Date = new Date(),
  columns: readonly IColumn<IActivityRow>[] = CALL_COLUMNS
): HTMLTableElement {
  const { table: node, body } = table(
    doc,
    'co-Activity-calls',
    columns.map(c => c.header)
  );
  for (const r of rows) {
    const row = body.insertRow();
    row.dataset.tool = r.tool;
    row.dataset.decision = r.decision;
    row.dataset.status = r.status;
    row.append(...columns.map(c => columnCell(doc, c, r, now)));
  }
  return node;
}

function select(
  doc: Document,
  name: string,
  label: string
): { wrap: HTMLLabelElement; select: HTMLSelectElement } {
  const wrap = doc.createElement('label');
  wrap.className = 'co-Activity-filter';
  wrap.textContent = `${label} `;
  const node = doc.createElement('select');
  node.name = name;
  node.className = 'jp-mod-styled';
  wrap.appendChild(node);
  return { wrap, select: node };
}

function setOptions(
  node: HTMLSelectElement,
  choices: ReadonlyArray<[string, string]>,
  value: string
): void {
  const doc = node.ownerDocument;
  node.replaceChildren(
    ...choices.map(([text, v]) => {
      const option = doc.createElement('option');
      option.textContent = text;
      option.value = v;
      return option;
    })
  );
  node.value = choices.some(([, v]) => v === value) ? value : '';
}

/** Loads activity for a query; the plugin passes the server call. */
export type ActivityLoader = (
  query: IActivityQuery
) => Promise<IActivityResponse>;

/** The panel: filters on top, sessions, then the calls. */
export class ActivityPanel extends Widget {
  constructor(load: ActivityLoader) {
    super();
    this._load = load;
    this.id = 'co-activity';
    this.title.label = ACTIVITY_TITLE;
    this.title.caption =
      'Sessions, turns, tool calls and decisions from the audit log';
    this.title.closable = true;
    this.addClass('co-Activity');
    const doc = this.node.ownerDocument;

    // Notebook 7's side panel shows no tab: the panel names itself.
    const heading = doc.createElement('h2');
    heading.className = 'co-Activity-title';
    heading.textContent = ACTIVITY_TITLE;
    const bar = doc.createElement('div');
    bar.className = 'co-Activity-toolbar';
    const session = select(doc, 'session', 'Session');
    const tool = select(doc, 'tool', 'Tool');
    const decision = select(doc, 'decision', 'Decision');
    const since = select(doc, 'since', 'Time');
    setOptions(
      since.select,
      SINCE_CHOICES.map(([text, secs]) => [text, String(secs)]),
      String(86400)
    );
    this._selects = {
      session: session.select,
      tool: tool.select,
      decision: decision.select,
      since: since.select
    };
    for (const s of Object.values(this._selects)) {
      s.addEventListener('change', () => void this.refresh());
    }
    const refresh = doc.createElement('button');
    refresh.className = 'jp-mod-styled jp-mod-accept co-Activity-refresh';
    refresh.textContent = 'Refresh';
    refresh.addEventListener('click', () => void this.refresh());
    this._info = doc.createElement('span');
    this._info.className = 'co-Activity-info';
    bar.append(
      session.wrap,
      tool.wrap,
      decision.wrap,
      since.wrap,
      refresh,
      this._info
    );

    this._sessions = doc.createElement('div');
    this._sessions.className = 'co-Activity-sessionsWrap';
    this._calls = doc.createElement('div');
    this._calls.className = 'co-Activity-callsWrap';
    const sessionsTitle = doc.createElement('h3');
    sessionsTitle.textContent = 'Sessions';
    const callsTitle = doc.createElement('h3');
    callsTitle.textContent = 'Tool calls and decisions';
    this.node.append(
      heading,
      bar,
      sessionsTitle,
      this._sessions,
      callsTitle,
      this._calls
    );
  }

  /** The filters as chosen in the toolbar. */
  get query(): IActivityQuery {
    const windowSeconds = Number(this._selects.since.value || 0);
    return {
      session: this._selects.session.value || undefined,
      tool: this._selects.tool.value || undefined,
      decision: this._selects.decision.value || undefined,
      since: sinceFor(windowSeconds),
      limit: 500
    };
  }

  /** Load and draw; a failure is shown in the panel, never thrown. */
  async refresh(): Promise<void> {
    const query = this.query;
    this.node.dataset.loading = 'true';
    try {
      const data = await this._load(query);
      this._draw(data, query);
    } catch (error) {
      this._info.textContent = `Could not load the activity: ${
        (error as Error).message ?? error
      }`;
      this._info.classList.add('co-mod-error');
    } finally {
      delete this.node.dataset.loading;
    }
  }

  private _draw(data: IActivityResponse, query: IActivityQuery): void {
    const doc = this.node.ownerDocument;
    const any: [string, string] = ['Any', ''];
    setOptions(
      this._selects.session,
      [
        any,
        ...data.sessions.map(s => {
          const place = sessionPlace(s);
          const text = place
            ? `${shortId(s.session_id)} · ${place}`
            : shortId(s.session_id);
          return [text, s.session_id] as [string, string];
        })
      ],
      query.session ?? ''
    );
    setOptions(
      this._selects.tool,
      [any, ...data.tools.map(t => [t, t] as [string, string])],
      query.tool ?? ''
    );
    setOptions(
      this._selects.decision,
      [any, ...data.decisions.map(d => [d, d] as [string, string])],
      query.decision ?? ''
    );
    this._sessions.replaceChildren(
      data.sessions.length
        ? renderSessions(
            data.sessions,
            query.session,
            id => {
              this._selects.session.value =
                this._selects.session.value === id ? '' : id;
              void this.refresh();
            },
            doc
          )
        : this._empty('No sessions in this time window.')
    );
    this._calls.replaceChildren(
      data.rows.length
        ? renderRows(data.rows, doc)
        : this._empty('No tool calls match these filters.')
    );
    this._info.classList.remove('co-mod-error');
    this._info.textContent = `${data.rows.length} call(s) · ${data.db}`;
  }

  private _empty(text: string): HTMLElement {
    const node = this.node.ownerDocument.createElement('p');
    node.className = 'co-Activity-empty';
    node.textContent = text;
    return node;
  }

  private _load: ActivityLoader;
  private _selects: Record<
    'session' | 'tool' | 'decision' | 'since',
    HTMLSelectElement
  >;
  private _info: HTMLSpanElement;
  private _sessions: HTMLDivElement;
  private _calls: HTMLDivElement;
}
