import { describe, expect, it } from 'vitest';

import { parseCoStatus } from '../../src/api';
import { renderStatus } from '../../src/status/item';

const STATUS = parseCoStatus({
  version: '0.1.0',
  model: 'compat:scripted',
  input_tokens: 10,
  output_tokens: 5,
  yolo: true
});

describe('status item', () => {
  it('shows the model, tokens and YOLO, and nothing waiting by default', () => {
    const node = document.createElement('div');
    renderStatus(node, STATUS);
    expect(node.querySelector('.co-StatusBar-text')?.textContent).toBe(
      'Co · compat:scripted · 15 tokens'
    );
    expect(node.querySelector('.co-StatusBar-yolo')?.textContent).toBe('YOLO');
    expect(node.querySelector('.co-StatusBar-waiting')).toBeNull();
    expect(node.dataset.waiting).toBe('false');
  });

  it('says which tool waits for approval until the wait is over', () => {
    const node = document.createElement('div');
    renderStatus(node, STATUS, ['run_shell_command']);
    expect(node.querySelector('.co-StatusBar-waiting')?.textContent).toBe(
      'waiting for approval: run_shell_command'
    );
    expect(node.dataset.waiting).toBe('true');
    renderStatus(node, STATUS, []);
    expect(node.querySelector('.co-StatusBar-waiting')).toBeNull();
    expect(node.dataset.waiting).toBe('false');
  });
});
