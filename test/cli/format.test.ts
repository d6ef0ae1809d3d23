import { describe, expect, it } from 'vitest';
import { formatBump, formatDuration, formatHistory, formatPlan, formatRollout, PLAN_ROWS, rolloutDuration, UNKNOWN_VERSION } from '../../src/cli/format.js';
import type { BumpPayload, PlanItem } from '../../src/cli/operations.js';
import { rolloutView } from './rolloutView.js';

const item = (i: number, action = 'change', reason: string | null = null): PlanItem => ({
  namespace: 'default',
  name: `net-${i}`,
  fromVersion: 'a:1',
  toVersion: 'a:2',
  action,
  reason,
});

describe('the plan', () => {
  const plan = [
    ...Array.from({ length: 10 }, (_, i) => item(i, 'skip', 'held')),
    ...Array.from({ length: 200 }, (_, i) => item(100 + i)),
    item(998, 'skip', 'already on the version'),
    item(999, 'skip', 'already on the version'),
  ];

  it('of a 212-target bump is its counts, the first changes and how to list the rest, unless --plan', () => {
    const text = formatPlan(plan);
    const lines = text.split('\n');
    expect(lines[0]).toBe('plan: 212 targets: 12 skip, 200 change (10 held, 2 already on the version)');
    expect(lines).toHaveLength(1 + 1 + PLAN_ROWS + 1);
    expect(lines.slice(2, 2 + PLAN_ROWS).every((line) => / change /.test(line))).toBe(true);
    expect(lines.at(-1)).toBe(`… and ${212 - PLAN_ROWS} more targets (--plan lists them all)`);
    expect(formatPlan(plan, true).split('\n')).toHaveLength(1 + 1 + 212);
  });

  it('of a small bump is shown whole', () => {
    expect(formatPlan([item(1), item(2)]).split('\n')).toHaveLength(4);
  });

  it("across member clusters is one table per cluster, each with its counts, in the plan's order", () => {
    const across = [
      { ...item(1), cluster: 'local' },
      { ...item(1), cluster: 'edge-1' },
      { ...item(2, 'skip', 'held'), cluster: 'edge-1' },
    ];
    const lines = formatPlan(across).split('\n');
    expect(lines[0]).toBe('plan: 3 targets: 2 change, 1 skip (1 held) in 2 member clusters');
    expect(lines.filter((line) => line.startsWith('cluster '))).toEqual([
      'cluster local: 1 target: 1 change',
      'cluster edge-1: 2 targets: 1 change, 1 skip (1 held)',
    ]);
    // Each cluster's rows under its own header (a header, the table's header row, its targets).
    expect(lines.indexOf('cluster edge-1: 2 targets: 1 change, 1 skip (1 held)')).toBe(1 + 3);
    // A plan in local alone reads as it always did.
    expect(formatPlan([{ ...item(1), cluster: 'local' }])).toBe(formatPlan([item(1)]));
  });

  it('spells a missing version one way', () => {
    const payload = {
      rollout: rolloutView({ fromVersion: null }),
      plan: [{ ...item(1), fromVersion: null }],
      created: true,
      dryRun: false,
    } as unknown as BumpPayload;
    const text = formatBump(payload);
    expect(text).toContain(`version:  ${UNKNOWN_VERSION} → a:2`);
    expect(text).toMatch(new RegExp(`net-1\\s+change\\s+${UNKNOWN_VERSION.replace(/[()]/g, '\\$&')}`));
  });
});

describe('durations', () => {
  it('read as people say them', () => {
    expect([0, 45_000, 187_000, 7_500_000, 273_600_000].map(formatDuration)).toEqual(['0s', '45s', '3m07s', '2h05m', '3d04h']);
  });

  it('of a rollout run from its start to its end; a running one to now, marked as running', () => {
    const done = rolloutView({ startedAt: '2026-11-30T00:00:10.000Z', finishedAt: '2026-11-30T00:02:15.000Z' });
    expect(rolloutDuration(done)).toBe('2m05s');
    expect(rolloutDuration(rolloutView({ createdAt: '2026-11-30T00:00:00.000Z' }), Date.parse('2026-11-30T00:00:30.000Z'))).toBe('30s…');
  });

  it('are a column of the history', () => {
    const text = formatHistory([rolloutView({ state: 'SUCCEEDED', startedAt: '2026-11-30T00:00:00.000Z', finishedAt: '2026-11-30T00:01:00.000Z' })], 1);
    expect(text.split('\n')[0]).toMatch(/^ID\s+KIND\s+STATE\s+DONE\s+CREATED\s+DURATION\s+ACTOR\s+VERSION$/);
    expect(text.split('\n')[1]).toMatch(/\s1m00s\s/);
  });
});

describe('a rollout', () => {
  it('names the targets in flight that wait on a write the member refused, with why (attack 17, L2)', () => {
    const node = (name: string, error: string | null) => ({ node: { cluster: 'edge-1', namespace: 'default', name, error } });
    const text = formatRollout({
      ...rolloutView({ state: 'PROGRESSING' }),
      inFlight: { totalCount: 3, edges: [node('net-1', "waiting: rollplane's last write here failed at T: injected 403"), node('net-2', null)] },
    } as never);
    const lines = text.split('\n');
    const at = lines.indexOf('  waiting targets (1 of the first 2 in progress):');
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toMatch(/edge-1.*net-1: waiting: rollplane's last write here failed at T: injected 403$/);
    expect(text).not.toContain('net-2');
  });
});
