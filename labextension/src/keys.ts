/**
 * Command ids and their default shortcuts (also declared in
 * `schema/plugin.json`, where people can change them; a unit test keeps the
 * two in step).
 */

/** The extension's command ids. */
export const CommandIDs = {
  approve: 'co:approve',
  deny: 'co:deny',
  approveAll: 'co:approve-all',
  openActivity: 'co:open-activity'
} as const;

/** The activity panel's one name: its tab title and heading ("Co: Open Activity" opens it). */
export const ACTIVITY_TITLE = 'Co Activity';

/** Approve the pending call. */
export const APPROVE_KEYS = ['Alt Y'];

/** Deny the pending call. */
export const DENY_KEYS = ['Alt N'];

/** Approve the pending call and every later one this session. */
export const APPROVE_ALL_KEYS = ['Alt Shift Y'];

/** Lumino key sequence to the way people write it: `Alt Y` -> `Alt+Y`. */
export function keysLabel(keys: string[]): string {
  return keys.map(chord => chord.split(' ').join('+')).join(', ');
}
