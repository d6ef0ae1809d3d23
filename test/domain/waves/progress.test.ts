import { describe, expect, it } from 'vitest';
import { planWaves, type WaveInput } from '../../../src/domain/waves/plan.js';
import { type ClusterProgress, type FailurePolicy, type GateProgress, gateKey, nextStep, type RunFacts } from '../../../src/domain/waves/progress.js';

const fleet: { name: string; labels: Record<string, string> }[] = [
  { name: 'canary', labels: { ring: '0' } },
  { name: 'eu-1', labels: { ring: '1' } },
  { name: 'eu-2', labels: { ring: '1' } },
  { name: 'eu-3', labels: { ring: '1' } },
  { name: 'us-1', labels: { ring: '2' } },
];
const t0 = new Date('2026-12-05T10:00:00Z');
const minutes = (n: number) => new Date(t0.getTime() + n * 60_000);
const open = () => ({ open: true, reason: 'no window policy applies', until: null });

function facts(waves: WaveInput[], over: Partial<RunFacts> & { progress?: Record<string, ClusterProgress | ClusterProgress['outcome']> } = {}): RunFacts {
  const clusters = new Map(Object.entries(over.progress ?? {}).map(([name, p]) => [name, typeof p === 'string' ? { outcome: p, endedAt: t0 } : p]));
  return {
    plan: planWaves(waves, fleet),
    clusters,
    gates: new Map(),
    gatePositions: new Set(),
    window: open,
    failurePolicy: 'PAUSE',
    now: t0,
    ...over,
  };
}

const three: WaveInput[] = [
  { name: 'canary', clusterSelector: 'ring=0' },
  { name: 'europe', clusterSelector: 'ring=1', maxConcurrency: 2, maxFailures: 1 },
  { name: 'us', clusterSelector: 'ring=2', mandatory: true },
];

