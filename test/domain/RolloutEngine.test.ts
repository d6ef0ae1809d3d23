import { KIND_CONTRACTS } from '../../src/kinds/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InProcessEventBus } from '../../src/domain/EventBus.js';
import { EventLog } from '../../src/domain/EventLog.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from '../../src/domain/ports.js';
import { RolloutEngine } from '../../src/domain/RolloutEngine.js';
import { FULL_OBSERVATION_BELOW } from '../../src/domain/engineSteps.js';
import { resolveMaxUnavailable } from '../../src/domain/kinds/strategy.js';
import { RolloutLauncher, type RolloutPlan } from '../../src/domain/RolloutLauncher.js';
import { RolloutService } from '../../src/domain/RolloutService.js';
import { openDatabase, type Database } from '../../src/store/db.js';
import type { PrismaClient } from '../../src/store/generated/client.js';
import { openTestPrisma } from '../helpers/prisma.js';
import type { AgentPoolStrategy } from '../../src/kinds/agentPool/contract.js';

/** A fleet in memory: a target converges `steps` observations after admission, or fails when its version is bad. */
class FakeDriver implements RolloutDriver {
  readonly kind = 'AGENT_POOL' as const;
  readonly running = new Map<string, string>();
  readonly admissions: string[] = [];
  readonly observations = new Map<string, number>();
  maxInFlightSeen = 0;
  finished: string[] = [];
  constructor(private readonly steps = 1) {}

  async admit(target: AdmittedTarget): Promise<void> {
    this.admissions.push(`${target.name}->${target.toVersion}`);
    this.observations.set(target.name, 0);
  }

  async observe(target: AdmittedTarget): Promise<TargetObservation> {
    const seen = (this.observations.get(target.name) ?? 0) + 1;
    this.observations.set(target.name, seen);
    if (target.toVersion.includes(':bad')) return { phase: 'failed', reason: 'ImagePullBackOff' };
    if (seen < this.steps) return { phase: 'progressing', message: 'starting' };
    this.running.set(target.name, target.toVersion);
    return { phase: 'succeeded' };
  }

  async finish(rollout: { id: string }): Promise<void> {
    this.finished.push(rollout.id);
  }
}

