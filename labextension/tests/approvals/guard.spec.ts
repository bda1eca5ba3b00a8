import { afterEach, describe, expect, it } from 'vitest';

import {
  CARD_CLASS,
  cardAnswer,
  choiceOf,
  installApprovalGuard,
  pendingIdOf
} from '../../src/approvals/guard';

/** An approval card the way ipywidgets renders the kernel's VBox and buttons. */
function card(
  id = 'q1',
  labels = ['Approve', 'Deny', 'Approve all']
): HTMLElement {
  const box = document.createElement('div');
  box.className = `widget-vbox ${CARD_CLASS} ${CARD_CLASS}-${id}`;
  for (const label of labels) {
    const button = document.createElement('button');
    button.className = 'jupyter-widgets jupyter-button widget-button';
    button.innerHTML = '<i class="fa"></i>';
    button.appendChild(document.createTextNode(label));
    box.appendChild(button);
  }
  document.body.appendChild(box);
  return box;
}

function button(box: HTMLElement, label: string): HTMLButtonElement {
  return Array.from(box.querySelectorAll('button')).find(
    b => b.textContent?.trim() === label
  )!;
}

let remove: (() => void) | null = null;
afterEach(() => {
  remove?.();
  remove = null;
  document.body.replaceChildren();
});

describe('reading a card', () => {
  it('names the question and the answer of each button', () => {
    const box = card('abc123', [
      'Approve',
      'Deny',
      'Approve all',
      'Always allow write_file(*)'
    ]);
    expect(pendingIdOf(box)).toBe('abc123');
    expect(choiceOf(button(box, 'Approve'))).toBe('approve');
    expect(choiceOf(button(box, 'Deny'))).toBe('deny');
    expect(choiceOf(button(box, 'Approve all'))).toBe('approve_all');

    expect(choiceOf(button(box, 'Always allow write_file(*)'))).toBe(
      'always_allow'
    );
    const icon = button(box, 'Deny').querySelector('i')!;
    expect(cardAnswer(icon)).toEqual({
      card: box,
      id: 'abc123',
      choice: 'deny'
    });
  });

  it('reads the folder trust card as approve and deny', () => {
    const box = card('t1', ['Trust folder', 'Not now']);
    expect(choiceOf(button(box, 'Trust folder'))).toBe('approve');
    expect(choiceOf(button(box, 'Not now'))).toBe('deny');
  });

  it('has no answer outside a card, on a disabled button or without an id', () => {
    const other = document.createElement('button');
    other.textContent = 'Approve';
    document.body.appendChild(other);
    expect(cardAnswer(other)).toBeNull();
    const box = card();
    button(box, 'Approve').disabled = true;
    expect(cardAnswer(button(box, 'Approve'))).toBeNull();
    box.classList.remove(`${CARD_CLASS}-q1`);
    expect(cardAnswer(button(box, 'Deny'))).toBeNull();
  });
});

describe('the guard', () => {
  it('stops a scripted click on a card before the widget sees it', () => {
    const box = card();
    const decided: string[] = [];
    let widgetSaw = 0;
    button(box, 'Approve').addEventListener('click', () => widgetSaw++);
    remove = installApprovalGuard(window, {
      decide: (_card, id, choice) => decided.push(`${id}:${choice}`) > 0,
      isApprovalKey: () => false
    });
    button(box, 'Approve').click();
    button(box, 'Approve').dispatchEvent(
      new MouseEvent('click', { bubbles: true })
    );
    expect(widgetSaw).toBe(0);
    expect(decided).toEqual([]);
  });

  it("answers a person's click through the comm and lets other clicks be", () => {
    const box = card('q7');
    const decided: string[] = [];
    let otherSaw = 0;
    const other = document.createElement('button');
    other.addEventListener('click', () => otherSaw++);
    document.body.appendChild(other);
    remove = installApprovalGuard(window, {
      decide: (_card, id, choice) => decided.push(`${id}:${choice}`) > 0,
      isApprovalKey: () => false,
      isPerson: () => true
    });
    button(box, 'Deny').click();
    other.click();
    expect(decided).toEqual(['q7:deny']);
    expect(otherSaw).toBe(1);
  });

  it('stops a scripted key press of an approval shortcut, not other keys', () => {
    const seen: string[] = [];
    const listener = (event: KeyboardEvent): void => {
      seen.push(event.key);
    };
    document.addEventListener('keydown', listener, true);
    remove = installApprovalGuard(window, {
      decide: () => true,
      isApprovalKey: event => event.altKey && event.key === 'y'
    });
    document.body.dispatchEvent(
      new KeyboardEvent('keydown', { key: 'y', altKey: true, bubbles: true })
    );
    document.body.dispatchEvent(
      new KeyboardEvent('keydown', { key: 'a', bubbles: true })
    );
    document.removeEventListener('keydown', listener, true);
    expect(seen).toEqual(['a']);
  });
});
