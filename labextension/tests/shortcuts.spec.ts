import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import {
  APPROVE_ALL_KEYS,
  APPROVE_KEYS,
  CommandIDs,
  DENY_KEYS,
  keysLabel
} from '../src/keys';

describe('shortcuts', () => {
  it('match the settings schema people can edit', () => {
    const schema = JSON.parse(
      readFileSync(join(__dirname, '..', 'schema', 'plugin.json'), 'utf-8')
    );
    const keys = Object.fromEntries(
      schema['jupyter.lab.shortcuts'].map(
        (s: { command: string; keys: string[] }) => [s.command, s.keys]
      )
    );
    expect(keys).toEqual({
      [CommandIDs.approve]: APPROVE_KEYS,
      [CommandIDs.deny]: DENY_KEYS,
      [CommandIDs.approveAll]: APPROVE_ALL_KEYS,
      // Ctrl+Z in command mode undoes a cell action, an approved Co edit among them.
      'notebook:undo-cell-action': ['Accel Z'],
      'notebook:redo-cell-action': ['Accel Shift Z']
    });
  });

  it('are written the way people read them', () => {
    expect(keysLabel(APPROVE_KEYS)).toBe('Alt+Y');
    expect(keysLabel(['Accel Shift A', 'Alt N'])).toBe('Accel+Shift+A, Alt+N');
  });
});