describe('RolloutEngine', () => {
  let dir: string;
  let db: Database;
  let rollouts: RolloutService;
  let launcher: RolloutLauncher;
  let engine: RolloutEngine;
  let driver: FakeDriver;
  let now: number;
  let prisma: PrismaClient;
  const signal = new AbortController().signal;
  const logger = { info: () => {}, warn: () => {} };

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-engine-'));
    db = await openDatabase(`file:${path.join(dir, 'e.db')}`);
    prisma = await openTestPrisma(path.join(dir, 'e.db'));
    const log = new EventLog(db.store, new InProcessEventBus());
    rollouts = new RolloutService(db.store, log, KIND_CONTRACTS);
    now = Date.parse('2026-11-30T00:00:00Z');
    engine = new RolloutEngine(rollouts, logger, { now: () => now });
    launcher = new RolloutLauncher(rollouts);
    engine.connect(() => {}, launcher);
    driver = new FakeDriver(2);
    engine.registerDriver(driver);
  });
  afterEach(async () => {
    await prisma.$disconnect();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function plan(n: number, strategy: Partial<AgentPoolStrategy>, version = 'agent:v2', skip: number[] = []): RolloutPlan {
    return {
      kind: 'AGENT_POOL',
      fromVersion: 'agent:v1',
      toVersion: version,
      selector: {},
      strategy: { kind: 'AGENT_POOL', progressDeadlineSeconds: 600, failureThreshold: 1, autoRollback: false, ...strategy },
      targets: Array.from({ length: n }, (_, i) => ({
        namespace: 'default',
        name: `pool-${i}`,
        fromVersion: 'agent:v1',
        toVersion: version,
        ...(skip.includes(i) ? { skipReason: 'held' } : {}),
      })),
    };
  }

  async function launch(p: RolloutPlan) {
    return (await launcher.launch({ plan: p, cause: {}, request: p })).rollout;
  }

  /** Reconciles until the rollout stops asking to be requeued; returns the in-flight maximum seen between steps. */
  async function drive(id: string, maxSteps = 200) {
    let maxInFlight = 0;
    for (let i = 0; i < maxSteps; i++) {
      const result = await engine.reconcile(id, signal);
      const targets = await rollouts.allTargets(id);
      maxInFlight = Math.max(maxInFlight, targets.filter((t) => t.state === 'PROGRESSING').length);
      if (result.requeueAfterMs === undefined) break;
      now += result.requeueAfterMs;
    }
    return { maxInFlight, rollout: (await rollouts.get(id))!, targets: await rollouts.allTargets(id) };
  }

  it('never has more targets in flight than maxUnavailable, and finishes every target', async () => {
    const rollout = await launch(plan(10, { maxUnavailable: '3' }));
    const { maxInFlight, rollout: done, targets } = await drive(rollout.id);
    expect(maxInFlight).toBe(3);
    expect(done.state).toBe('SUCCEEDED');
    expect(targets.every((t) => t.state === 'SUCCEEDED')).toBe(true);
    expect(driver.admissions).toHaveLength(10);
    expect(driver.finished).toEqual([rollout.id]);
    const revisions = await prisma.revision.findMany({ where: { name: 'pool-0' }, orderBy: { n: 'asc' } });
    expect(revisions.map((r) => [r.n, r.version])).toEqual([
      [1, 'agent:v1'],
      [2, 'agent:v2'],
    ]);
  });

  it('keeps a change notified while its target is being admitted: a large rollout observes it on its next pass, not at its next full observation', async () => {
    // More targets in flight than FULL_OBSERVATION_BELOW: between full observations a pass observes only notified ones.
    const n = FULL_OBSERVATION_BELOW + 44;
    driver = new FakeDriver(1); // converges at its first observation
    engine.registerDriver(driver);
    const admit = driver.admit.bind(driver);
    // Each target's change arrives while the pass still admits the others (before its batch is recorded PROGRESSING).
    driver.admit = async (target) => {
      await admit(target);
      engine.targetChanged('AGENT_POOL', target.namespace, target.name);
    };
    const rollout = await launch(plan(n, { maxUnavailable: '100%' }));
    await engine.reconcile(rollout.id, signal); // admits all of them
    expect((await rollouts.allTargets(rollout.id)).filter((t) => t.state === 'PROGRESSING')).toHaveLength(n);
    now += 1000; // the poll, well before the next full observation
    await engine.reconcile(rollout.id, signal);
    expect((await rollouts.allTargets(rollout.id)).filter((t) => t.state === 'SUCCEEDED')).toHaveLength(n);
  });

  it('admits targets in plan order and never admits skipped ones', async () => {
    const rollout = await launch(plan(5, { maxUnavailable: '1' }, 'agent:v2', [1, 3]));
    await drive(rollout.id);
    expect(driver.admissions).toEqual(['pool-0->agent:v2', 'pool-2->agent:v2', 'pool-4->agent:v2']);
  });

  it('fails the rollout at the failure threshold and admits nothing more', async () => {
    const rollout = await launch(plan(6, { maxUnavailable: '1', failureThreshold: 1 }, 'agent:bad'));
    const { rollout: done, targets } = await drive(rollout.id);
    expect(done.state).toBe('FAILED');
    expect(done.message).toContain('ImagePullBackOff');
    expect(driver.admissions).toEqual(['pool-0->agent:bad']);
    expect(targets.slice(1).every((t) => t.state === 'CANCELLED')).toBe(true);
  });

  it('rolls the changed targets back automatically when asked', async () => {
    const rollout = await launch(plan(4, { maxUnavailable: '2', failureThreshold: 2, autoRollback: true }, 'agent:bad'));
    await drive(rollout.id);
    const rollback = (await prisma.rollout.findFirst({ where: { rollbackOfId: rollout.id } }))!;
    expect(rollback).toBeTruthy();
    // Started by the engine, and kept so (Rollout.startedBy): no token's id is `rollplane`.
    expect((await rollouts.get(rollback.id))!.startedBy).toBe('rollplane');
    const { rollout: done } = await drive(rollback.id);
    expect(done.state).toBe('SUCCEEDED');
    expect(driver.admissions.filter((a) => a.endsWith('agent:v1')).sort()).toEqual(['pool-0->agent:v1', 'pool-1->agent:v1']);
    expect((await rollouts.get(rollout.id))!.state).toBe('ROLLED_BACK');
  });

  it('rolls back a rollout that started from several versions with no single toVersion: each target goes back to its own (ADR 0046)', async () => {
    const mixed = plan(4, { maxUnavailable: '2', failureThreshold: 2, autoRollback: true }, 'agent:bad');
    const rollout = await launch({ ...mixed, fromVersion: null, targets: mixed.targets.map((t, i) => ({ ...t, fromVersion: `agent:v${i % 2}` })) });
    await drive(rollout.id);
    const rollback = (await rollouts.list({ kind: 'AGENT_POOL' }, 10, undefined)).items.find((r) => r.rollbackOfId === rollout.id)!;
    expect(rollback.toVersion).toBeNull();
    expect(rollback.fromVersion).toBe('agent:bad');
    const [launched] = await prisma.event.findMany({ where: { rolloutId: rollback.id }, orderBy: { id: 'asc' }, take: 1 });
    expect(JSON.parse(launched!.payload)).toEqual({ from: null, to: 'PENDING', toVersion: null, targets: 2 });
    await drive(rollback.id);
    expect(driver.admissions.filter((a) => !a.endsWith('agent:bad')).sort()).toEqual(['pool-0->agent:v0', 'pool-1->agent:v1']);
  });

  it('still starts the automatic rollback, once, when the process died right after failing the rollout', async () => {
    const rollout = await launch(plan(2, { maxUnavailable: '2', failureThreshold: 1, autoRollback: true }, 'agent:bad'));
    await engine.reconcile(rollout.id, signal); // admits both
    // The crash window: the rollout is FAILED in the store, the rollback was never created.
    await drive(rollout.id);
    await prisma.rollout.deleteMany({ where: { rollbackOfId: rollout.id } });
    await prisma.idempotencyKey.deleteMany({});
    await prisma.rollout.update({ where: { id: rollout.id }, data: { engineState: '{}' } });
    await engine.reconcile(rollout.id, signal);
    await engine.reconcile(rollout.id, signal);
    expect(await prisma.rollout.count({ where: { rollbackOfId: rollout.id } })).toBe(1);
  });

  it('pauses after the canary targets and continues only when resumed', async () => {
    const rollout = await launch(plan(5, { maxUnavailable: '5', canary: 2 }));
    let state = await drive(rollout.id);
    expect(state.rollout.state).toBe('PAUSED');
    expect(state.rollout.message).toMatch(/canary/);
    expect(driver.admissions).toHaveLength(2);
    await rollouts.resume(rollout.id);
    state = await drive(rollout.id);
    expect(state.rollout.state).toBe('SUCCEEDED');
    expect(driver.admissions).toHaveLength(5);
  });

  describe('a gate between targets (strategy.gate, ADR 0071 addendum)', () => {
    it('opens a timed wait once the step is done and admits the next target only when it passed, on the engine clock', async () => {
      const admittedAt = new Map<string, number>();
      const admit = driver.admit.bind(driver);
      driver.admit = async (target) => {
        admittedAt.set(target.name, now);
        await admit(target);
      };
      const rollout = await launch(plan(4, { maxUnavailable: '2', gate: { type: 'TIMED_WAIT', config: { seconds: 600 }, after: [2] } }));
      const { rollout: done } = await drive(rollout.id);
      expect(done.state).toBe('SUCCEEDED');
      const [gate] = await rollouts.gatesOf(done, new Date(now));
      expect(gate).toMatchObject({ row: { key: 'targets:2', type: 'TIMED_WAIT', state: 'PASSED' }, progress: { state: 'PASSED' } });
      const opened = gate!.row.openedAt.getTime();
      expect(Math.max(admittedAt.get('pool-0')!, admittedAt.get('pool-1')!)).toBeLessThan(opened);
      expect(Math.min(admittedAt.get('pool-2')!, admittedAt.get('pool-3')!)).toBeGreaterThanOrEqual(opened + 600_000);
    });

    it('waits for an approval across engines (a new leader decides the same from the store), then finishes', async () => {
      const rollout = await launch(plan(4, { maxUnavailable: '1', gate: { type: 'APPROVAL', config: {}, after: [1] } }));
      await drive(rollout.id, 20);
      expect(driver.admissions).toEqual(['pool-0->agent:v2']);
      const other = new RolloutEngine(rollouts, logger, { now: () => now });
      other.connect(() => {}, launcher);
      other.registerDriver(driver);
      engine = other;
      const waiting = await drive(rollout.id, 20);
      expect(waiting.rollout.state).toBe('PROGRESSING');
      expect(driver.admissions).toEqual(['pool-0->agent:v2']);
      const gates = await rollouts.gatesOf(waiting.rollout, new Date(now));
      expect(gates.map((g) => [g.row.key, g.progress.state])).toEqual([['targets:1', 'WAITING']]);
      await rollouts.runs.decide(
        { rolloutId: rollout.id, gateKey: 'targets:1', verdict: 'APPROVE', comment: null, deciderId: 'tok-1', role: 'deployer' },
        new Date(now),
      );
      const { rollout: done } = await drive(rollout.id);
      expect(done.state).toBe('SUCCEEDED');
      expect(driver.admissions).toHaveLength(4);
    });

    it('fails the rollout when the approval is rejected, admitting nothing more', async () => {
      const rollout = await launch(plan(3, { maxUnavailable: '1', gate: { type: 'APPROVAL', config: {}, every: 1 } }));
      await drive(rollout.id, 20);
      await rollouts.runs.decide(
        { rolloutId: rollout.id, gateKey: 'targets:1', verdict: 'REJECT', comment: 'no', deciderId: 'tok-1', role: 'deployer' },
        new Date(now),
      );
      const { rollout: done } = await drive(rollout.id);
      expect(done.state).toBe('FAILED');
      expect(done.message).toMatch(/^gate targets:1: /);
      expect(driver.admissions).toEqual(['pool-0->agent:v2']);
    });
  });

  it('fails a target that does not converge within its progress deadline', async () => {
    driver = new FakeDriver(1_000_000);
    engine.registerDriver(driver);
    const rollout = await launch(plan(1, { maxUnavailable: '1', progressDeadlineSeconds: 30 }));
    const { rollout: done, targets } = await drive(rollout.id);
    expect(done.state).toBe('FAILED');
    expect(targets[0]!.error).toMatch(/progress deadline of 30s: starting/);
  });

  it('after an abort admits nothing new but lets admitted targets finish', async () => {
    const rollout = await launch(plan(5, { maxUnavailable: '2' }));
    await engine.reconcile(rollout.id, signal);
    await rollouts.abort(rollout.id, 'stop');
    const { rollout: done, targets } = await drive(rollout.id);
    expect(done.state).toBe('ABORTED');
    expect(targets.map((t) => t.state)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'CANCELLED', 'CANCELLED', 'CANCELLED']);
    expect(driver.finished).toEqual([rollout.id]);
  });

  it('records a target whose write was made while an abort came as admitted (it finishes), not as CANCELLED', async () => {
    const rollout = await launch(plan(3, { maxUnavailable: '2' }));
    // The abort lands between pool-1's write and the pass's record of it (seen under load: the node was replaced while
    // its target said CANCELLED, and the rollback left it on the new version).
    const admit = driver.admit.bind(driver);
    driver.admit = async (target) => {
      await admit(target);
      if (target.name === 'pool-1') await rollouts.abort(rollout.id, 'stop');
    };
    await engine.reconcile(rollout.id, signal).catch(() => undefined);
    const { rollout: done, targets } = await drive(rollout.id);
    expect(done.state).toBe('ABORTED');
    expect(driver.admissions).toEqual(['pool-0->agent:v2', 'pool-1->agent:v2']);
    expect(targets.map((t) => t.state)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'CANCELLED']);
    expect(driver.finished).toEqual([rollout.id]);
  });

  it('re-admits (idempotently) a target whose admission was written but not recorded before a crash', async () => {
    const rollout = await launch(plan(1, { maxUnavailable: '1' }));
    await engine.reconcile(rollout.id, signal); // PENDING → PROGRESSING, admits pool-0
    // Simulate the crash window: the write happened, the PROGRESSING record did not.
    await prisma.rolloutTarget.updateMany({ where: { rolloutId: rollout.id }, data: { state: 'PENDING' } });
    engine.forgetViews(); // the crash took the engine's memory with it
    const { rollout: done } = await drive(rollout.id);
    expect(done.state).toBe('SUCCEEDED');
    expect(driver.admissions).toEqual(['pool-0->agent:v2', 'pool-0->agent:v2']);
  });

  it('resolves maxUnavailable counts and percentages like Kubernetes', () => {
    expect(resolveMaxUnavailable('25%', 10)).toBe(2);
    expect(resolveMaxUnavailable('1%', 10)).toBe(1);
    expect(resolveMaxUnavailable('100%', 1000)).toBe(1000);
    expect(resolveMaxUnavailable('3', 10)).toBe(3);
    expect(() => resolveMaxUnavailable('0', 10)).toThrow(/positive count/);
    expect(() => resolveMaxUnavailable('150%', 10)).toThrow(/between 1% and 100%/);
  });
});
