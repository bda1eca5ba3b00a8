/**
 * The activity panel (seed 003's "Agent Activity Monitor"): sessions, turns,
 * tool calls and their decisions from the audit log, with filters.
 */
import { Widget } from '@lumino/widgets';

import type {
  IActivityQuery,
  IActivityResponse,
  IActivityRow,
  ISessionSummary
} from './api';
import {
  decisionAllows,
  decisionLabel,
  decisionTitle,
  decisionTone,
  formatTime
} from './format';
import { ACTIVITY_TITLE } from './keys';

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

/** The sessions table; a click on a row picks that session. */
export function renderSessions(
  sessions: ISessionSummary[],
  selected: string | undefined,
  onPick: (sessionId: string) => void,
  doc: Document = document,
  now: Date = new Date()
): HTMLTableElement {
  const { table: node, body } = table(doc, 'co-Activity-sessions', [
    'Session',
    'First',
    'Last',
    'Turns',
    'Calls',
    'Refused',
    'Cost'
  ]);
  for (const s of sessions) {
    const row = body.insertRow();
    row.dataset.session = s.session_id;
    row.title = `Show only session ${s.session_id}`;
    if (s.session_id === selected) {
      row.classList.add('co-mod-selected');
    }
    row.append(
      cell(doc, 'td', shortId(s.session_id), 'co-Activity-mono'),
      cell(doc, 'td', formatTime(s.first, now)),
      cell(doc, 'td', formatTime(s.last, now)),
      cell(doc, 'td', String(s.turns)),
      cell(doc, 'td', String(s.calls)),
      cell(doc, 'td', String(s.refused)),
      cell(doc, 'td', s.cost ?? '—')
    );
    row.addEventListener('click', () => onPick(s.session_id));
  }
  return node;
}

/** The tool-call table, newest first. */
export function renderRows(
  rows: IActivityRow[],
  doc: Document = document,
  now: Date = new Date()
): HTMLTableElement {
  const { table: node, body } = table(doc, 'co-Activity-calls', [
    'Time',
    'Session',
    'Turn',
    'Tool',
    'Target',
    'Decision',
    'Status',
    'Duration',
    'Detail'
  ]);
  for (const r of rows) {
    const row = body.insertRow();
    row.dataset.tool = r.tool;
    row.dataset.decision = r.decision;
    const decision = cell(
      doc,
      'td',
      decisionLabel(r.decision),
      'co-Activity-decision'
    );
    decision.dataset.allowed = String(decisionAllows(r.decision));
    decision.dataset.tone = decisionTone(r.decision);
    decision.title = decisionTitle(r.decision) ?? r.decision;
    const target = cell(doc, 'td', r.target ?? '', 'co-Activity-mono');
    target.title = r.target ?? '';
    row.append(
      cell(doc, 'td', formatTime(r.ts, now)),
      cell(doc, 'td', shortId(r.session_id), 'co-Activity-mono'),
      cell(doc, 'td', String(r.turn)),
      cell(doc, 'td', r.tool, 'co-Activity-mono'),
      target,
      decision,
      cell(doc, 'td', r.status),
      cell(
        doc,
        'td',
        r.duration_ms === null ? '' : `${Math.round(r.duration_ms)} ms`
      ),
      cell(doc, 'td', r.detail ?? '')
    );
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
        ...data.sessions.map(
          s => [shortId(s.session_id), s.session_id] as [string, string]
        )
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