describe('the next step of a staged run', () => {
  it('goes wave by wave, at most maxConcurrency clusters at once, in plan order', () => {
    expect(nextStep(facts(three))).toEqual({ do: 'admit', wave: 'canary', clusters: ['canary'] });
    expect(nextStep(facts(three, { progress: { canary: 'ACTIVE' } }))).toMatchObject({ do: 'wait', wave: 'canary' });
    expect(nextStep(facts(three, { progress: { canary: 'SUCCEEDED' } }))).toEqual({ do: 'admit', wave: 'europe', clusters: ['eu-1', 'eu-2'] });
    expect(nextStep(facts(three, { progress: { canary: 'SUCCEEDED', 'eu-1': 'ACTIVE' } }))).toEqual({ do: 'admit', wave: 'europe', clusters: ['eu-2'] });
    expect(nextStep(facts(three, { progress: { canary: 'SUCCEEDED', 'eu-1': 'SUCCEEDED', 'eu-2': 'ACTIVE' } }))).toEqual({
      do: 'admit',
      wave: 'europe',
      clusters: ['eu-3'],
    });
    const done = { canary: 'SUCCEEDED', 'eu-1': 'SUCCEEDED', 'eu-2': 'SUCCEEDED', 'eu-3': 'SUCCEEDED', 'us-1': 'SUCCEEDED' } as const;
    expect(nextStep(facts(three, { progress: done }))).toEqual({ do: 'succeed', toleratedFailures: [], skipped: [] });
  });

  it('tolerates maxFailures, fails a wave past it or at any failure in a mandatory wave, and pauses by default', () => {
    expect(nextStep(facts(three, { progress: { canary: 'SUCCEEDED', 'eu-1': 'FAILED', 'eu-2': 'SUCCEEDED', 'eu-3': 'SUCCEEDED' } }))).toEqual({
      do: 'admit',
      wave: 'us',
      clusters: ['us-1'],
    });
    const twoFailed = nextStep(facts(three, { progress: { canary: 'SUCCEEDED', 'eu-1': 'FAILED', 'eu-2': 'FAILED' } }));
    expect(twoFailed).toEqual({ do: 'pause', wave: 'europe', reason: 'wave europe failed: 2 clusters failed (eu-1, eu-2); it tolerates 1' });
    const all = { canary: 'SUCCEEDED', 'eu-1': 'FAILED', 'eu-2': 'SUCCEEDED', 'eu-3': 'SUCCEEDED', 'us-1': 'FAILED' } as const;
    expect(nextStep(facts(three, { progress: all }))).toMatchObject({
      do: 'pause',
      wave: 'us',
      reason: expect.stringContaining('a mandatory wave tolerates none'),
    });
    const tolerated = { ...all, 'us-1': 'SUCCEEDED' } as const;
    expect(nextStep(facts(three, { progress: tolerated }))).toEqual({ do: 'succeed', toleratedFailures: ['eu-1'], skipped: [] });
  });

  it('rolls back what was changed so far in reverse wave order, or goes on and ends failed, as the policy says', () => {
    const progress = { canary: 'SUCCEEDED', 'eu-1': 'FAILED', 'eu-2': 'FAILED', 'eu-3': 'SUCCEEDED' } as const;
    expect(nextStep(facts(three, { progress, failurePolicy: 'ROLLBACK_COMPLETED' }))).toMatchObject({
      do: 'roll-back',
      clusters: ['eu-3', 'eu-2', 'eu-1', 'canary'],
    });
    expect(nextStep(facts(three, { progress, failurePolicy: 'CONTINUE' }))).toEqual({ do: 'admit', wave: 'us', clusters: ['us-1'] });
    expect(nextStep(facts(three, { progress: { ...progress, 'us-1': 'SUCCEEDED' }, failurePolicy: 'CONTINUE' }))).toMatchObject({
      do: 'fail',
      reason: 'every wave ran (policy CONTINUE); failed: europe; failed clusters: eu-1, eu-2',
    });
  });

  it('soaks a wave from its last success before the next wave starts', () => {
    const soaking: WaveInput[] = [
      { name: 'canary', clusterSelector: 'ring=0', minSuccessTime: '30m' },
      { name: 'rest', clusterSelector: 'ring' },
    ];
    const progress = { canary: { outcome: 'SUCCEEDED' as const, endedAt: minutes(5) } };
    expect(nextStep(facts(soaking, { progress, now: minutes(20) }))).toEqual({
      do: 'wait',
      wave: 'canary',
      reason: 'wave canary succeeded; soaking until 2026-12-05T10:35:00.000Z',
      until: minutes(35),
    });
    expect(nextStep(facts(soaking, { progress, now: minutes(35) }))).toMatchObject({ do: 'admit', wave: 'rest' });
  });

  it('opens a gate once, waits on it with its reason, goes on when it passed, and fails the wave when it failed', () => {
    const gatePositions = new Set([gateKey('after', 'canary'), gateKey('before', 'us')]);
    const progress = { canary: 'SUCCEEDED' } as const;
    expect(nextStep(facts(three, { progress, gatePositions }))).toEqual({ do: 'open-gate', gate: 'after:canary' });
    const waiting = new Map<string, GateProgress>([['after:canary', { state: 'WAITING', reason: 'waiting for 1 more approval', until: null }]]);
    expect(nextStep(facts(three, { progress, gatePositions, gates: waiting }))).toEqual({
      do: 'wait',
      wave: 'canary',
      reason: 'gate after:canary: waiting for 1 more approval',
      until: null,
    });
    const passed = new Map<string, GateProgress>([['after:canary', { state: 'PASSED', reason: 'approved' }]]);
    expect(nextStep(facts(three, { progress, gatePositions, gates: passed }))).toMatchObject({ do: 'admit', wave: 'europe' });
    const rejected = new Map<string, GateProgress>([['after:canary', { state: 'FAILED', reason: 'rejected by bob' }]]);
    expect(nextStep(facts(three, { progress, gatePositions, gates: rejected }))).toEqual({
      do: 'pause',
      wave: 'canary',
      reason: 'wave canary failed: gate after:canary: rejected by bob',
    });
  });

  it('admits only clusters inside their window, and waits for the earliest opening when none is', () => {
    const closed = (until: Date) => ({ open: false, reason: 'outside every ALLOW window ("nights")', until });
    const window = (cluster: string) => (cluster === 'eu-1' ? closed(minutes(60)) : cluster === 'eu-2' ? closed(minutes(30)) : open());
    expect(nextStep(facts(three, { progress: { canary: 'SUCCEEDED' }, window }))).toEqual({ do: 'admit', wave: 'europe', clusters: ['eu-3'] });
    const allClosed = (cluster: string) => (cluster === 'eu-3' ? closed(minutes(90)) : window(cluster));
    expect(nextStep(facts(three, { progress: { canary: 'SUCCEEDED' }, window: allClosed }))).toEqual({
      do: 'wait',
      wave: 'europe',
      reason: 'wave europe: no cluster may start now (eu-1: outside every ALLOW window ("nights"); and 2 more)',
      until: minutes(30),
      heldByWindows: ['eu-1', 'eu-2', 'eu-3'],
    });
  });

  it('never starts a cluster twice, never exceeds a wave’s concurrency, never runs ahead of an unfinished wave, and always ends (300 simulated runs)', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const policies: FailurePolicy[] = ['PAUSE', 'ROLLBACK_COMPLETED', 'CONTINUE'];
    for (let run = 0; run < 300; run++) {
      const waves: WaveInput[] = [
        { name: 'one', clusterSelector: 'ring=0' },
        { name: 'two', clusterSelector: 'ring in (1,2)', maxConcurrency: 1 + Math.floor(random() * 3), maxFailures: Math.floor(random() * 2) },
      ];
      const progress = new Map<string, ClusterProgress>();
      const started = new Set<string>();
      const run_ = facts(waves, {
        clusters: progress,
        failurePolicy: policies[run % 3]!,
        window: () => (random() < 0.2 ? { open: false, reason: 'closed', until: minutes(1) } : open()),
      });
      let ended = false;
      for (let step = 0; step < 200 && !ended; step++) {
        const next = nextStep(run_);
        if (next.do === 'admit') {
          for (const cluster of next.clusters) {
            expect(started.has(cluster), `${cluster} started twice`).toBe(false);
            started.add(cluster);
            progress.set(cluster, { outcome: 'ACTIVE' });
          }
          const wave = run_.plan.waves.find((w) => w.name === next.wave)!;
          expect(wave.clusters.filter((c) => progress.get(c)?.outcome === 'ACTIVE').length).toBeLessThanOrEqual(wave.maxConcurrency);
          const earlier = run_.plan.waves.slice(0, run_.plan.waves.indexOf(wave));
          for (const w of earlier) for (const c of w.clusters) expect(['ACTIVE', 'PENDING', undefined]).not.toContain(progress.get(c)?.outcome);
        } else if (next.do === 'wait') {
          // Some in-flight cluster ends (or the window opens on the next call).
          const active = [...progress.entries()].filter(([, p]) => p.outcome === 'ACTIVE');
          if (active.length > 0)
            progress.set(active[Math.floor(random() * active.length)]![0], { outcome: random() < 0.25 ? 'FAILED' : 'SUCCEEDED', endedAt: t0 });
        } else {
          ended = true;
        }
      }
      expect(ended, `run ${run} did not end`).toBe(true);
    }
  });
});
