/**
 * Text for people: labels, numbers, durations and arguments, shared by the
 * card, the status bar and the activity panel.
 */
import type { ICoStatus, ToolStatus } from './api';
import type { Tone } from './approvals/approval';
import { VERDICTS } from './approvals/approval';

/** What each status reads as on a card. */
export const STATUS_LABELS: Record<ToolStatus, string> = {
  running: 'running',
  waiting: 'waiting for approval',
  ok: 'done',
  error: 'error',
  denied: 'denied',
  interrupted: 'interrupted'
};

/** What each decision means, for tooltips. */
export const DECISION_TITLES: Record<string, string> = {
  auto: 'No approval needed: the tool has no side effects',
  approved: 'Approved in the notebook',
  'approved all':
    'Approved in the notebook, with every later call of this session (yolo)',
  'always allowed':
    'Approved in the notebook with Always allow, which added a session rule',
  denied: 'Denied: the model was told and could propose something else',
  yolo: 'Approved automatically: session yolo is on',
  'safe-prefix': 'Approved automatically: a read-only command',
  'scope-refused': 'Refused: outside the allowed scope',
  'policy-denied': 'Refused by policy',
  interrupted: 'The turn was interrupted before a decision',
  'timed-out': 'Nobody answered in time: counted as denied',
  'timed out': 'Nobody answered in time: counted as denied',
  'rate-limited': 'Refused: a rate limit of this session was reached'
};

/** Decisions that let the call run. */
export const ALLOWED_DECISIONS = new Set([
  'auto',
  'approved',
  'approved all',
  'always allowed',
  'yolo',
  'safe-prefix'
]);

/** What a replay appends to a decision it took from its script. */
const RECORDED = ' (recorded)';
/** How the label of a call an allow rule approved starts. */
const BY_RULE = 'allowed by rule';

/** A call approved in part: `approved (2 of 3 cells: 1, 3)` (`partial_label`). */
const PARTIAL = / \((\d+) of (\d+) cells: ([\d, ]+)\)/;

function baseDecision(decision: string): string {
  const whole = decision.replace(PARTIAL, '');
  return whole.endsWith(RECORDED) ? whole.slice(0, -RECORDED.length) : whole;
}

/** What went in of a call approved in part, `applied 2 of 3 cells (cells 1, 3)`. */
function partialText(decision: string): string | null {
  const found = PARTIAL.exec(decision);
  if (!found) {
    return null;
  }
  const shown = found[3].trim();
  const which = shown.includes(',') ? 'cells' : 'cell';
  return `applied ${found[1]} of ${found[2]} cells (${which} ${shown})`;
}

/** Whether a decision let the call run (a replayed one as its recorded original). */
export function decisionAllows(decision: string): boolean {
  const base = baseDecision(decision);
  return ALLOWED_DECISIONS.has(base) || base.startsWith(BY_RULE);
}

/**
 * How a decision reads on a card: one a replay took from its script says
 * "recorded decision", e.g. `approved (recorded decision)`; one that
 * took some of a proposal's cells says which went in.
 */
export function decisionLabel(decision: string): string {
  const base = baseDecision(decision);
  const shown = partialText(decision) ?? VERDICTS[base]?.text ?? base;
  return decision.replace(PARTIAL, '').endsWith(RECORDED)
    ? `${shown} (recorded decision)`
    : shown;
}

/** A decision's colour, as the card and every list show it (approvals/approval.ts). */
export function decisionTone(decision: string): Tone {
  const known = VERDICTS[baseDecision(decision)];
  if (known) {
    return known.tone;
  }
  return decisionAllows(decision) ? 'success' : 'danger';
}

/** The tooltip of a decision, or undefined for one this extension does not know. */
export function decisionTitle(decision: string): string | undefined {
  const base = baseDecision(decision);
  const title = base.startsWith(BY_RULE)
    ? 'Approved automatically by a permission rule'
    : DECISION_TITLES[base];
  if (
    title === undefined ||
    !decision.replace(PARTIAL, '').endsWith(RECORDED)
  ) {
    return title;
  }
  return `${title}; taken from the replay script`;
}

