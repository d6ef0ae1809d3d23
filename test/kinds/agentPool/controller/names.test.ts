import { describe, expect, it } from 'vitest';
import { ANNOTATION_HELD_BY, ANNOTATION_HOLD, holdOf, rollplaneHolder } from '../../../../src/kinds/agentPool/controller/names.js';

describe("a pool's hold", () => {
  const cases: [string, Record<string, string> | undefined, 'none' | 'rollplane' | 'other', string | undefined][] = [
    ['no annotations', undefined, 'none', undefined],
    ['no hold, a marker left behind', { [ANNOTATION_HELD_BY]: 'r1' }, 'none', undefined],
    ["rollplane's: its marker and its value", { [ANNOTATION_HOLD]: 'true', [ANNOTATION_HELD_BY]: 'r1' }, 'rollplane', 'r1'],
    ["an operator's over rollplane's marker", { [ANNOTATION_HOLD]: 'operator-freeze', [ANNOTATION_HELD_BY]: 'r1' }, 'other', undefined],
    ["an operator's, no marker", { [ANNOTATION_HOLD]: 'true' }, 'other', undefined],
  ];
  it.each(cases)('%s: whose it is, and which rollout holds it when rollplane does', (_, annotations, whose, holder) => {
    expect(holdOf(annotations)).toBe(whose);
    expect(rollplaneHolder(annotations)).toBe(holder);
  });
});
