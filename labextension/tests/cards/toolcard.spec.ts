import { describe, expect, it } from 'vitest';

import { parseToolCall } from '../../src/api';
import { renderToolCard } from '../../src/cards/toolcard';

const DIFF = [
  '--- a/notes.md',
  '+++ b/notes.md',
  '@@ -1,3 +1,3 @@',
  ' # Notes',
  '-old line',
  '+new line',
  ' context',
  ''
].join('\n');

function bundle(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    call_id: 'call_1',
    tool: 'write_file',
    args: { path: 'notes.md', content: 'new' },
    status: 'ok',
    decision: 'approved',
    duration: 0.42,
    result: 'Wrote 3 lines to notes.md',
    detail: DIFF,
    needs_approval: true,
    ...extra
  };
}

function render(data: unknown, open = false): HTMLDetailsElement {
  return renderToolCard(parseToolCall(data), { open });
}

describe('renderToolCard', () => {
  it("keeps the call's own argument order from a saved notebook", () => {
    // nbformat saves an output's keys sorted; the kernel sends the order beside them.
    const saved = bundle({
      args: { content: 'new', path: 'notes.md' },
      arg_order: ['path', 'content']
    });
    const line = render(saved).querySelector('.co-ToolCard-argsLine')!;
    expect(line.textContent).toBe("(path='notes.md', content='new')");
  });

  it('calls a denied change what was proposed and not applied', () => {
    const card = render(bundle({ status: 'denied', decision: 'denied' }), true);
    const heading = card.querySelector(
      '.co-ToolCard-change .co-ToolCard-heading'
    );
    expect(heading!.textContent).toBe('Proposed change, not applied (+1 −1)');
  });

  it('words and colours a timed-out or interrupted decision as everywhere', () => {
    const timedOut = render(
      bundle({ status: 'denied', decision: 'timed out' })
    ).querySelector<HTMLElement>('.co-ToolCard-decision')!;
    expect(timedOut.textContent).toBe('timed out (denied)');
    expect(timedOut.dataset.tone).toBe('danger');
    const stopped = render(
      bundle({ status: 'interrupted', decision: 'interrupted', duration: null })
    );
    expect(stopped.querySelector('.co-ToolCard-decision')).toBeNull();
    expect(
      stopped.querySelector('.co-ToolCard-change .co-ToolCard-heading')!
        .textContent
    ).toBe('Proposed change, not applied (+1 −1)');
  });

  it('summarises tool, arguments, status, decision and duration on one line', () => {
    const card = render(bundle());
    const summary = card.querySelector('summary')!;
    expect(card.tagName).toBe('DETAILS');
    expect(card.open).toBe(false);
    expect(card.dataset.status).toBe('ok');
    expect(card.dataset.decision).toBe('approved');
    expect(summary.querySelector('.co-ToolCard-status')!.textContent).toBe(
      'done'
    );
    expect(summary.querySelector('.co-ToolCard-tool')!.textContent).toBe(
      'write_file'
    );
    expect(summary.querySelector('.co-ToolCard-argsLine')!.textContent).toBe(
      "(path='notes.md', content='new')"
    );
    const decision = summary.querySelector<HTMLElement>(
      '.co-ToolCard-decision'
    )!;
    expect(decision.textContent).toBe('approved');
    expect(decision.dataset.allowed).toBe('true');
    expect(decision.title).toBe('Approved in the notebook');
    expect(summary.querySelector('.co-ToolCard-duration')!.textContent).toBe(
      '0.42 s'
    );
  });

  it('shows arguments, the diff and the result in the body', () => {
    const card = render(bundle(), true);
    expect(card.open).toBe(true);
    const args = card.querySelector('.co-ToolCard-args pre')!;
    expect(JSON.parse(args.textContent!)).toEqual({
      path: 'notes.md',
      content: 'new'
    });
    const change = card.querySelector('.co-ToolCard-change')!;
    expect(change.querySelector('.co-ToolCard-heading')!.textContent).toBe(
      'Change (+1 −1)'
    );
    const kinds = Array.from(change.querySelectorAll('.co-Diff-line')).map(
      line => [
        line.className.replace('co-Diff-line co-Diff-', ''),
        line.textContent
      ]
    );
    expect(kinds).toEqual([
      ['meta', '--- a/notes.md'],
      ['meta', '+++ b/notes.md'],
      ['hunk', '@@ -1,3 +1,3 @@'],
      ['context', ' # Notes'],
      ['del', '-old line'],
      ['add', '+new line'],
      ['context', ' context']
    ]);
    expect(card.querySelector('.co-ToolCard-result pre')!.textContent).toBe(
      'Wrote 3 lines to notes.md'
    );
    expect(card.querySelector('.co-ToolCard-footer')!.textContent).toBe(
      'Decision: approved (Approved in the notebook)'
    );
  });

  it('marks a denied call and keeps its reason', () => {
    const card = render(
      bundle({
        status: 'denied',
        decision: 'denied',
        result: 'The user denied this call.'
      })
    );
    expect(card.dataset.status).toBe('denied');
    expect(card.querySelector('.co-ToolCard-status')!.textContent).toBe(
      'denied'
    );
    // The decision equals the status: the badge would only repeat it.
    expect(card.querySelector('.co-ToolCard-decision')).toBeNull();
    expect(card.querySelector('.co-ToolCard-result pre')!.textContent).toBe(
      'The user denied this call.'
    );
  });

  it('tells a person how to answer a waiting call', () => {
    const call = parseToolCall(
      bundle({
        status: 'waiting',
        decision: null,
        result: null,
        duration: null
      })
    );
    const card = renderToolCard(call, {
      open: false,
      shortcuts: { approve: 'Alt+Y', deny: 'Alt+N' }
    });
    expect(card.querySelector('.co-ToolCard-status')!.textContent).toBe(
      'waiting for approval'
    );
    expect(card.querySelector('.co-ToolCard-hint')!.textContent).toBe(
      'Waiting for your decision on the card below (Alt+Y approves, Alt+N denies).'
    );
    // The approval card shows them while it asks: a card waiting for a decision says
    // everything once, on the approval card, not twice.
    expect(card.querySelector('.co-ToolCard-args')).toBeNull();
    expect(card.querySelector('.co-ToolCard-change')).toBeNull();
    expect(card.querySelector('.co-ToolCard-result')).toBeNull();
    expect(card.querySelector('.co-ToolCard-duration')).toBeNull();
  });

  it('says "recorded decision" for a decision a replay took from its script', () => {
    const card = render(bundle({ decision: 'approved (recorded)' }));
    expect(card.querySelector('.co-ToolCard-decision')!.textContent).toBe(
      'approved (recorded decision)'
    );
    expect(card.querySelector('.co-ToolCard-footer')!.textContent).toContain(
      'Decision: approved (recorded decision)'
    );
  });

  it('shows non-diff detail as plain text', () => {
    const card = render(
      bundle({ detail: 'Sends 1 message to #general' }),
      true
    );
    const change = card.querySelector('.co-ToolCard-change')!;
    expect(change.querySelector('.co-ToolCard-heading')!.textContent).toBe(
      'Details'
    );
    expect(change.querySelector('.co-Diff')).toBeNull();
    expect(change.querySelector('pre')!.textContent).toBe(
      'Sends 1 message to #general'
    );
  });

  it('never interprets text as HTML', () => {
    const card = render(
      bundle({
        tool: '<img src=x onerror=alert(1)>',
        result: '<script>alert(1)</script>',
        detail: null
      }),
      true
    );
    expect(card.querySelector('img')).toBeNull();
    expect(card.querySelector('script')).toBeNull();
    expect(card.querySelector('.co-ToolCard-tool')!.textContent).toBe(
      '<img src=x onerror=alert(1)>'
    );
  });

  it('renders a bundle with missing or wrong fields', () => {
    const card = render({
      tool: 'search',
      status: 'exploded',
      args: '{"q": "x"'
    });
    expect(card.dataset.status).toBe('running');
    expect(card.querySelector('.co-ToolCard-argsLine')!.textContent).toBe(
      '({"q": "x")'
    );
    expect(card.querySelector('.co-ToolCard-args pre')!.textContent).toBe(
      '{"q": "x"'
    );
    expect(render(null).querySelector('.co-ToolCard-tool')!.textContent).toBe(
      'tool'
    );
  });

  it('reports expand and collapse', () => {
    const seen: boolean[] = [];
    const card = renderToolCard(parseToolCall(bundle()), {
      open: false,
      onToggle: open => seen.push(open)
    });
    card.open = true;
    card.dispatchEvent(new Event('toggle'));
    card.open = false;
    card.dispatchEvent(new Event('toggle'));
    expect(seen).toEqual([true, false]);
  });
});

