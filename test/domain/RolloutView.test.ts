import { describe, expect, it } from 'vitest';
import { clusterOf } from '../../src/domain/ports.js';
import type { RolloutTarget } from '../../src/domain/RolloutService.js';
import type { TargetState } from '../../src/domain/rolloutStates.js';
import { RolloutView } from '../../src/domain/RolloutView.js';
import { clusterOutcomes } from '../../src/domain/waves/engineStage.js';

/** The per-cluster counts the engine reads on every admission pass are kept with each update, not recounted. */

const CLUSTERS = [null, 'edge-1', 'edge-2'] as const;
const TARGET_STATES: readonly TargetState[] = ['PENDING', 'PROGRESSING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'];

function recount(targets: readonly RolloutTarget[]): Map<string, { changing: number; progressing: number }> {
  const counts = new Map<string, { changing: number; progressing: number }>();
  for (const t of targets) {
    if (t.state === 'SKIPPED') continue;
    const entry = counts.get(clusterOf(t)) ?? { changing: 0, progressing: 0 };
    entry.changing++;
    if (t.state === 'PROGRESSING') entry.progressing++;
    counts.set(clusterOf(t), entry);
  }
  return counts;
}

describe('RolloutView.byCluster', () => {
  it('equals a recount of the targets after any sequence of updates', () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const targets = Array.from(
      { length: 60 },
      (_, i) => ({ id: `t${i}`, namespace: 'default', name: `net-${i}`, cluster: CLUSTERS[i % 3], state: 'PENDING' }) as unknown as RolloutTarget,
    );
    const view = new RolloutView(
      targets.map((t) => ({ ...t })),
      'PROGRESSING',
    );
    for (let step = 0; step < 500; step++) {
      const target = view.targets[random(view.targets.length)]!;
      view.update({ ...target, state: TARGET_STATES[random(TARGET_STATES.length)] });
      const seen = new Map([...view.byCluster()].filter(([, c]) => c.changing > 0 || c.progressing > 0));
      expect(seen, `after step ${step}`).toEqual(recount(view.targets));
    }
  });
});

describe('RolloutView.clusterOutcomes', () => {
  it("equals each cluster's outcome aggregated from the targets after any sequence of updates, ends included", () => {
    let seed = 11;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const targets = Array.from(
      { length: 45 },
      (_, i) =>
        ({ id: `t${i}`, namespace: 'default', name: `net-${i}`, cluster: CLUSTERS[i % 3], state: 'PENDING', finishedAt: null }) as unknown as RolloutTarget,
    );
    const view = new RolloutView(
      targets.map((t) => ({ ...t })),
      'PROGRESSING',
    );
    expect(new Map(view.clusterOutcomes())).toEqual(clusterOutcomes(view.targets));
    for (let step = 0; step < 600; step++) {
      const target = view.targets[random(view.targets.length)]!;
      const state = TARGET_STATES[random(TARGET_STATES.length)]!;
      // As the store records them: a target's end is set once it ends, and never moves back.
      const ended = ['SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'].includes(state);
      const finishedAt = target.finishedAt ?? (ended ? new Date(Date.UTC(2026, 11, 5, 10, 0, step)) : null);
      view.update({ ...target, state, finishedAt });
      expect(new Map(view.clusterOutcomes()), `after step ${step}`).toEqual(clusterOutcomes(view.targets));
    }
  });
});
