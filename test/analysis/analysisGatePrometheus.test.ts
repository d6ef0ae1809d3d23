import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AnalysisGateRef, AnalysisGates } from '../../src/analysis/AnalysisGates.js';
import type { AnalysisStore, MeasurementRecord, NewMeasurement } from '../../src/analysis/model.js';
import { PrometheusClient } from '../../src/analysis/PrometheusClient.js';
import { parseAnalysisTemplate } from '../../src/analysis/template.js';
import { type Simulator, startSimulator } from '../../src/sim/index.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { systemClock } from '../../src/util/clock.js';
import { describeWithPrometheus, setDhcpAgentImage, startTestPrometheus, type TestPrometheus } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';

/**
 * Analysis gates against a real Prometheus scraping the simulator (issue 33).
 *
 * A leader killed mid-analysis: its successor, on its own connection to the same SQLite file, continues the
 * gate's run from the recorded measurements against a real Prometheus scraping the simulator — no measurement lost,
 * none repeated, the schedule kept. "Killed" is a store that stops answering at a chosen write: from the database's
 * side that is a SIGKILL (nothing more is written, the write in flight never lands). Then the dead leader wakes up
 * (SIGSTOP/SIGCONT) and its held write is refused: the store keeps one measurement per number, none after the end.
 */

const TEMPLATE = parseAnalysisTemplate({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'AnalysisTemplate',
  metadata: { name: 'dhcp-health' },
  spec: {
    args: [{ name: 'name' }],
    metrics: [
      {
        name: 'lease-rate',
        interval: '1s',
        count: 4,
        successCondition: 'result[0] > 0',
        provider: { prometheus: { query: 'sum(rate(sim_dhcp_leases_total{pool="{{args.name}}"}[5s]))' } },
      },
      {
        name: 'errors',
        interval: '1s',
        count: 4,
        failureCondition: 'result[0] > 0',
        noData: 'FAIL',
        provider: { prometheus: { query: 'sum(rate(sim_dhcp_errors_total{pool="{{args.name}}"}[5s]))' } },
      },
    ],
  },
});

/** The store of a process that can be stopped at a write: once `killAfter` measurements were written, every call hangs until `wake`. */
function stoppable(store: AnalysisStore, killAfter: number) {
  let written = 0;
  let stopped = false;
  let held: (() => void)[] = [];
  const inFlight: NewMeasurement[] = [];
  const gate = async () => {
    if (stopped) await new Promise<void>((resolve) => held.push(resolve));
  };
  /** `call` once the process runs (at once, or when woken). */
  const whenRunning = async <T>(call: () => Promise<T>): Promise<T> => {
    await gate();
    return call();
  };
  const wrapped: AnalysisStore = {
    createRun: (run) => whenRunning(() => store.createRun(run)),
    addMeasurement: async (m) => {
      if (stopped) inFlight.push(m);
      await gate();
      const kept = await store.addMeasurement(m);
      if (kept && ++written >= killAfter) stopped = true;
      return kept;
    },
    finishRun: (id, end) => whenRunning(() => store.finishRun(id, end)),
    runsOf: (id) => whenRunning(() => store.runsOf(id)),
    gateRuns: (id, key) => whenRunning(() => store.gateRuns(id, key)),
    runningGateRuns: () => whenRunning(() => store.runningGateRuns()),
    findRun: (id) => whenRunning(() => store.findRun(id)),
    measurementsOf: (id) => whenRunning(() => store.measurementsOf(id)),
    measurementTally: (id) => whenRunning(() => store.measurementTally(id)),
  };
  return {
    store: wrapped,
    isStopped: () => stopped,
    heldCalls: () => held.length,
    /** The measurements whose writes were in flight when the process was stopped. */
    inFlight: () => inFlight,
    wake() {
      stopped = false;
      for (const resolve of held) resolve();
      held = [];
    },
  };
}