describe('hidden characters', () => {
  it('are marked and warned about, also on a card no kernel marked', () => {
    // A saved notebook's card: raw bidi controls, no `hidden` from a kernel.
    const detail = DIFF.replace(
      '+new line',
      "+access = 'user' # \u202e } \u2066if admin"
    );
    const card = render(bundle({ detail, args: { path: 'a\u200bb.md' } }));
    const warning = card.querySelector('.co-ToolCard-hidden')!;
    expect(warning.textContent).toContain('U+202E');
    expect(warning.textContent).toContain('U+2066');
    expect(warning.textContent).toContain('U+200B');
    const text = card.textContent ?? '';
    expect(text).toContain("access = 'user' # ⟨U+202E⟩ } ⟨U+2066⟩if admin");
    expect(text).toContain('a⟨U+200B⟩b.md');
    expect(text).not.toMatch(/[\u202e\u2066\u200b]/);
  });

  it('names what the kernel found once, and nothing when there is nothing', () => {
    const marked = render(
      bundle({
        detail: DIFF.replace('+new line', '+x ⟨U+202E⟩'),
        hidden: ['U+202E RIGHT-TO-LEFT OVERRIDE']
      })
    );
    expect(marked.querySelector('.co-ToolCard-hidden')!.textContent).toContain(
      'U+202E RIGHT-TO-LEFT OVERRIDE.'
    );
    expect(render(bundle()).querySelector('.co-ToolCard-hidden')).toBeNull();
  });
});
