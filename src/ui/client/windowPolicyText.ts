/**
 * Maintenance-window policies as the Clusters page writes and reads them (MaintenanceWindows.tsx): the create form's
 * text (one window a line) to the API's input, and a stored definition to one line per window. No React and no DOM.
 */
import type { MaintenanceWindowInput, WindowKind } from './generated/graphql.js';
import { recordOf } from './json.js';

/** The create form's fields, as typed. */
export interface WindowFormFields {
  name: string;
  kind: WindowKind;
  timeZone: string;
  clusterSelector: string;
  weekly: string;
  cron: string;
  ranges: string;
}

const lines = (text: string): string[][] =>
  text
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((words) => words[0] !== '');

/** The form's text → the API's input; a line of the wrong shape is refused here, every rule by the server. */
export function windowInputOf(fields: WindowFormFields): MaintenanceWindowInput {
  const weekly = lines(fields.weekly).map((words, i) => {
    if (words.length !== 3) throw new Error(`weekly line ${i + 1}: write DAYS START END, e.g. SAT,SUN 00:00 24:00`);
    return { days: words[0]!.split(',').filter(Boolean), start: words[1]!, end: words[2]! };
  });
  const cron = lines(fields.cron).map((words, i) => {
    if (words.length !== 6) throw new Error(`cron line ${i + 1}: write five cron fields and a duration, e.g. 0 22 * * 1-5 4h`);
    return { schedule: words.slice(0, 5).join(' '), duration: words[5]! };
  });
  const ranges = lines(fields.ranges).map((words, i) => {
    if (words.length !== 2) throw new Error(`range line ${i + 1}: write FROM TO, e.g. 2026-12-24T00:00 2026-12-27T00:00`);
    return { from: words[0]!, to: words[1]! };
  });
  return {
    name: fields.name.trim(),
    kind: fields.kind,
    ...(fields.timeZone.trim() ? { timeZone: fields.timeZone.trim() } : {}),
    ...(fields.clusterSelector.trim() ? { clusterSelector: fields.clusterSelector.trim() } : {}),
    ...(weekly.length ? { weekly } : {}),
    ...(cron.length ? { cron } : {}),
    ...(ranges.length ? { ranges } : {}),
  };
}

/** A stored policy's definition (JSON as written: timeZone, clusterSelector, weekly, cron, ranges), read defensively. */
export interface Definition {
  timeZone: string | null;
  clusterSelector: string | null;
  weekly: { days: string[]; start: string; end: string }[];
  cron: { schedule: string; duration: string }[];
  ranges: { from: string; to: string }[];
}

export function definitionOf(value: unknown): Definition {
  const d = recordOf(value);
  const list = (v: unknown) => (Array.isArray(v) ? v.map(recordOf) : []);
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  return {
    timeZone: typeof d.timeZone === 'string' ? d.timeZone : null,
    clusterSelector: typeof d.clusterSelector === 'string' && d.clusterSelector !== '' ? d.clusterSelector : null,
    weekly: list(d.weekly).map((w) => ({ days: Array.isArray(w.days) ? w.days.map(String) : [], start: text(w.start), end: text(w.end) })),
    cron: list(d.cron).map((c) => ({ schedule: text(c.schedule), duration: text(c.duration) })),
    ranges: list(d.ranges).map((r) => ({ from: text(r.from), to: text(r.to) })),
  };
}

export function windowLines(d: Definition): string[] {
  return [
    ...d.weekly.map((w) => `${w.days.join(',')} ${w.start}–${w.end}`),
    ...d.cron.map((c) => `cron ${c.schedule} for ${c.duration}`),
    ...d.ranges.map((r) => `${r.from} → ${r.to}`),
  ];
}
