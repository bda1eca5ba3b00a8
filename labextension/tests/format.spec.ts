import { describe, expect, it } from 'vitest';

import { parseCoStatus } from '../src/api';
import {
  decisionAllows,
  decisionLabel,
  decisionTitle,
  formatArgs,
  formatCount,
  formatDuration,
  formatTime,
  shortArgs,
  statusText,
  statusTitle,
  waitingText
} from '../src/format';

describe('numbers and durations', () => {
  it('abbreviates large counts', () => {
    expect([0, 999, 1000, 1234, 12_345, 1_234_567].map(formatCount)).toEqual([
      '0',
      '999',
      '1.0k',
      '1.2k',
      '12k',
      '1.2M'
    ]);
  });

  it('writes durations for people', () => {
    expect(formatDuration(0.421)).toBe('0.42 s');
    expect(formatDuration(12.34)).toBe('12.3 s');
    expect(formatDuration(125)).toBe('2 min 5 s');
  });

  it('writes today as a time and other days with the date', () => {
    const now = new Date(2026, 0, 15, 12, 0, 0);
    const today = new Date(2026, 0, 15, 9, 5, 7).getTime() / 1000;
    const earlier = new Date(2025, 11, 31, 23, 59, 0).getTime() / 1000;
    expect(formatTime(today, now)).toBe('09:05:07');
    expect(formatTime(earlier, now)).toBe('2025-12-31 23:59');
  });
});

describe('arguments', () => {
  it('pretty-prints objects and JSON text, keeps broken JSON as sent', () => {
    expect(formatArgs({ a: 1 })).toBe('{\n  "a": 1\n}');
    expect(formatArgs('{"a":1}')).toBe('{\n  "a": 1\n}');
    expect(formatArgs('{"a":')).toBe('{"a":');
    expect(formatArgs(null)).toBe('{}');
  });

  it('shortens to one line', () => {
    expect(shortArgs({ cmd: 'ls\n-la', n: 3 })).toBe("cmd='ls -la', n=3");
    expect(shortArgs({ text: 'x'.repeat(100) }, 20)).toBe(
      `text='${'x'.repeat(13)}…`
    );
    expect(shortArgs(null)).toBe('');
  });
});

describe('status bar text', () => {
  const status = parseCoStatus({
    version: '0.1.0',
    session_id: 'abc',
    model: 'compat:scripted',
    turns: 2,
    input_tokens: 1200,
    output_tokens: 34,
    yolo: true,
    approval_mode: 'ask'
  });

  it('shows model, session tokens and their cost', () => {
    expect(statusText(status)).toBe('Co · compat:scripted · 1.2k tokens');
    expect(statusText({ ...status!, cost: 'price unknown' })).toBe(
      'Co · compat:scripted · 1.2k tokens · price unknown'
    );
    expect(
      statusText({ ...status!, model: 'openai:gpt-4o', cost: '$0.0064' })
    ).toBe('Co · openai:gpt-4o · 1.2k tokens · $0.0064');
    expect(
      statusText({ ...status!, inputTokens: 0, outputTokens: 0, cost: '$0.00' })
    ).toBe('Co · compat:scripted · 0 tokens');
    expect(statusText(null)).toBe('Co');
    expect(statusText(parseCoStatus({ version: '0.1.0', model: null }))).toBe(
      'Co · no model · 0 tokens'
    );
  });

  it('names each tool waiting for approval once', () => {
    expect(waitingText(['write_file'])).toBe(
      'waiting for approval: write_file'
    );
    expect(waitingText(['write_file', 'run_shell_command', 'write_file'])).toBe(
      'waiting for approval: write_file, run_shell_command'
    );
  });

  it('spells the numbers out in the tooltip', () => {
    const title = statusTitle(status);
    expect(title).toContain('Model: compat:scripted');
    expect(title).toContain('Session tokens: 1,200 in, 34 out over 2 turn(s)');
    expect(statusTitle({ ...status!, cost: '$0.0064' })).toContain(
      'Session tokens: 1,200 in, 34 out over 2 turn(s), $0.0064'
    );
    expect(title).toContain('YOLO: every tool call is approved without asking');
  });
});

describe('decisions', () => {
  it('counts rule, always-allow and replayed approvals as allowed', () => {
    for (const d of [
      'approved',
      'always allowed',
      'allowed by rule `run_shell_command(git status*)` (user)',
      'approved (recorded)',
      'approved all (recorded)'
    ]) {
      expect(decisionAllows(d)).toBe(true);
    }
    for (const d of [
      'denied',
      'denied (recorded)',
      'timed out',
      'policy-denied'
    ]) {
      expect(decisionAllows(d)).toBe(false);
    }
  });

  it('labels a replayed decision as recorded, others as they are', () => {
    expect(decisionLabel('approved (recorded)')).toBe(
      'approved (recorded decision)'
    );
    expect(decisionLabel('denied (recorded)')).toBe(
      'denied (recorded decision)'
    );
    expect(decisionLabel('approved')).toBe('approved');
  });

  it('says plainly which cells of a proposal went in, as an approval', () => {
    expect(decisionLabel('approved (1 of 2 cells: 1)')).toBe(
      'applied 1 of 2 cells (cell 1)'
    );
    expect(decisionLabel('approved (2 of 3 cells: 1, 3)')).toBe(
      'applied 2 of 3 cells (cells 1, 3)'
    );
    expect(decisionAllows('approved (1 of 2 cells: 1)')).toBe(true);
    expect(decisionTitle('approved (1 of 2 cells: 1)')).toBe(
      'Approved in the notebook'
    );
  });

  it('titles a replayed decision as its original, from the script', () => {
    expect(decisionTitle('approved (recorded)')).toBe(
      'Approved in the notebook; taken from the replay script'
    );
    expect(decisionTitle('allowed by rule `web_search` (session)')).toBe(
      'Approved automatically by a permission rule'
    );
    expect(decisionTitle('something new')).toBeUndefined();
  });
});
