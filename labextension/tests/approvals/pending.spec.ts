import { describe, expect, it } from 'vitest';

import { parseApprovals, renderPending } from '../../src/approvals/pending';

const MESSAGE = {
  pending: [
    {
      id: 'a1',
      call_id: 'c1',
      tool: 'write_file',
      arguments: 'path: notes.txt',
      detail: '+hello',
      agent: null,
      rule: 'write_file(notes.txt)',
      output: {
        output_type: 'display_data',
        data: { 'text/plain': 'Co wants to run write_file' },
        metadata: { co: { approval: 'waiting', display_id: 'a1' } }
      }
    },
    { tool: 'no id: dropped' }
  ],
  decided: [{ id: 'a0', tool: 'run_shell_command', decision: 'denied' }]
};

describe('pending approvals', () => {
  it('reads the kernel comm message, skipping what it cannot use', () => {
    expect(parseApprovals(MESSAGE)).toEqual({
      pending: [
        {
          id: 'a1',
          tool: 'write_file',
          arguments: 'path: notes.txt',
          detail: '+hello',
          agent: null,
          output: {
            output_type: 'display_data',
            data: { 'text/plain': 'Co wants to run write_file' },
            metadata: { co: { approval: 'waiting', display_id: 'a1' } }
          }
        }
      ],
      decided: [
        {
          id: 'a0',
          tool: 'run_shell_command',
          decision: 'denied',
          text: 'denied',
          reason: null
        }
      ]
    });
    expect(parseApprovals({ error: 'nope' })).toBeNull();
    expect(parseApprovals('text')).toBeNull();
  });

  it('draws each call with its buttons, answering once per call', () => {
    const node = document.createElement('div');
    const answers: string[] = [];
    renderPending(
      node,
      parseApprovals(MESSAGE)!.pending,
      (id, choice) => answers.push(`${id}:${choice}`),
      () => true // jsdom's clicks are never trusted; guard.spec tests that
    );
    expect(node.querySelector('.co-Pending-title')?.textContent).toBe(
      '✋ Co wants to run write_file'
    );
    expect(node.textContent).toContain('path: notes.txt');
    expect(node.querySelector('.co-Pending-detail')?.textContent).toBe(
      '+hello'
    );
    const deny = node.querySelector<HTMLButtonElement>('.co-Pending-deny')!;
    deny.click();
    node.querySelector<HTMLButtonElement>('.co-Pending-approve')!.click();
    expect(answers).toEqual(['a1:deny']);
  });

  it('decides nothing for a scripted click', () => {
    const node = document.createElement('div');
    const answers: string[] = [];
    renderPending(node, parseApprovals(MESSAGE)!.pending, (id, choice) =>
      answers.push(`${id}:${choice}`)
    );
    const approve = node.querySelector<HTMLButtonElement>(
      '.co-Pending-approve'
    )!;
    approve.click();
    approve.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(answers).toEqual([]);
    expect(approve.disabled).toBe(false);
  });

  it('says when nothing waits', () => {
    const node = document.createElement('div');
    renderPending(node, [], () => undefined);
    expect(node.textContent).toBe('No Co tool call is waiting for approval.');
  });
});