/** 1234 -> "1.2k", 1234567 -> "1.2M"; small numbers stay exact. */
export function formatCount(n: number): string {
  if (n < 1000) {
    return String(Math.round(n));
  }
  if (n < 1_000_000) {
    return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  }
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** Seconds as "0.42 s", "12.3 s" or "2 min 5 s". */
export function formatDuration(seconds: number): string {
  if (seconds < 10) {
    return `${seconds.toFixed(2)} s`;
  }
  if (seconds < 60) {
    return `${seconds.toFixed(1)} s`;
  }
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${Math.round(seconds - minutes * 60)} s`;
}

/**
 * Characters a reader cannot see but a program reads: bidi controls (Trojan
 * Source), zero-width characters, the BOM, invisible operators, tag characters,
 * variation selectors but 15 and 16 (an emoji's own). The twin of
 * `co_kernel/frontend/_controls.py`: a saved notebook's card comes from its
 * file, not from a kernel that marked it.
 */
const HIDDEN: readonly (readonly [number, number])[] = [
  [0x00ad, 0x00ad],
  [0x034f, 0x034f],
  [0x061c, 0x061c],
  [0x115f, 0x1160],
  [0x180e, 0x180e],
  [0x200b, 0x200f],
  [0x202a, 0x202e],
  [0x2060, 0x2064],
  [0x2066, 0x2069],
  [0x3164, 0x3164],
  [0xfe00, 0xfe0d],
  [0xfeff, 0xfeff],
  [0xffa0, 0xffa0],
  [0xe0000, 0xe007f],
  [0xe0100, 0xe01ef]
];

function isHidden(code: number): boolean {
  return HIDDEN.some(([low, high]) => code >= low && code <= high);
}

function codePoint(code: number): string {
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** `text` with each hidden character shown as `⟨U+202E⟩` in its place. */
export function markHidden(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    out += isHidden(code) ? `⟨${codePoint(code)}⟩` : char;
  }
  return out;
}

/** The hidden characters in `text`, each once, as `U+202E`. */
export function hiddenCharacters(text: string): string[] {
  const found = new Set<string>();
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (isHidden(code)) {
      found.add(codePoint(code));
    }
  }
  return [...found];
}

/** One line that says which hidden characters were found; '' for none. */
export function hiddenWarning(found: string[]): string {
  if (found.length === 0) {
    return '';
  }
  const more = found.length > 5 ? ` and ${found.length - 5} more` : '';
  return (
    `⚠ Hidden characters, marked ⟨U+…⟩ where they are: ${found.slice(0, 5).join(', ')}${more}. ` +
    'They can make code or text read differently from what runs; check before approving.'
  );
}

/** Arguments pretty-printed, whatever form they arrived in. */
export function formatArgs(args: unknown): string {
  if (args === null || args === undefined) {
    return '{}';
  }
  if (typeof args === 'string') {
    try {
      return JSON.stringify(JSON.parse(args), null, 2);
    } catch {
      return args;
    }
  }
  return JSON.stringify(args, null, 2);
}

/** Arguments on one line, `key='text', n=3`, cut at `limit` characters. */
export function shortArgs(args: unknown, limit = 60): string {
  let value: unknown = args;
  if (typeof args === 'string') {
    try {
      value = JSON.parse(args);
    } catch {
      return cut(args.replace(/\s+/g, ' '), limit);
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return value === null || value === undefined
      ? ''
      : cut(JSON.stringify(value), limit);
  }
  const parts = Object.entries(value as Record<string, unknown>).map(
    ([key, val]) =>
      typeof val === 'string'
        ? `${key}='${val.replace(/\s+/g, ' ')}'`
        : `${key}=${JSON.stringify(val)}`
  );
  return cut(parts.join(', '), limit);
}

function cut(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

/** The status bar's text: `Co · provider:model · 1.2k tokens · $0.0123`. */
export function statusText(status: ICoStatus | null): string {
  if (status === null) {
    return 'Co';
  }
  const parts = ['Co', status.model ?? 'no model'];
  const tokens = status.inputTokens + status.outputTokens;
  parts.push(`${formatCount(tokens)} tokens`);
  // Nothing spent yet costs nothing: "price unknown" waits for the first tokens.
  if (status.cost && tokens > 0) {
    parts.push(status.cost);
  }
  return parts.join(' · ');
}

/** What waits for a decision: `waiting for approval: write_file, run_shell_command`. */
export function waitingText(tools: readonly string[]): string {
  return `waiting for approval: ${[...new Set(tools)].join(', ')}`;
}

/** The status bar's tooltip: the numbers in full. */
export function statusTitle(status: ICoStatus | null): string {
  if (status === null) {
    return 'Co kernel: waiting for its status';
  }
  const lines = [
    `Co ${status.version}`,
    `Model: ${status.model ?? 'not configured (use %model provider:model)'}`,
    `Session tokens: ${status.inputTokens.toLocaleString()} in, ` +
      `${status.outputTokens.toLocaleString()} out over ${status.turns} turn(s)` +
      (status.cost ? `, ${status.cost}` : ''),
    status.yolo
      ? 'YOLO: every tool call is approved without asking'
      : 'Tool calls with side effects ask for approval'
  ];
  if (status.sessionId) {
    lines.push(`Session ${status.sessionId}`);
  }
  if (status.error) {
    lines.push(`Problem: ${status.error}`);
  }
  return lines.join('\n');
}

/** A Unix time as local "HH:MM:SS" today, or "YYYY-MM-DD HH:MM" otherwise. */
export function formatTime(ts: number, now: Date = new Date()): string {
  const date = new Date(ts * 1000);
  const pad = (n: number): string => String(n).padStart(2, '0');
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}`;
  if (date.toDateString() === now.toDateString()) {
    return `${time}:${pad(date.getSeconds())}`;
  }
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${time}`;
}
