import { describe, expect, it } from 'vitest';
import { MAX_LISTED_VERSIONS, VersionTally } from '../../src/domain/clusterFigures.js';

describe('VersionTally', () => {
  it('lists the most common versions first (ties by version, unknown last), folds the rest into a count', () => {
    const tally = new VersionTally();
    for (const [version, drifted] of [
      ['b', false],
      [null, true],
      ['a', true],
      ['b', false],
      ['a', false],
      ['c', false],
    ] as const)
      tally.add(version, drifted);
    expect(tally.figures()).toEqual({
      versions: [
        { version: 'a', count: 2 },
        { version: 'b', count: 2 },
        { version: 'c', count: 1 },
        { version: null, count: 1 },
      ],
      otherVersionsCount: 0,
      drifted: 2,
    });

    const many = new VersionTally();
    for (let i = 0; i < MAX_LISTED_VERSIONS + 3; i++) for (let n = 0; n <= i; n++) many.add(`v${String(i).padStart(2, '0')}`, false);
    const figures = many.figures();
    expect(figures.versions).toHaveLength(MAX_LISTED_VERSIONS);
    expect(figures.versions[0]).toEqual({ version: `v${MAX_LISTED_VERSIONS + 2}`, count: MAX_LISTED_VERSIONS + 3 });
    // The three least common: v00, v01, v02 (1 + 2 + 3 targets).
    expect(figures.otherVersionsCount).toBe(6);
  });
});
