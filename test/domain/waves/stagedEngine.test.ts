import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventType } from '../../../src/domain/events.js';
import { InProcessEventBus } from '../../../src/domain/EventBus.js';
import { EventLog } from '../../../src/domain/EventLog.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from '../../../src/domain/ports.js';
import { RolloutEngine } from '../../../src/domain/RolloutEngine.js';
import { RolloutLauncher, type RolloutPlan, type StagedLaunch } from '../../../src/domain/RolloutLauncher.js';
import { RolloutService } from '../../../src/domain/RolloutService.js';
import { GATE_TYPES, type GateType } from '../../../src/domain/gates/registry.js';
import { GateLooks, type LookAnswer } from '../../../src/domain/gates/looks.js';
import { until } from '../../helpers/until.js';
import type { GateProgress } from '../../../src/domain/waves/progress.js';
import { type WaveStrategyRequest as WaveStrategy, waveStrategyInput } from '../../../src/domain/waves/strategy.js';
import { KIND_CONTRACTS } from '../../../src/kinds/index.js';
import { Registry } from 'prom-client';
import { startWaveMetrics } from '../../../src/waveMetrics.js';
import { openDatabase, type Database } from '../../../src/store/db.js';

/** Member clusters in memory: a target converges at its second observation, or fails when its cluster is "bad". */
class FakeDriver implements RolloutDriver {
  readonly kind = 'AGENT_POOL' as const;
  readonly admissions: string[] = [];
  readonly observations = new Map<string, number>();
  readonly failing = new Set<string>();
  /** Clusters whose targets never converge. */
  readonly stuck = new Set<string>();
  /** Clusters whose status says Ready at every look, before any change was written (a stale Ready). */
  readonly alreadyReady = new Set<string>();
  /** Targets looked at before they were admitted (the engine must never ask: it would read a stale status). */
  readonly observedUnadmitted: string[] = [];

  async admit(target: AdmittedTarget): Promise<void> {
    this.admissions.push(`${target.cluster ?? 'local'}/${target.name}`);
  }

  async observe(target: AdmittedTarget): Promise<TargetObservation> {
    const key = `${target.cluster ?? 'local'}/${target.name}`;
    if (!this.admissions.includes(key)) this.observedUnadmitted.push(key);
    const seen = (this.observations.get(key) ?? 0) + 1;
    this.observations.set(key, seen);
    if (this.failing.has(target.cluster ?? 'local')) return { phase: 'failed', reason: 'ImagePullBackOff' };
    if (this.stuck.has(target.cluster ?? 'local')) return { phase: 'progressing' };
    if (this.alreadyReady.has(target.cluster ?? 'local')) return { phase: 'succeeded' };
    return seen < 2 ? { phase: 'progressing' } : { phase: 'succeeded' };
  }
}

const CLUSTERS: { name: string; labels: Record<string, string> }[] = [
  { name: 'canary-1', labels: { stage: 'canary' } },
  { name: 'prod-a', labels: { stage: 'prod', order: '2' } },
  { name: 'prod-b', labels: { stage: 'prod', order: '1' } },
  { name: 'other', labels: {} },
];

