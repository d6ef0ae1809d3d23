import { describe, expect, it } from 'vitest';
import { nextAnalysisStep, parseInput, targetAnalysisInput } from '../../../src/domain/kinds/strategy.js';
import { checkTargetAnalysis } from '../../../src/domain/RolloutLauncher.js';

/** `strategy.analysis` (ADR 0071): its input and the steps an analysis stands after. */
describe('analysis between targets: steps', () => {
  const config = { template: 'x' };

  it('stands after each count of `after` and each multiple of `every`, below the number of changing targets', () => {
    const steps = (spec: Parameters<typeof nextAnalysisStep>[0], changing: number) => {
      const out: number[] = [];
      for (let step = nextAnalysisStep(spec, changing, 0); step !== undefined; step = nextAnalysisStep(spec, changing, step)) out.push(step);
      return out;
    };
    expect(steps({ config, every: 5 }, 20)).toEqual([5, 10, 15]);
    expect(steps({ config, every: 5 }, 21)).toEqual([5, 10, 15, 20]);
    expect(steps({ config, after: [1, 3] }, 20)).toEqual([1, 3]);
    expect(steps({ config, after: [1, 3], every: 4 }, 10)).toEqual([1, 3, 4, 8]);
    expect(steps({ config, after: [30] }, 20)).toEqual([]);
    // After an accepted step the next one counts on from it.
    expect(nextAnalysisStep({ config, every: 5 }, 20, 7)).toBe(10);
  });

  it('refuses an analysis without a step, with steps out of order, or a config that is not an object', () => {
    const parse = (value: unknown) => () => parseInput(targetAnalysisInput, value, 'input.strategy.analysis');
    expect(parse({ config })).toThrow(/^input\.strategy\.analysis: needs `every` or `after`/);
    expect(parse({ config, after: [3, 1] })).toThrow(/^input\.strategy\.analysis\.after: must be in increasing order/);
    expect(parse({ config, every: 0 })).toThrow(/^input\.strategy\.analysis\.every: must be at least 1/);
    expect(parse({ config: 'template', every: 1 })).toThrow(/^input\.strategy\.analysis\.config: must be an ANALYSIS gate config/);
    expect(parse({ config, every: 2, after: null })()).toEqual({ config, every: 2 });
  });
});

describe('analysis between targets: checked at launch', () => {
  const types = () => ({
    ANALYSIS: { takesDecisions: false, check: (c: unknown) => c as Record<string, unknown>, progress: () => ({ state: 'PASSED' as const, reason: '' }) },
  });
  const request = (targets: number, analysis: Record<string, unknown>, staged = false) =>
    ({
      plan: {
        kind: 'AGENT_POOL',
        strategy: { analysis },
        targets: Array.from({ length: targets }, (_, i) => ({ namespace: 'default', name: `net-${i}`, fromVersion: 'a', toVersion: 'b' })),
      },
      ...(staged ? { staged: {} } : {}),
    }) as unknown as Parameters<typeof checkTargetAnalysis>[0];

  it('refuses more than 100 analyses over the targets, and an analysis on a staged rollout', () => {
    expect(() => checkTargetAnalysis(request(101, { config: {}, every: 1 }), types)).not.toThrow();
    expect(() => checkTargetAnalysis(request(102, { config: {}, every: 1 }), types)).toThrow(
      /^input\.strategy\.analysis: makes more than 100 analyses over 102 targets/,
    );
    expect(() => checkTargetAnalysis(request(10, { config: {}, every: 1 }, true), types)).toThrow(/is for a rollout without waves/);
  });

  it('refuses an analysis none of whose steps comes before the last target (attack 19, F4: the rollout succeeded unmeasured)', () => {
    for (const [targets, analysis] of [
      [8, { config: {}, after: [100] }],
      [8, { config: {}, every: 8 }],
      [1, { config: {}, every: 1 }],
    ] as const) {
      expect(() => checkTargetAnalysis(request(targets, analysis), types), JSON.stringify(analysis)).toThrow(/^input\.strategy\.analysis: never measures/);
    }
    expect(() => checkTargetAnalysis(request(8, { config: {}, after: [7, 100] }), types)).not.toThrow();
    expect(() => checkTargetAnalysis(request(0, { config: {}, every: 1 }), types)).not.toThrow();
  });
});
