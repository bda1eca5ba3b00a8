import { afterEach, describe, expect, it } from 'vitest';

import { CARD_CLASS } from '../../src/approvals/guard';
import {
  decisionMessage,
  installPartChoice,
  PART_TOGGLE_CLASS,
  PartChoices,
  partToggleAt
} from '../../src/approvals/parts';

/** A card with a control per cell, as `_part_html` in `_widgets.py` draws it. */
function card(id = 'q1', parts = 3): HTMLElement {
  const box = document.createElement('div');
  box.className = `widget-vbox ${CARD_CLASS} ${CARD_CLASS}-${id}`;
  for (let i = 0; i < parts; i++) {
    const part = document.createElement('div');
    part.className = `co-part co-part-${i}`;
    part.innerHTML =
      `<button type="button" class="${PART_TOGGLE_CLASS}" data-part="${i}" ` +
      `data-parts="${parts}" data-what="new Markdown cell">` +
      `✓ Apply cell ${i + 1} of ${parts}: new Markdown cell</button>` +
      `<pre>+cell ${i}</pre>`;
    box.appendChild(part);
  }
  document.body.appendChild(box);
  return box;
}

function toggle(box: HTMLElement, part: number): HTMLButtonElement {
  return box.querySelector<HTMLButtonElement>(`[data-part="${part}"]`)!;
}

let remove: (() => void) | null = null;
afterEach(() => {
  remove?.();
  remove = null;
  document.body.replaceChildren();
});

describe('choosing cells', () => {
  it('finds the control, its cell and its question', () => {
    const box = card('abc');
    const hit = partToggleAt(toggle(box, 1));
    expect(hit).toMatchObject({ id: 'abc', part: 1, parts: 3 });
    expect(partToggleAt(box)).toBeNull();
    box.classList.remove(`${CARD_CLASS}-abc`);
    expect(partToggleAt(toggle(box, 1))).toBeNull();
  });

  it("flips a cell on a person's click and draws it rejected", () => {
    const box = card('q2');
    const choices = new PartChoices();
    remove = installPartChoice(window, choices, () => true);
    toggle(box, 1).click();
    expect(choices.rejectedOf('q2')).toEqual([1]);
    expect(toggle(box, 1).textContent).toBe(
      '✗ Rejected cell 2 of 3: new Markdown cell (click to apply it)'
    );
    expect(toggle(box, 1).getAttribute('aria-pressed')).toBe('false');
    toggle(box, 2).click();
    toggle(box, 1).click();
    expect(choices.rejectedOf('q2')).toEqual([2]);
    expect(toggle(box, 1).textContent).toBe(
      '✓ Apply cell 2 of 3: new Markdown cell'
    );
  });

  it('ignores and stops a scripted click on a control', () => {
    const box = card('q3');
    const choices = new PartChoices();
    let cardSaw = 0;
    box.addEventListener('click', () => cardSaw++);
    remove = installPartChoice(window, choices);
    toggle(box, 0).click();
    toggle(box, 0).dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(choices.rejectedOf('q3')).toEqual([]);
    expect(cardSaw).toBe(0);
    expect(toggle(box, 0).textContent).toBe(
      '✓ Apply cell 1 of 3: new Markdown cell'
    );
  });
});

describe('the decision message', () => {
  it('names the rejected cells with Approve only', () => {
    const choices = new PartChoices();
    choices.toggle('q4', 2);
    choices.toggle('q4', 0);
    expect(decisionMessage('q4', 'approve', choices)).toEqual({
      decide: 'q4',
      choice: 'approve',
      reject: [0, 2]
    });
    expect(decisionMessage('q4', 'deny', choices)).toEqual({
      decide: 'q4',
      choice: 'deny'
    });
    expect(decisionMessage('q4', 'approve_all', choices)).toEqual({
      decide: 'q4',
      choice: 'approve_all'
    });
    expect(decisionMessage('other', 'approve', choices)).toEqual({
      decide: 'other',
      choice: 'approve'
    });
  });

  it('is not changed by rewriting the card: only the record counts', () => {
    const box = card('q5');
    const choices = new PartChoices();
    remove = installPartChoice(window, choices, () => true);
    toggle(box, 1).click();
    // A script redraws every control as accepted, or removes them.
    box.querySelectorAll(`.${PART_TOGGLE_CLASS}`).forEach(t => t.remove());
    expect(decisionMessage('q5', 'approve', choices).reject).toEqual([1]);
  });
});