describe('a staged rollout in the engine', () => {
  let dir: string;
  let db: Database;
  let rollouts: RolloutService;
  let launcher: RolloutLauncher;
  let engine: RolloutEngine;
  let driver: FakeDriver;
  let bus: InProcessEventBus;
  let now: number;
  let health: Map<string, string>;
  const signal = new AbortController().signal;
  const logger = { info: () => {}, warn: () => {} };

  function newEngine(): RolloutEngine {
    const e = new RolloutEngine(rollouts, logger, {
      now: () => now,
      clusterLabels: async () => new Map(CLUSTERS.map((c) => [c.name, c.labels])),
      clusterHealth: async () => health,
    });
    e.connect(() => {}, launcher);
    e.registerDriver(driver);
    return e;
  }

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-staged-'));
    db = await openDatabase(`file:${path.join(dir, 'e.db')}`);
    bus = new InProcessEventBus();
    rollouts = new RolloutService(db.store, new EventLog(db.store, bus), KIND_CONTRACTS);
    now = Date.parse('2026-12-05T10:00:00Z');
    health = new Map();
    launcher = new RolloutLauncher(rollouts);
    driver = new FakeDriver();
    engine = newEngine();
  });
  afterEach(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Two pools in each cluster; maxUnavailable 100% unless said: only the waves hold admission back. */
  function plan(maxUnavailable = '100%'): RolloutPlan {
    return {
      kind: 'AGENT_POOL',
      fromVersion: 'agent:v1',
      toVersion: 'agent:v2',
      selector: {},
      strategy: { kind: 'AGENT_POOL', maxUnavailable, progressDeadlineSeconds: 600, failureThreshold: 1, autoRollback: false },
      targets: CLUSTERS.flatMap((c) =>
        ['p0', 'p1'].map((name) => ({ cluster: c.name, namespace: 'default', name, fromVersion: 'agent:v1', toVersion: 'agent:v2' })),
      ),
    };
  }

  function staged(strategy: WaveStrategy, startedBy = 'starter'): StagedLaunch {
    return { strategy: waveStrategyInput.parse(strategy)!, registered: CLUSTERS, startedBy };
  }

  const THREE_WAVES: WaveStrategy = {
    waves: [
      { name: 'canary', clusters: { labelSelector: 'stage=canary' } },
      { name: 'prod', clusters: { labelSelector: 'stage=prod' }, sortKey: 'order', maxConcurrency: '1' },
    ],
  };

  async function launch(strategy: WaveStrategy, extra: Partial<StagedLaunch> = {}, maxUnavailable?: string) {
    const p = plan(maxUnavailable);
    const result = await launcher.launch({ plan: p, cause: {}, request: { p, strategy }, staged: { ...staged(strategy), ...extra } });
    return result;
  }

  /** Reconciles until the rollout stops asking to be requeued (a fake clock jumps to each requeue). */
  async function drive(id: string, maxSteps = 200) {
    const clustersInFlight: string[][] = [];
    let last: { requeueAfterMs?: number } = {};
    for (let i = 0; i < maxSteps; i++) {
      last = await engine.reconcile(id, signal);
      const targets = await rollouts.allTargets(id);
      clustersInFlight.push([...new Set(targets.filter((t) => t.state === 'PROGRESSING').map((t) => t.cluster ?? 'local'))]);
      if (last.requeueAfterMs === undefined) break;
      now += last.requeueAfterMs;
    }
    return { rollout: (await rollouts.get(id))!, targets: await rollouts.allTargets(id), clustersInFlight, last };
  }

  const clusterOrder = () => [...new Set(driver.admissions.map((a) => a.split('/')[0]))];

  it('freezes the plan at launch: waves in order, sorted by the sort key, the rest in a remainder wave', async () => {
    const { run, rollout } = await launch(THREE_WAVES);
    expect(run?.waves.map((w) => [w.name, w.clusters])).toEqual([
      ['canary', ['canary-1']],
      ['prod', ['prod-b', 'prod-a']],
      ['remainder', ['other']],
    ]);
    const stored = await rollouts.runs.runOf(rollout.id);
    expect(stored?.waves.map((w) => w.clusters)).toEqual([['canary-1'], ['prod-b', 'prod-a'], ['other']]);
    expect(stored?.waveStates.every((w) => w.state === 'PENDING')).toBe(true);
  });

  it('admits wave by wave, one prod cluster at a time, and records each wave with its events and metrics', async () => {
    const registry = new Registry();
    const metrics = startWaveMetrics(registry, bus);
    const { rollout } = await launch(THREE_WAVES);
    await metrics.scrape(rollouts);
    expect(await registry.getSingleMetricAsString('rollplane_wave_clusters')).toContain('rollplane_wave_clusters{state="PENDING"} 4');
    const { rollout: done, clustersInFlight } = await drive(rollout.id);
    expect(await registry.getSingleMetricAsString('rollplane_wave_duration_seconds')).toContain(
      'rollplane_wave_duration_seconds_count{kind="AGENT_POOL",outcome="SUCCEEDED"} 3',
    );
    metrics.stop();
    expect(done.state).toBe('SUCCEEDED');
    expect(clusterOrder()).toEqual(['canary-1', 'prod-b', 'prod-a', 'other']);
    // Never two clusters at once (canary has one, prod maxConcurrency 1, remainder one).
    expect(Math.max(...clustersInFlight.map((c) => c.length))).toBe(1);
    const stored = await rollouts.runs.runOf(rollout.id);
    expect(stored?.waveStates.map((w) => w.state)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    const events = await rollouts.runs.runOf(rollout.id).then(() => db.store.read.listEventsAfter({ rolloutId: rollout.id }, undefined, 500));
    const waveEvents = events.events.filter((e) => e.type === 'WaveStarted' || e.type === 'WaveFinished').map((e) => `${e.type}:${e.payload.waveName}`);
    expect(waveEvents).toEqual([
      'WaveStarted:canary',
      'WaveFinished:canary',
      'WaveStarted:prod',
      'WaveFinished:prod',
      'WaveStarted:remainder',
      'WaveFinished:remainder',
    ]);
  });

  it('admits the rest of a cluster under way when its first targets are done and none is in flight (maxUnavailable 1 inside each)', async () => {
    // Found by the two-replica chaos test (test/e2e/stagedRunReplicas.test.ts): with the wave's concurrency taken by a
    // cluster whose first pool had converged and whose second was not admitted yet, the pass "waited" for that cluster
    // with nothing in flight, and so without anything to wake it: the run stalled after each cluster's first pool.
    const { rollout } = await launch(THREE_WAVES, {}, '1');
    const { rollout: done, clustersInFlight, targets, last } = await drive(rollout.id);
    expect(last.requeueAfterMs).toBeUndefined();
    expect(done.state, done.message ?? '').toBe('SUCCEEDED');
    expect(targets.every((t) => t.state === 'SUCCEEDED')).toBe(true);
    expect(clusterOrder()).toEqual(['canary-1', 'prod-b', 'prod-a', 'other']);
    expect(driver.admissions.filter((a) => a.startsWith('prod-b/'))).toEqual(['prod-b/p0', 'prod-b/p1']);
    expect(Math.max(...clustersInFlight.map((c) => c.length))).toBe(1);
  });

  it('a failing wave pauses the run and the next wave does not start; resuming accepts the failure and goes on', async () => {
    driver.failing.add('canary-1');
    const { rollout } = await launch(THREE_WAVES);
    const paused = await drive(rollout.id);
    expect(paused.rollout.state).toBe('PAUSED');
    expect(paused.rollout.message).toMatch(/wave canary failed: 1 cluster failed \(canary-1\)/);
    expect(clusterOrder()).toEqual(['canary-1']);
    expect(paused.targets.filter((t) => t.cluster !== 'canary-1').every((t) => t.state === 'PENDING')).toBe(true);
    expect((await rollouts.runs.runOf(rollout.id))?.waveStates[0]?.state).toBe('FAILED');
    await rollouts.resume(rollout.id);
    const done = await drive(rollout.id);
    expect(done.rollout.state).toBe('SUCCEEDED');
    expect(clusterOrder()).toEqual(['canary-1', 'prod-b', 'prod-a', 'other']);
  });

  it("fails a wave's targets at the wave's own progress deadline, not the rollout strategy's", async () => {
    driver.stuck.add('canary-1');
    const { rollout, run } = await launch({ waves: [{ name: 'canary', clusters: { names: ['canary-1'] }, progressDeadlineSeconds: 30 }] });
    expect(run?.waves[0]?.progressDeadlineSeconds).toBe(30);
    expect((await rollouts.runs.runOf(rollout.id))?.waves[0]?.progressDeadlineSeconds).toBe(30);
    const started = now;
    const paused = await drive(rollout.id);
    expect(paused.rollout.state).toBe('PAUSED');
    const canary = paused.targets.filter((t) => t.cluster === 'canary-1');
    expect(canary.map((t) => t.state)).toEqual(['FAILED', 'FAILED']);
    expect(canary[0]?.error).toMatch(/not converged within the progress deadline of 30s/);
    // Well before the strategy's 600 s.
    expect(now - started).toBeLessThan(60_000);
  });

  describe('a cluster the run reaches while it is UNREACHABLE', () => {
    it('WAIT (default): not started; the run looks again shortly and starts it once it answers', async () => {
      health.set('prod-b', 'UNREACHABLE');
      const { rollout } = await launch(THREE_WAVES);
      let result: { requeueAfterMs?: number } = {};
      for (let i = 0; i < 30; i++) {
        result = await engine.reconcile(rollout.id, signal);
        if (result.requeueAfterMs === 5000) break;
        now += result.requeueAfterMs ?? 0;
      }
      // The wave's other cluster went ahead; the wave waits for prod-b, looked at again in 5 s (not polled faster).
      expect(result.requeueAfterMs).toBe(5000);
      expect(clusterOrder()).toEqual(['canary-1', 'prod-a']);
      health.set('prod-b', 'READY');
      now += 5000;
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect(clusterOrder()).toEqual(['canary-1', 'prod-a', 'prod-b', 'other']);
    });

    it('SKIP: its targets are SKIPPED with the reason and the wave goes on', async () => {
      health.set('prod-b', 'UNREACHABLE');
      const { rollout } = await launch({ ...THREE_WAVES, unreachable: 'SKIP' });
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect(clusterOrder()).toEqual(['canary-1', 'prod-a', 'other']);
      const skipped = done.targets.filter((t) => t.cluster === 'prod-b');
      expect(skipped.map((t) => [t.state, t.error])).toEqual([
        ['SKIPPED', 'member cluster prod-b is UNREACHABLE (unreachable: SKIP)'],
        ['SKIPPED', 'member cluster prod-b is UNREACHABLE (unreachable: SKIP)'],
      ]);
    });

    it('WAIT with unreachableWaitSeconds: waits that long from when it first found the cluster down, under any leader, then acts as the fallback', async () => {
      health.set('prod-b', 'UNREACHABLE');
      const { rollout, run } = await launch({ ...THREE_WAVES, unreachableWaitSeconds: 60, unreachableAfterWait: 'SKIP' });
      expect(run?.unreachableWait).toEqual({ seconds: 60, fallback: 'SKIP' });
      let firstSeen: number | undefined;
      for (let pass = 0; pass < 40 && firstSeen === undefined; pass++) {
        const result = await engine.reconcile(rollout.id, signal);
        const since = (await rollouts.get(rollout.id))?.engineState.unreachableSince?.['prod-b'];
        if (since) firstSeen = Date.parse(since);
        else now += result.requeueAfterMs ?? 0;
      }
      expect(firstSeen).toBe(now);
      // Looked at again every 5 s, the last look at the bound's end, never past it; a new leader counts from the same instant.
      const looks: number[] = [];
      for (let pass = 0; pass < 40 && now < firstSeen! + 60_000; pass++) {
        if (pass === 3) engine = newEngine();
        const result = await engine.reconcile(rollout.id, signal);
        now += result.requeueAfterMs ?? 0;
        looks.push(now);
      }
      expect(now).toBe(firstSeen! + 60_000);
      expect(looks.every((at, i) => i === 0 || at - looks[i - 1]! <= 5000)).toBe(true);
      expect((await rollouts.allTargets(rollout.id)).filter((t) => t.cluster === 'prod-b').map((t) => t.state)).toEqual(['PENDING', 'PENDING']);
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect(done.rollout.message).toBe('skipped (each target says why): prod-b');
      expect(clusterOrder()).toEqual(['canary-1', 'prod-a', 'other']);
      expect(done.targets.filter((t) => t.cluster === 'prod-b').map((t) => [t.state, t.error])).toEqual([
        ['SKIPPED', `member cluster prod-b is UNREACHABLE: waited 60s since ${new Date(firstSeen!).toISOString()} (unreachable: WAIT, then SKIP)`],
        ['SKIPPED', `member cluster prod-b is UNREACHABLE: waited 60s since ${new Date(firstSeen!).toISOString()} (unreachable: WAIT, then SKIP)`],
      ]);
    });

    it('WAIT with a bound and no fallback given fails the cluster once the wait is over (the failure policy applies); a cluster back in time is started', async () => {
      health.set('prod-b', 'UNREACHABLE');
      health.set('prod-a', 'UNREACHABLE');
      const { rollout } = await launch({ ...THREE_WAVES, waves: THREE_WAVES.waves.map((w) => ({ ...w, maxConcurrency: '100%' })), unreachableWaitSeconds: 30 });
      let result: { requeueAfterMs?: number } = {};
      for (let pass = 0; pass < 40 && !(await rollouts.get(rollout.id))?.engineState.unreachableSince; pass++) {
        result = await engine.reconcile(rollout.id, signal);
        now += result.requeueAfterMs ?? 0;
      }
      health.delete('prod-a');
      const paused = await drive(rollout.id);
      expect(paused.rollout.state).toBe('PAUSED');
      expect(paused.rollout.message).toMatch(/wave prod failed: 1 cluster failed \(prod-b\)/);
      expect(paused.targets.find((t) => t.cluster === 'prod-b')?.error).toMatch(/waited 30s since .* \(unreachable: WAIT, then FAIL\)/);
      expect(paused.targets.filter((t) => t.cluster === 'prod-a').map((t) => t.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    });

    it('refuses a bound that does not apply, with its field', async () => {
      const cases: [WaveStrategy, string][] = [
        [{ ...THREE_WAVES, unreachable: 'SKIP', unreachableWaitSeconds: 60 }, 'input.waveStrategy.unreachableWaitSeconds'],
        [{ ...THREE_WAVES, unreachableWaitSeconds: 0 }, 'input.waveStrategy.unreachableWaitSeconds'],
        [{ ...THREE_WAVES, unreachableWaitSeconds: 60, unreachableAfterWait: 'WAIT' }, 'input.waveStrategy.unreachableAfterWait'],
        [{ ...THREE_WAVES, unreachableAfterWait: 'SKIP' }, 'input.waveStrategy.unreachableAfterWait'],
      ];
      for (const [strategy, field] of cases) {
        await expect(launch(strategy)).rejects.toMatchObject({ code: 'BAD_USER_INPUT', details: expect.objectContaining({ field }) });
      }
      expect(await rollouts.count({})).toBe(0);
    });

    it('FAIL: its targets fail with the reason, and the failure policy applies', async () => {
      health.set('prod-b', 'UNREACHABLE');
      const { rollout } = await launch({ ...THREE_WAVES, unreachable: 'FAIL' });
      const paused = await drive(rollout.id);
      expect(paused.rollout.state).toBe('PAUSED');
      expect(paused.rollout.message).toMatch(/wave prod failed: 1 cluster failed \(prod-b\)/);
      expect(clusterOrder()).toEqual(['canary-1']);
    });
  });

  it('keeps the kind failure threshold out of it: maxFailures decides, and CONTINUE ends FAILED naming the waves', async () => {
    driver.failing.add('prod-b');
    const { rollout } = await launch({ ...THREE_WAVES, failurePolicy: 'CONTINUE' });
    const done = await drive(rollout.id);
    expect(done.rollout.state).toBe('FAILED');
    expect(done.rollout.message).toMatch(/failed: prod/);
    // The failed wave starts no more clusters (prod-a stays out), the next wave runs.
    expect(clusterOrder()).toEqual(['canary-1', 'prod-b', 'other']);
    expect(done.targets.filter((t) => t.cluster === 'prod-a').map((t) => t.state)).toEqual(['CANCELLED', 'CANCELLED']);
  });

  it('ROLLBACK_COMPLETED fails the run and rolls back what it changed', async () => {
    driver.failing.add('prod-b');
    const { rollout } = await launch({ ...THREE_WAVES, failurePolicy: 'ROLLBACK_COMPLETED' });
    const done = await drive(rollout.id);
    expect(done.rollout.state).toBe('FAILED');
    const all = await rollouts.list({}, 10, undefined);
    const rollback = all.items.find((r) => r.rollbackOfId === rollout.id);
    expect(rollback).toBeDefined();
    // What it changed or was changing: canary's two pools and prod-b's two, never prod-a or other; last wave first.
    expect((await rollouts.allTargets(rollback!.id)).map((t) => t.cluster)).toEqual(['prod-b', 'prod-b', 'canary-1', 'canary-1']);
  });

  it('soaks after a wave: looks again when the soak ends, and not before, and admits nothing meanwhile', async () => {
    const { rollout } = await launch({
      waves: [
        { name: 'canary', clusters: { names: ['canary-1'] }, minSuccessSeconds: 600 },
        { name: 'rest', clusters: { labelSelector: 'stage' } },
      ],
      remainder: 'EXCLUDED',
    });
    let result: { requeueAfterMs?: number } = {};
    for (let i = 0; i < 10; i++) {
      result = await engine.reconcile(rollout.id, signal);
      if (result.requeueAfterMs && result.requeueAfterMs > 1000) break;
      now += result.requeueAfterMs ?? 0;
    }
    // Wave one ended; the soak's remaining time is the requeue (600 s less the few passes' worth).
    expect(result.requeueAfterMs).toBeGreaterThan(590_000);
    expect(clusterOrder()).toEqual(['canary-1']);
    // A leader taking over mid-soak (a new engine, nothing in memory) neither re-admits canary-1 nor cuts the soak short.
    engine = newEngine();
    now += 1000;
    const again = await engine.reconcile(rollout.id, signal);
    expect(again.requeueAfterMs).toBeGreaterThan(580_000);
    expect(driver.admissions.filter((a) => a.startsWith('canary-1'))).toHaveLength(2);
    now += again.requeueAfterMs!;
    const done = await drive(rollout.id);
    expect(done.rollout.state).toBe('SUCCEEDED');
    expect(done.rollout.message).toMatch(/excluded \(in no wave\): other/);
    expect(done.targets.filter((t) => t.cluster === 'other').map((t) => t.state)).toEqual(['SKIPPED', 'SKIPPED']);
    expect(driver.admissions.filter((a) => a.startsWith('canary-1'))).toHaveLength(2);
  });

  it('admits no cluster outside its maintenance window: waits until the window opens, saying why, and no sooner', async () => {
    // A freeze on prod for the next two hours (a DENY range), written through the policies' API.
    const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const freezeEnds = now + 2 * 3600_000;
    await rollouts.windows.create({
      name: 'prod-freeze',
      kind: 'DENY',
      clusterSelector: 'stage=prod',
      ranges: [{ from: iso(now - 3600_000), to: iso(freezeEnds) }],
    });
    await expect(rollouts.windows.create({ name: 'prod-freeze', kind: 'DENY', ranges: [{ from: iso(now), to: iso(freezeEnds) }] })).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await expect(rollouts.windows.create({ name: 'bad', kind: 'ALLOW', timeZone: 'Mars/Olympus', weekly: [] })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      details: { field: 'input.timeZone' },
    });
    const { rollout } = await launch(THREE_WAVES);
    let result: { requeueAfterMs?: number } = {};
    for (let i = 0; i < 20; i++) {
      result = await engine.reconcile(rollout.id, signal);
      if (result.requeueAfterMs && result.requeueAfterMs > 1000) break;
      now += result.requeueAfterMs ?? 0;
    }
    // Canary done; prod frozen: the next look is when the freeze ends, and nothing of prod was admitted.
    expect(clusterOrder()).toEqual(['canary-1']);
    expect(now + result.requeueAfterMs!).toBe(freezeEnds);
    const { decision } = await (async () => {
      const run = (await rollouts.runs.runOf(rollout.id))!;
      const policies = await rollouts.windows.policies();
      const { decideStage } = await import('../../../src/domain/waves/engineStage.js');
      const { decide } = await import('../../../src/domain/gates/maintenanceWindows.js');
      const labels = new Map(CLUSTERS.map((c) => [c.name, c.labels]));
      return decideStage(
        { run, gates: [], accepted: new Set(), now: new Date(now), window: (c) => decide(policies, labels.get(c) ?? {}, new Date(now)) },
        await rollouts.allTargets(rollout.id),
      );
    })();
    expect(decision).toMatchObject({ do: 'admit in', waiting: expect.stringMatching(/no cluster may start now \(prod-b: .*prod-freeze/) });
    now = freezeEnds;
    const done = await drive(rollout.id);
    expect(done.rollout.state).toBe('SUCCEEDED');
    expect(clusterOrder()).toEqual(['canary-1', 'prod-b', 'prod-a', 'other']);
    // Written once each, however many passes looked while the wave was held.
    const windowEvents = (await db.store.read.listEventsAfter({ rolloutId: rollout.id, types: ['WindowClosed', 'WindowOpened'] }, undefined, 50)).events;
    expect(windowEvents.map((e) => [e.type, e.payload.waveName, e.payload.clusters])).toEqual([
      ['WindowClosed', 'prod', ['prod-b', 'prod-a']],
      ['WindowOpened', 'prod', ['prod-b']],
    ]);
    expect(windowEvents[0]?.payload.until).toBe(new Date(freezeEnds).toISOString());
    expect((await rollouts.windows.delete('prod-freeze')).name).toBe('prod-freeze');
    expect(await rollouts.windows.list()).toEqual([]);
  });

  describe('an approval gate', () => {
    const GATED: WaveStrategy = {
      waves: [
        { name: 'canary', clusters: { names: ['canary-1'] } },
        { name: 'prod', clusters: { labelSelector: 'stage=prod' }, maxConcurrency: '100%', before: { type: 'APPROVAL', config: { required: 2 } } },
      ],
      remainder: 'EXCLUDED',
    };
    const decide = (rolloutId: string, deciderId: string, verdict: 'APPROVE' | 'REJECT' = 'APPROVE', role: 'deployer' | 'admin' | 'viewer' = 'deployer') =>
      rollouts.runs.decide({ rolloutId, gateKey: 'before:prod', verdict, comment: `by ${deciderId}`, deciderId, role }, new Date(now));

    it('waits without polling, counts a token once, refuses the starter and a viewer, and passes at two approvers', async () => {
      const { rollout } = await launch(GATED);
      const waiting = await drive(rollout.id);
      expect(waiting.last.requeueAfterMs).toBeUndefined(); // nothing in flight, no deadline: woken by a decision
      expect(waiting.rollout.state).toBe('PROGRESSING');
      expect(clusterOrder()).toEqual(['canary-1']);
      const [gate] = await rollouts.runs.gates(rollout.id, new Date(now));
      expect(gate?.progress).toMatchObject({ state: 'WAITING' });

      await expect(decide(rollout.id, 'starter')).rejects.toMatchObject({ code: 'FORBIDDEN' });
      await expect(decide(rollout.id, 'v', 'APPROVE', 'viewer')).rejects.toMatchObject({ code: 'FORBIDDEN' });
      await decide(rollout.id, 'alice');
      const twice = await decide(rollout.id, 'alice');
      expect(twice.progress.state).toBe('WAITING');
      await drive(rollout.id);
      expect(clusterOrder()).toEqual(['canary-1']);

      const passed = await decide(rollout.id, 'bob');
      expect(passed.progress.state).toBe('PASSED');
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect(clusterOrder().sort()).toEqual(['canary-1', 'prod-a', 'prod-b']);
      const [kept] = await rollouts.runs.gates(rollout.id, new Date(now));
      expect(kept?.row.state).toBe('PASSED');
      expect(kept?.decisions.map((d) => [d.tokenId, d.decision, d.comment])).toEqual([
        ['alice', 'APPROVE', 'by alice'],
        ['alice', 'APPROVE', 'by alice'],
        ['bob', 'APPROVE', 'by bob'],
      ]);
      await expect(decide(rollout.id, 'carol')).rejects.toMatchObject({ code: 'CONFLICT' });
    });

    it('one rejection fails the gate (the run pauses); a decision after an abort is CONFLICT', async () => {
      const { rollout } = await launch(GATED);
      await drive(rollout.id);
      await decide(rollout.id, 'alice', 'REJECT');
      const paused = await drive(rollout.id);
      expect(paused.rollout.state).toBe('PAUSED');
      expect(paused.rollout.message).toMatch(/gate before:prod: rejected by alice/);
      expect(clusterOrder()).toEqual(['canary-1']);
      await rollouts.abort(rollout.id);
      await expect(decide(rollout.id, 'bob')).rejects.toMatchObject({ code: 'CONFLICT' });
    });
  });

  it('refuses a bad strategy with its field path and stores nothing', async () => {
    const bad: [WaveStrategy, string][] = [
      [{ waves: [{ name: 'a', clusters: { names: ['nowhere'] } }] }, 'input.waveStrategy.waves[0].clusters[0]'],
      [{ waves: [{ name: 'a', clusters: { names: ['canary-1'] }, maxConcurrency: 'lots' }] }, 'input.waveStrategy.waves[0].maxConcurrency'],
      [
        { waves: [{ name: 'a', clusters: { names: ['canary-1'] }, before: { type: 'APPROVAL', config: { role: 'viewer' } } }] },
        'input.waveStrategy.waves[0].before.config.role',
      ],
      [{ waves: [{ name: 'a', clusters: { names: ['canary-1'] }, after: { type: 'NOPE' } }] }, 'input.waveStrategy.waves[0].after.type'],
      [{ waves: [{ name: 'Bad_Name', clusters: { names: ['canary-1'] } }] }, 'input.waveStrategy.waves[0].name'],
    ];
    for (const [strategy, field] of bad) {
      await expect(launch(strategy)).rejects.toMatchObject({ code: 'BAD_USER_INPUT', details: expect.objectContaining({ field }) });
    }
    expect(await rollouts.count({})).toBe(0);
  });

  it('a rollout without waves admits no target in a cluster outside its window either, and looks again when it opens', async () => {
    const iso = (ms: number) => new Date(ms).toISOString();
    const freezeEnds = now + 3600_000;
    await rollouts.windows.create({
      name: 'freeze-all-prod',
      kind: 'DENY',
      clusterSelector: 'stage=prod',
      ranges: [{ from: iso(now - 60_000), to: iso(freezeEnds) }],
    });
    const p = plan();
    const { rollout } = await launcher.launch({ plan: p, cause: {}, request: p });
    let result: { requeueAfterMs?: number } = {};
    for (let i = 0; i < 20; i++) {
      result = await engine.reconcile(rollout.id, signal);
      if (result.requeueAfterMs && result.requeueAfterMs > 1000) break;
      now += result.requeueAfterMs ?? 0;
    }
    expect(clusterOrder().sort()).toEqual(['canary-1', 'other']);
    expect(now + result.requeueAfterMs!).toBe(freezeEnds);
    now = freezeEnds;
    const done = await drive(rollout.id);
    expect(done.rollout.state).toBe('SUCCEEDED');
    expect(clusterOrder().sort()).toEqual(['canary-1', 'other', 'prod-a', 'prod-b']);
  });

  describe('a gate type that starts work and answers asynchronously (ANALYSIS, ALERT, EXTERNAL_CHECK)', () => {
    /** What the gate "measured", kept outside the engine (as the gate types keep theirs in SQL). */
    const kept = new Map<string, GateProgress>();
    const opens: string[] = [];
    const SCRIPTED: GateType = {
      takesDecisions: false,
      check: (config) => (config ?? {}) as Record<string, unknown>,
      async progress(_config, facts) {
        await new Promise((resolve) => setImmediate(resolve));
        return kept.get(facts.gate.id) ?? { state: 'WAITING', reason: 'not measured yet' };
      },
      async open(_config, facts) {
        opens.push(`${facts.gate.key} ${facts.gate.wave.clusters.join(',')} ${facts.gate.version}`);
      },
    };
    const GATED: WaveStrategy = {
      waves: [
        { name: 'canary', clusters: { names: ['canary-1'] }, after: { type: 'SCRIPTED' } },
        { name: 'prod', clusters: { labelSelector: 'stage=prod' }, maxConcurrency: '100%' },
      ],
      remainder: 'EXCLUDED',
    };

    beforeEach(() => {
      kept.clear();
      opens.length = 0;
      rollouts = new RolloutService(db.store, new EventLog(db.store, bus), KIND_CONTRACTS, { ...GATE_TYPES, SCRIPTED });
      launcher = new RolloutLauncher(rollouts);
      engine = newEngine();
    });

    it('is opened when reached and on each pass while it waits, holds the run while it answers WAITING, and a new leader reads the same answer', async () => {
      const refused = launcher.launch({
        plan: plan(),
        cause: {},
        request: {},
        staged: staged({ waves: [{ name: 'w', clusters: { names: ['other'] }, after: { type: 'NOPE' } }] }),
      });
      await expect(refused).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
      await expect(refused).rejects.toThrow('"NOPE" is not a gate type (known: APPROVAL, TIMED_WAIT, SCRIPTED)');
      const { rollout } = await launch(GATED);
      const gateId = `${rollout.id}:after:canary`;
      const waiting = await drive(rollout.id);
      expect(waiting.rollout.state).toBe('PROGRESSING');
      expect(clusterOrder()).toEqual(['canary-1']);
      expect(opens[0]).toBe('after:canary canary-1 agent:v2');
      const opened = opens.length;
      await engine.reconcile(rollout.id, signal);
      expect(opens.length).toBe(opened + 1); // a pass while it waits starts its work again (idempotent in the type)
      const [gate] = await rollouts.runs.gates(rollout.id, new Date(now));
      expect(gate?.progress).toEqual({ state: 'WAITING', reason: 'not measured yet' });

      // Inconclusive: the run pauses with the reason; no wave failed.
      kept.set(gateId, { state: 'WAITING', reason: 'analysis a-1 inconclusive', until: null, holds: true });
      const held = await drive(rollout.id);
      expect(held.rollout.state).toBe('PAUSED');
      expect(held.rollout.message).toMatch(/gate after:canary: analysis a-1 inconclusive; retry the gate, resume to accept it and go on, or abort/);
      expect((await rollouts.runs.runOf(rollout.id))?.waveStates.map((w) => w.state)).toEqual(['RUNNING', 'PENDING']);
      expect(clusterOrder()).toEqual(['canary-1']);

      // The measurement passes; a new leader (a new engine) reads it from what was kept, and a resume goes on.
      kept.set(gateId, { state: 'PASSED', reason: 'analysis a-2 successful' });
      engine = newEngine();
      await rollouts.resume(rollout.id);
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect(clusterOrder().sort()).toEqual(['canary-1', 'prod-a', 'prod-b']);
      const [ended] = await rollouts.runs.gates(rollout.id, new Date(now));
      expect(ended?.row).toMatchObject({ state: 'PASSED', reason: 'analysis a-2 successful' });
    });

    it('never waits on the network: a pass returns while the gate attempt hangs, and the kept answer wakes the rollout', async () => {
      const woken: string[] = [];
      const looks = new GateLooks({
        record: (attempt) =>
          db.store.transaction(function* (tx) {
            return yield* tx.insertGateAttempt(attempt);
          }),
        wake: (id) => woken.push(id),
        now: () => now,
      });
      let answer: (value: LookAnswer) => void = () => {};
      let asked = 0;
      const ASKING: GateType = {
        takesDecisions: false,
        check: (config) => (config ?? {}) as Record<string, unknown>,
        progress: (_config, facts) => {
          const last = facts.attempts.at(-1);
          return last?.answer === 'PROCEED' ? { state: 'PASSED', reason: last.reason } : { state: 'WAITING', reason: 'asking' };
        },
        async open(_config, facts) {
          looks.start(facts.gate, facts.attempts.length, facts.openedAt, 60_000, () => {
            asked++;
            return new Promise<LookAnswer>((resolve) => (answer = resolve));
          });
        },
      };
      rollouts = new RolloutService(db.store, new EventLog(db.store, bus), KIND_CONTRACTS, { ...GATE_TYPES, ASKING });
      launcher = new RolloutLauncher(rollouts);
      engine = newEngine();
      const { rollout } = await launch({ waves: [{ name: 'canary', clusters: { names: ['canary-1'] }, before: { type: 'ASKING' } }], remainder: 'EXCLUDED' });
      // Every pass returns although the endpoint has not answered (it never will until the test says so).
      const waiting = await drive(rollout.id);
      await engine.reconcile(rollout.id, signal);
      expect(asked).toBe(1);
      expect(waiting.rollout.state).toBe('PROGRESSING');
      expect(driver.admissions).toEqual([]);
      answer({ answer: 'PROCEED', afterMs: null, reason: 'answered proceed' });
      await until('the answer kept and the rollout woken', () => woken.includes(rollout.id));
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect((await rollouts.runs.gates(rollout.id, new Date(now)))[0]?.attempts.map((a) => [a.seq, a.answer])).toEqual([[0, 'PROCEED']]);
      looks.stop();
    });

    it('fails the wave when the gate fails: the failure policy applies', async () => {
      const { rollout } = await launch(GATED);
      await drive(rollout.id);
      kept.set(`${rollout.id}:after:canary`, { state: 'FAILED', reason: 'analysis a-1 failed: errors > 0' });
      const failed = await drive(rollout.id);
      expect(failed.rollout.state).toBe('PAUSED');
      expect(failed.rollout.message).toMatch(/wave canary failed: gate after:canary: analysis a-1 failed/);
      expect((await rollouts.runs.runOf(rollout.id))?.waveStates.map((w) => w.state)).toEqual(['FAILED', 'PENDING']);
      expect(clusterOrder()).toEqual(['canary-1']);
    });
  });

  /**
   * Issue 30's "Why": the complaints of the anchors' users, each as the outcome that user wanted, over the real engine
   * and store (fake members and clock). Named after the complaint; the e2e file has those about real clusters.
   */
  describe("the anchors' users' complaints", () => {
    const eventsOf = async (rolloutId: string, types: EventType[]) => (await db.store.read.listEventsAfter({ rolloutId, types }, undefined, 500)).events;
    const admittedAt = (targets: readonly { cluster?: string; admittedAt: Date | null }[], cluster: string) =>
      Math.min(...targets.filter((t) => t.cluster === cluster).map((t) => t.admittedAt?.getTime() ?? Infinity));
    const finishedAt = (targets: readonly { cluster?: string; finishedAt: Date | null }[], cluster: string) =>
      Math.max(...targets.filter((t) => t.cluster === cluster).map((t) => t.finishedAt?.getTime() ?? -Infinity));

    it('rancher/fleet#3586, open-cluster-management-io/ocm#327: a failing wave blocks the next, however long and whoever leads', async () => {
      driver.failing.add('canary-1');
      const { rollout } = await launch(THREE_WAVES);
      expect((await drive(rollout.id)).rollout.state).toBe('PAUSED');
      // A day of resyncs, under a new leader: the later waves never start on their own.
      engine = newEngine();
      for (let hour = 0; hour < 24; hour++) {
        now += 3600_000;
        await engine.reconcile(rollout.id, signal);
      }
      expect(clusterOrder()).toEqual(['canary-1']);
      expect((await rollouts.get(rollout.id))?.state).toBe('PAUSED');
      expect((await rollouts.runs.runOf(rollout.id))?.waveStates.map((w) => w.state)).toEqual(['FAILED', 'PENDING', 'PENDING']);
      expect((await rollouts.allTargets(rollout.id)).filter((t) => t.cluster !== 'canary-1').every((t) => t.state === 'PENDING')).toBe(true);
    });

    it('karmada-io/karmada#7767: a cluster that never turns healthy fails at its deadline, and the next cluster is never started', async () => {
      driver.stuck.add('prod-b');
      const { rollout } = await launch({
        waves: [
          { name: 'canary', clusters: { names: ['canary-1'] } },
          { name: 'prod', clusters: { labelSelector: 'stage=prod' }, sortKey: 'order', progressDeadlineSeconds: 30 },
        ],
        remainder: 'EXCLUDED',
      });
      const paused = await drive(rollout.id);
      expect(paused.rollout.state).toBe('PAUSED');
      expect(paused.rollout.message).toMatch(/wave prod failed: 1 cluster failed \(prod-b\)/);
      // prod-b comes first by its sort key; prod-a, next in order, was never started.
      expect(clusterOrder()).toEqual(['canary-1', 'prod-b']);
      expect(paused.targets.filter((t) => t.cluster === 'prod-b').map((t) => t.error)).toEqual([
        expect.stringMatching(/not converged within the progress deadline of 30s/),
        expect.stringMatching(/not converged within the progress deadline of 30s/),
      ]);
      expect(paused.targets.filter((t) => t.cluster === 'prod-a').map((t) => t.state)).toEqual(['PENDING', 'PENDING']);
    });

    it('argoproj/argo-cd#29410, open-cluster-management-io/ocm#1201: a Ready read before the change was written advances no wave; production never before dev', async () => {
      // Every later cluster already says Ready (its status from before the change); the first wave takes its time.
      for (const cluster of ['prod-a', 'prod-b', 'other']) driver.alreadyReady.add(cluster);
      driver.stuck.add('canary-1');
      const { rollout } = await launch(THREE_WAVES);
      for (let pass = 0; pass < 30; pass++) {
        now += (await engine.reconcile(rollout.id, signal)).requeueAfterMs ?? 1000;
      }
      expect(clusterOrder()).toEqual(['canary-1']);
      const held = await rollouts.allTargets(rollout.id);
      expect(held.filter((t) => t.cluster !== 'canary-1').map((t) => t.state)).toEqual(Array(6).fill('PENDING'));
      expect((await rollouts.runs.runOf(rollout.id))?.waveStates.map((w) => w.state)).toEqual(['RUNNING', 'PENDING', 'PENDING']);
      driver.stuck.delete('canary-1');
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect(clusterOrder()).toEqual(['canary-1', 'prod-b', 'prod-a', 'other']);
      // No status was ever read of a target before the engine wrote its change.
      expect(driver.observedUnadmitted).toEqual([]);
      for (const cluster of ['prod-a', 'prod-b']) expect(admittedAt(done.targets, cluster)).toBeGreaterThanOrEqual(finishedAt(done.targets, 'canary-1'));
    });

    it("akuity/kargo#7032: a wave that succeeded but is not verified yet holds the next one, whatever the leader's memory", async () => {
      const { rollout } = await launch({
        waves: [
          { name: 'dev', clusters: { names: ['canary-1'] }, after: { type: 'TIMED_WAIT', config: { seconds: 300 } } },
          { name: 'prod', clusters: { labelSelector: 'stage=prod' }, maxConcurrency: '100%' },
        ],
        remainder: 'EXCLUDED',
      });
      let result: { requeueAfterMs?: number } = {};
      for (let pass = 0; pass < 20 && !(result.requeueAfterMs && result.requeueAfterMs > 1000); pass++) {
        result = await engine.reconcile(rollout.id, signal);
        if (!(result.requeueAfterMs && result.requeueAfterMs > 1000)) now += result.requeueAfterMs ?? 0;
      }
      const [verification] = await rollouts.runs.gates(rollout.id, new Date(now));
      expect(verification?.row.key).toBe('after:dev');
      expect(verification?.progress.state).toBe('WAITING');
      expect((await rollouts.allTargets(rollout.id)).filter((t) => t.cluster === 'canary-1').map((t) => t.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
      // A new leader in the middle of the verification does not take the success as enough.
      engine = newEngine();
      now += 1000;
      await engine.reconcile(rollout.id, signal);
      expect(clusterOrder()).toEqual(['canary-1']);
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      const opened = verification!.row.openedAt.getTime();
      for (const cluster of ['prod-a', 'prod-b']) expect(admittedAt(done.targets, cluster)).toBeGreaterThanOrEqual(opened + 300_000);
    });

    it('argoproj/argo-cd#17974: a whole fleet rollout can be paused mid-wave and resumed; in-flight clusters finish, none starts meanwhile', async () => {
      const { rollout } = await launch({ waves: [{ name: 'fleet', clusters: { labelSelector: 'stage' }, maxConcurrency: '1' }], remainder: 'EXCLUDED' });
      await engine.reconcile(rollout.id, signal);
      expect(clusterOrder()).toEqual(['canary-1']);
      await rollouts.pause(rollout.id, 'change freeze called by on-call');
      for (let minute = 0; minute < 30; minute++) {
        now += 60_000;
        await engine.reconcile(rollout.id, signal);
        if (minute === 15) engine = newEngine();
      }
      const paused = await rollouts.allTargets(rollout.id);
      expect(clusterOrder()).toEqual(['canary-1']);
      expect(paused.filter((t) => t.cluster === 'canary-1').map((t) => t.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
      expect((await rollouts.get(rollout.id))?.state).toBe('PAUSED');
      await rollouts.resume(rollout.id);
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect(clusterOrder()).toEqual(['canary-1', 'prod-a', 'prod-b']);
    });

    it('argoproj/argo-cd#10048: the run waits between batches as long as asked before the next starts', async () => {
      const { rollout } = await launch({
        waves: [
          { name: 'first', clusters: { names: ['canary-1'] }, minSuccessSeconds: 900 },
          { name: 'second', clusters: { labelSelector: 'stage=prod' }, maxConcurrency: '100%', minSuccessSeconds: 1800 },
        ],
      });
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      const secondStarts = Math.min(admittedAt(done.targets, 'prod-a'), admittedAt(done.targets, 'prod-b'));
      const secondEnds = Math.max(finishedAt(done.targets, 'prod-a'), finishedAt(done.targets, 'prod-b'));
      expect(secondStarts - finishedAt(done.targets, 'canary-1')).toBeGreaterThanOrEqual(900_000);
      expect(admittedAt(done.targets, 'other') - secondEnds).toBeGreaterThanOrEqual(1800_000);
    });

    it('rancher/fleet#3828: clusters that match no wave are not silently dropped: they get a last wave, or are listed as excluded', async () => {
      const { rollout, run } = await launch({ waves: [{ name: 'prod', clusters: { labelSelector: 'stage=prod' } }] });
      expect(run?.waves.map((w) => [w.name, w.clusters])).toEqual([
        ['prod', ['prod-a', 'prod-b']],
        ['remainder', ['canary-1', 'other']],
      ]);
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect(done.targets.every((t) => t.state === 'SUCCEEDED')).toBe(true);
      expect(clusterOrder().sort()).toEqual(['canary-1', 'other', 'prod-a', 'prod-b']);
    });

    it('an offline cluster does not block its partition forever: the others go on, and the run ends saying which was skipped', async () => {
      health.set('prod-b', 'UNREACHABLE');
      const { rollout } = await launch({ ...THREE_WAVES, unreachable: 'SKIP' });
      const done = await drive(rollout.id);
      expect(done.rollout.state).toBe('SUCCEEDED');
      expect(clusterOrder()).toEqual(['canary-1', 'prod-a', 'other']);
      expect(done.rollout.message).toBe('skipped (each target says why): prod-b');
    });

    it('system-upgrade-controller#63: no cluster starts outside its maintenance window; one in flight when it closes finishes', async () => {
      // prod may change from 02:00 to 04:00 UTC, every day; it is Saturday 10:00.
      await rollouts.windows.create({
        name: 'prod-nights',
        kind: 'ALLOW',
        clusterSelector: 'stage=prod',
        weekly: [{ days: ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'], start: '02:00', end: '04:00' }],
      });
      driver.stuck.add('prod-b');
      const { rollout } = await launch({ ...THREE_WAVES, waves: THREE_WAVES.waves.map((w) => ({ ...w, progressDeadlineSeconds: 4 * 3600 })) });
      let result: { requeueAfterMs?: number } = {};
      for (let pass = 0; pass < 20 && !(result.requeueAfterMs && result.requeueAfterMs > 60_000); pass++) {
        result = await engine.reconcile(rollout.id, signal);
        if (!(result.requeueAfterMs && result.requeueAfterMs > 60_000)) now += result.requeueAfterMs ?? 0;
      }
      expect(clusterOrder()).toEqual(['canary-1']);
      expect(now + result.requeueAfterMs!).toBe(Date.parse('2026-12-06T02:00:00Z'));
      now = Date.parse('2026-12-06T02:00:00Z');
      await engine.reconcile(rollout.id, signal);
      expect(clusterOrder()).toEqual(['canary-1', 'prod-b']);
      // The window closes with prod-b still changing: it finishes; prod-a waits for the next night.
      now = Date.parse('2026-12-06T04:30:00Z');
      driver.stuck.delete('prod-b');
      for (let pass = 0; pass < 5; pass++) result = await engine.reconcile(rollout.id, signal);
      const targets = await rollouts.allTargets(rollout.id);
      expect(targets.filter((t) => t.cluster === 'prod-b').map((t) => t.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
      expect(clusterOrder()).toEqual(['canary-1', 'prod-b']);
      expect(now + result.requeueAfterMs!).toBe(Date.parse('2026-12-07T02:00:00Z'));
      now = Date.parse('2026-12-07T02:00:00Z');
      expect((await drive(rollout.id)).rollout.state).toBe('SUCCEEDED');
      expect(clusterOrder()).toEqual(['canary-1', 'prod-b', 'prod-a', 'other']);
    });

    it('Keel, Kargo: an approval is not "anyone in the channel": only the role asked, never the starter, each kept with who and why', async () => {
      const { rollout } = await launch({
        waves: [
          { name: 'canary', clusters: { names: ['canary-1'] } },
          { name: 'prod', clusters: { labelSelector: 'stage=prod' }, before: { type: 'APPROVAL', config: { role: 'admin' } } },
        ],
        remainder: 'EXCLUDED',
      });
      await drive(rollout.id);
      const decide = (deciderId: string, role: 'viewer' | 'deployer' | 'admin') =>
        rollouts.runs.decide(
          { rolloutId: rollout.id, gateKey: 'before:prod', verdict: 'APPROVE', comment: `ok from ${deciderId}`, deciderId, role },
          new Date(now),
        );
      await expect(decide('vic', 'viewer')).rejects.toMatchObject({ code: 'FORBIDDEN' });
      await expect(decide('dan', 'deployer')).rejects.toMatchObject({ code: 'FORBIDDEN' });
      await expect(decide('starter', 'admin')).rejects.toMatchObject({ code: 'FORBIDDEN' });
      await drive(rollout.id);
      expect(clusterOrder()).toEqual(['canary-1']);
      expect((await decide('ada', 'admin')).progress.state).toBe('PASSED');
      expect((await drive(rollout.id)).rollout.state).toBe('SUCCEEDED');
      const [gate] = await rollouts.runs.gates(rollout.id, new Date(now));
      expect(gate?.decisions.map((d) => [d.tokenId, d.role, d.decision, d.comment])).toEqual([['ada', 'admin', 'APPROVE', 'ok from ada']]);
      expect((await eventsOf(rollout.id, [EventType.GateApproved])).map((e) => e.payload.by)).toEqual(['ada']);
    });
  });

  it('property: a stale Ready cannot advance a wave (random fleets, waves and member behaviours, seeded)', async () => {
    // mulberry32: the same cases on every run; a failure names its seed.
    const random = (seed: number) => () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const names = CLUSTERS.map((c) => c.name);
    for (let seed = 1; seed <= 25; seed++) {
      const rand = random(seed);
      const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!;
      for (const set of [driver.failing, driver.stuck, driver.alreadyReady]) set.clear();
      // Each cluster: already Ready (its status from before any write), failing, slow (stuck a while) or normal.
      const behaviour = new Map(names.map((c) => [c, pick(['ready', 'ready', 'normal', 'fail', 'stuck'] as const)]));
      for (const [c, b] of behaviour) (b === 'ready' ? driver.alreadyReady : b === 'fail' ? driver.failing : b === 'stuck' ? driver.stuck : new Set()).add(c);
      const order = [...names].sort(() => rand() - 0.5);
      const cut = 1 + Math.floor(rand() * (names.length - 1));
      const strategy: WaveStrategy = {
        waves: [
          { name: 'one', clusters: { names: order.slice(0, cut) }, maxConcurrency: pick(['1', '2', '100%']), maxFailures: pick(['0', '1']) },
          { name: 'two', clusters: { names: order.slice(cut) }, maxConcurrency: pick(['1', '50%', '100%']), progressDeadlineSeconds: 20 },
        ],
      };
      const p = { ...plan(), toVersion: `agent:v${seed + 1}` };
      p.targets = p.targets.map((t) => ({ ...t, toVersion: p.toVersion }));
      const { rollout } = await launcher.launch({ plan: p, cause: {}, request: { p, strategy }, staged: staged(strategy) });
      const waveOf = (cluster: string) => (order.indexOf(cluster) < cut ? 0 : 1);
      for (let pass = 0; pass < 120; pass++) {
        const result = await engine.reconcile(rollout.id, signal);
        const targets = await rollouts.allTargets(rollout.id);
        const firstSettled = targets.filter((t) => waveOf(t.cluster!) === 0).every((t) => ['SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'].includes(t.state));
        const secondTouched = targets.filter((t) => waveOf(t.cluster!) === 1 && t.state !== 'PENDING' && t.state !== 'CANCELLED');
        expect(secondTouched.length === 0 || firstSettled, `seed ${seed}: wave two moved before wave one settled`).toBe(true);
        // A target counts as done only after the engine wrote its change and then looked: never on a status read first.
        for (const t of targets.filter((t) => t.state === 'SUCCEEDED')) expect(t.admittedAt, `seed ${seed}`).not.toBeNull();
        if (result.requeueAfterMs === undefined) break;
        now += result.requeueAfterMs;
      }
      expect(driver.observedUnadmitted, `seed ${seed}`).toEqual([]);
      const ended = (await rollouts.get(rollout.id))!;
      if (ended.state === 'PAUSED' || ended.state === 'PROGRESSING') await rollouts.abort(rollout.id);
      // Let what is still in flight converge, so that the next case may change the same pools.
      driver.stuck.clear();
      await drive(rollout.id);
    }
  });

  it('a rollout without waves is not staged (no run rows)', async () => {
    const p = plan();
    const { rollout } = await launcher.launch({ plan: p, cause: {}, request: p });
    expect(await rollouts.runs.runOf(rollout.id)).toBeUndefined();
  });
});
