import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../../src/errors.js';
import { count, planWaves, type WaveInput } from '../../../src/domain/waves/plan.js';

const fleet: { name: string; labels: Record<string, string> }[] = [
  { name: 'local', labels: { env: 'dev' } },
  { name: 'canary-1', labels: { env: 'prod', ring: 'canary', order: '2' } },
  { name: 'canary-2', labels: { env: 'prod', ring: 'canary', order: '10' } },
  { name: 'eu-1', labels: { env: 'prod', region: 'eu' } },
  { name: 'eu-2', labels: { env: 'prod', region: 'eu' } },
  { name: 'us-1', labels: { env: 'prod', region: 'us' } },
  { name: 'staging', labels: { env: 'staging' } },
];

function refusedField(waves: WaveInput[]): unknown {
  try {
    planWaves(waves, fleet);
  } catch (error) {
    expect((error as { code: string }).code).toBe(ErrorCode.BadUserInput);
    return (error as { details: { field: unknown } }).details.field;
  }
  throw new Error('accepted');
}

describe('wave plans', () => {
  it('puts each cluster in the first wave that picks it, orders by the sort label, and keeps the rest in a last wave', () => {
    const plan = planWaves(
      [
        { name: 'canary', clusterSelector: 'ring=canary', sortByLabel: 'order' },
        { name: 'staging', clusters: ['staging', 'canary-1'] },
        { name: 'prod', clusterSelector: 'env=prod', maxConcurrency: '50%', maxFailures: 1, minSuccessTime: '30m', mandatory: true },
      ],
      fleet,
    );
    expect(plan.waves.map((w) => [w.name, w.clusters])).toEqual([
      ['canary', ['canary-1', 'canary-2']], // order 2 before 10 (numeric)
      ['staging', ['staging']], // canary-1 went to the first wave that picked it
      ['prod', ['eu-1', 'eu-2', 'us-1']],
      ['remainder', ['local']],
    ]);
    expect(plan.waves[2]).toMatchObject({ maxConcurrency: 1, maxFailures: 1, minSuccessMs: 30 * 60_000, mandatory: true, remainder: false });
    expect(plan.waves[3]).toMatchObject({ maxConcurrency: 1, maxFailures: 0, remainder: true });
    expect(plan.excluded).toEqual([]);
  });

  it('lists the clusters no wave picked as excluded when asked, never dropping them silently', () => {
    const plan = planWaves([{ name: 'eu', clusterSelector: 'region=eu' }], fleet, 'EXCLUDE');
    expect(plan.waves.map((w) => w.name)).toEqual(['eu']);
    expect(plan.excluded).toEqual(['canary-1', 'canary-2', 'local', 'staging', 'us-1']);
  });

  it('keeps a wave that picks nothing left over (its gates still apply) and adds no empty remainder', () => {
    const plan = planWaves(
      [
        { name: 'all', clusterSelector: 'env' },
        { name: 'late', clusterSelector: 'env=prod' },
      ],
      fleet,
    );
    expect(plan.waves.map((w) => [w.name, w.clusters.length])).toEqual([
      ['all', 7],
      ['late', 0],
    ]);
  });

  it('reads counts as numbers or percentages rounded down, concurrency at least 1', () => {
    expect(count('25%', 10, 'f')).toBe(2);
    expect(count('100%', 3, 'f')).toBe(3);
    expect(count(0, 3, 'f')).toBe(0);
    expect(planWaves([{ name: 'a', clusterSelector: 'env=prod', maxConcurrency: '10%' }], fleet).waves[0]!.maxConcurrency).toBe(1);
  });

  it.each([
    [[], 'input.waves'],
    [[{ name: 'a' }], 'input.waves[0]'],
    [[{ name: 'remainder', clusterSelector: 'env' }], 'input.waves[0].name'],
    [
      [
        { name: 'a', clusterSelector: 'env' },
        { name: 'a', clusterSelector: 'env' },
      ],
      'input.waves[1].name',
    ],
    [[{ name: 'a', clusters: ['nowhere'] }], 'input.waves[0].clusters[0]'],
    [[{ name: 'a', clusterSelector: 'env in ()' }], 'input.waves[0].clusterSelector'],
    [[{ name: 'a', clusterSelector: 'env', maxConcurrency: '150%' }], 'input.waves[0].maxConcurrency'],
    [[{ name: 'a', clusterSelector: 'env', maxFailures: -1 }], 'input.waves[0].maxFailures'],
    [[{ name: 'a', clusterSelector: 'env', maxFailures: 1.5 }], 'input.waves[0].maxFailures'],
    [[{ name: 'a', clusterSelector: 'env', minSuccessTime: 'soon' }], 'input.waves[0].minSuccessTime'],
  ])('refuses a bad wave with BAD_USER_INPUT naming the field (%#)', (waves, field) => {
    expect(refusedField(waves as WaveInput[])).toBe(field);
  });
});