describeWithPrometheus('analysis gates against a real Prometheus', () => {
  let sim: Simulator;
  let prometheus: TestPrometheus;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane analysis gate resume '));
  const file = `file:${path.join(dir, 'gates.db')}`;
  const connections: SqliteDatabase[] = [];
  const open = async () => {
    const db = await openSqliteDatabase(file);
    connections.push(db);
    return db;
  };

  beforeAll(async () => {
    sim = await startSimulator({ fleet: 'demo,upstream=none' });
    prometheus = await startTestPrometheus([{ url: sim.url }]);
  });
  afterAll(async () => {
    await prometheus?.stop();
    await sim?.stop();
    for (const db of connections) await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a leader killed mid-analysis is continued by its successor on the same database: no measurement lost or repeated, and the woken one writes nothing', async () => {
    await prometheus.waitForSeries('rate(sim_dhcp_leases_total{pool="net-2"}[5s]) > 0');
    const prometheusFor = () => new PrometheusClient(prometheus.url, { timeoutMs: 10_000 });
    const ref: AnalysisGateRef = { rolloutId: 'rollout-1', gateKey: 'after:canary', cluster: 'local', target: 'default/net-2', wave: 0 };

    // The first leader: killed once three measurements are written; its next write is in flight when it dies.
    const first = stoppable((await open()).analysis, 3);
    const notes: string[] = [];
    const logger = { info: (_: unknown, message: string) => notes.push(message), warn: (_: unknown, message: string) => notes.push(message) };
    const leader = new AnalysisGates({ store: first.store, clock: systemClock, prometheus: prometheusFor, logger });
    const run = await leader.open(ref, TEMPLATE, { name: 'net-2' });
    await until('the first leader killed, a write in flight', () => first.isStopped() && first.heldCalls() > 0);

    // Its successor, nothing in memory, its own connection: continues the RUNNING run from its rows.
    const successorDb = await open();
    const ended: string[] = [];
    const successor = new AnalysisGates({ store: successorDb.analysis, clock: systemClock, prometheus: prometheusFor, onEnded: (r) => ended.push(r.phase) });
    expect((await successor.resume()).map((r) => r.id)).toEqual([run.id]);

    // The old leader wakes (SIGCONT) once its successor took those same measurements anew, while the run still
    // runs: its writes are refused (one row per number), it stops measuring and records nothing.
    const held = first.inFlight().map((m) => `${m.metricName}#${m.seq}`);
    expect(held.length).toBeGreaterThan(0);
    await until(`the successor's ${held.join(', ')}`, async () => {
      const taken = new Set((await successorDb.analysis.measurementsOf(run.id)).map((m) => `${m.metricName}#${m.seq}`));
      return held.every((key) => taken.has(key));
    });
    first.wake();
    await leader.settled(run.id);
    expect(leader.measuring()).toEqual([]);
    expect(notes).toEqual([`analysis run ${run.id} is driven or ended elsewhere: this process stopped measuring it`]);
    // Two more intervals to go for the successor: the refused write met a RUNNING run, so the number decided it.
    expect((await successorDb.analysis.findRun(run.id))!.phase).toBe('RUNNING');

    await until('the successor decided', () => ended.length > 0, { timeoutMs: 60_000 });
    expect(ended).toEqual(['SUCCESSFUL']);
    expect(await successor.progress(ref)).toEqual({ state: 'PASSED', reason: `analysis ${run.id} successful` });

    const measurements = await successorDb.analysis.measurementsOf(run.id);
    const byMetric = (name: string) => measurements.filter((m) => m.metricName === name);
    for (const name of ['lease-rate', 'errors']) {
      const taken = byMetric(name);
      // Nothing lost (every number from 0, no gap), nothing repeated (each number once), count reached exactly.
      expect(taken.map((m) => m.seq)).toEqual([0, 1, 2, 3]);
      expect(taken.map((m) => m.verdict)).toEqual(['SUCCESSFUL', 'SUCCESSFUL', 'SUCCESSFUL', 'SUCCESSFUL']);
      // The schedule held across the change of leader: never a measurement before the interval since the last.
      for (let i = 1; i < taken.length; i++) expect(gap(taken[i - 1]!, taken[i]!)).toBeGreaterThanOrEqual(990);
    }
    expect(await successorDb.analysis.gateRuns(ref.rolloutId, ref.gateKey)).toHaveLength(1);
  });

  it('a Ready-but-degraded agent fails the gate; retried after the fix, the gate measures again and passes; a superseding rollout cancels', async () => {
    const db = await open();
    const gates = new AnalysisGates({ store: db.analysis, clock: systemClock, prometheus: () => new PrometheusClient(prometheus.url, { timeoutMs: 10_000 }) });
    const ref: AnalysisGateRef = { rolloutId: 'rollout-2', gateKey: 'after:canary', cluster: 'local', target: 'default/net-1', wave: 0 };
    const healthy = setDhcpAgentImage(sim, 'net-1', 'rancher/harvester-vm-dhcp-agent:degraded-v0.3.1');
    await prometheus.waitForSeries('rate(sim_dhcp_errors_total{pool="net-1",version="degraded-v0.3.1"}[5s]) > 0');

    const failed = await gates.open(ref, TEMPLATE, { name: 'net-1' });
    await gates.settled(failed.id);
    const verdict = await gates.progress(ref);
    expect(verdict.state).toBe('FAILED');
    expect(verdict.reason).toMatch(/failed \(1\) > failureLimit \(0\)/);

    // The agent fixed: once Prometheus sees it serve again without errors, the retry measures anew and passes.
    setDhcpAgentImage(sim, 'net-1', healthy);
    await prometheus.waitForSeries(`rate(sim_dhcp_leases_total{pool="net-1",version="${healthy.split(':')[1]}"}[5s]) > 0`);
    await until(
      'no DHCP errors on net-1 in Prometheus',
      async () => (await prometheus.vector('sum(rate(sim_dhcp_errors_total{pool="net-1"}[5s])) > 0')).length === 0,
      {
        intervalMs: prometheus.scrapeIntervalMs,
        timeoutMs: 60_000,
      },
    );
    const retried = await gates.retry(ref);
    expect(retried).toMatchObject({ attempt: 2, previousRunId: failed.id });
    await gates.settled(retried.id);
    expect(await gates.progress(ref)).toEqual({ state: 'PASSED', reason: `attempt 2: analysis ${retried.id} successful` });
    const measured = await db.analysis.measurementsOf(retried.id);
    expect(measured.filter((m) => m.metricName === 'lease-rate').map((m) => m.verdict)).toEqual(['SUCCESSFUL', 'SUCCESSFUL', 'SUCCESSFUL', 'SUCCESSFUL']);
    expect((await db.analysis.measurementsOf(failed.id)).some((m) => m.verdict === 'FAILED')).toBe(true);

    // A rollout superseded while its gate measures: cancelled with the reason, nothing measured after.
    const next: AnalysisGateRef = { ...ref, gateKey: 'after:wave-2' };
    const running = await gates.open(next, TEMPLATE, { name: 'net-1' });
    await until('a first measurement', async () => (await db.analysis.measurementsOf(running.id)).length > 0);
    const cancelled = await gates.cancel(next, 'superseded by rollout rollout-3');
    expect(cancelled).toMatchObject({ phase: 'CANCELLED', message: 'superseded by rollout rollout-3' });
    // Its driver ended with the cancellation (the store refuses any later write: SqliteAnalysisStore's contract).
    expect(gates.measuring()).toEqual([]);
    expect(await gates.progress(next)).toMatchObject({ state: 'WAITING', reason: expect.stringMatching(/cancelled: superseded by rollout rollout-3/) });
  });
});

/** Milliseconds from one measurement's end to the next one's start. */
function gap(before: MeasurementRecord, after: MeasurementRecord): number {
  return after.startedAt.getTime() - before.finishedAt.getTime();
}
