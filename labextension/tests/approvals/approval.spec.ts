import { describe, expect, it } from 'vitest';

import {
  findApprovalButton,
  findPendingButton
} from '../../src/approvals/approval';

/** An output area holding an approval card the way ipywidgets renders it. */
function cell(
  disabled = false,
  labels = ['Approve', 'Deny', 'Approve all']
): HTMLElement {
  const node = document.createElement('div');
  node.className = 'jp-Cell';
  const output = document.createElement('div');
  output.className = 'jp-OutputArea-output';
  for (const label of labels) {
    const button = document.createElement('button');
    button.className = 'jupyter-widgets jupyter-button widget-button';
    button.innerHTML = '<i class="fa"></i>';
    button.appendChild(document.createTextNode(label));
    button.disabled = disabled;
    output.appendChild(button);
  }
  node.appendChild(output);
  return node;
}

describe('finding the pending approval', () => {
  it('finds each answer by its exact label', () => {
    const root = cell();
    expect(findApprovalButton(root, 'approve')?.textContent).toBe('Approve');
    expect(findApprovalButton(root, 'deny')?.textContent).toBe('Deny');
    expect(findApprovalButton(root, 'approve_all')?.textContent).toBe(
      'Approve all'
    );
  });

  it('ignores answered (disabled) cards', () => {
    expect(findApprovalButton(cell(true), 'approve')).toBeNull();
  });

  it('ignores buttons outside outputs', () => {
    const root = document.createElement('div');
    const toolbar = document.createElement('button');
    toolbar.textContent = 'Approve';
    root.appendChild(toolbar);
    expect(findApprovalButton(root, 'approve')).toBeNull();
  });

  it('looks in the active cell first, then the others', () => {
    const answered = cell(true);
    const running = cell();
    const active = cell();
    expect(findPendingButton([active, answered, running], 'deny')).toBe(
      findApprovalButton(active, 'deny')
    );
    expect(
      findPendingButton(
        [document.createElement('div'), answered, running],
        'deny'
      )
    ).toBe(findApprovalButton(running, 'deny'));
    expect(findPendingButton([answered], 'deny')).toBeNull();
  });

  it('presses the button it finds', () => {
    const root = cell();
    const clicks: string[] = [];
    root.addEventListener('click', event =>
      clicks.push((event.target as HTMLElement).textContent ?? '')
    );
    findPendingButton([root], 'approve')!.click();
    expect(clicks).toEqual(['Approve']);
  });
});
