import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnalysisGateRef, AnalysisGates, MAX_GATE_ATTEMPTS } from '../../src/analysis/AnalysisGates.js';
import { type PrometheusClient, PrometheusError } from '../../src/analysis/PrometheusClient.js';
import { parseAnalysisTemplate } from '../../src/analysis/template.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { FakeClock } from '../../src/util/FakeClock.js';

/**
 * The analysis gate service on a fake clock with answers scripted per call, on a real SQLite file. Two services on
 * two connections to the same file stand for two leaders: whatever one recorded, the other reads and continues.
 * test/analysis/analysisGatePrometheus.test.ts kills one mid-run against a real Prometheus.
 */

const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane analysis gates '));
const file = `file:${path.join(dir, 'gates.db')}`;
let db: SqliteDatabase;
beforeAll(async () => {
  db = await openSqliteDatabase(file);
});
afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A client answering each query with the next value of `values` (the last repeated); a PrometheusError is thrown. */
function answering(values: (number | PrometheusError)[]): PrometheusClient & { asked: number } {
  const client = {
    asked: 0,
    baseUrl: 'http://prometheus.test',
    async query() {
      const next = values[Math.min(client.asked++, values.length - 1)]!;
      if (next instanceof PrometheusError) throw next;
      return { type: 'vector' as const, samples: [{ labels: {}, value: next }] };
    },
  };
  return client as unknown as PrometheusClient & { asked: number };
}

const TEMPLATE = parseAnalysisTemplate({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'AnalysisTemplate',
  metadata: { name: 'errors' },
  spec: {
    args: [{ name: 'version' }],
    metrics: [
      {
        name: 'error-rate',
        interval: '5s',
        count: 3,
        successCondition: 'result[0] < 0.5',
        provider: { prometheus: { query: 'sum(rate(errors_total{version="{{args.version}}"}[1m]))' } },
      },
    ],
  },
});

let rollouts = 0;
const gate = (): AnalysisGateRef => ({ rolloutId: `rollout-${++rollouts}`, gateKey: 'after:canary', cluster: 'local', target: null, wave: 0 });

function service(client: PrometheusClient | undefined, clock = new FakeClock(), store = db.analysis) {
  const ended: string[] = [];
  const gates = new AnalysisGates({ store, clock, prometheus: () => client, onEnded: (run) => ended.push(`${run.id}:${run.phase}`) });
  return { gates, clock, ended };
}

/** Moves the fake clock a second at a time until the run is no longer measured here (bounded). */
async function untilSettled(gates: AnalysisGates, clock: FakeClock, runId: string): Promise<void> {
  for (let i = 0; i < 120 && gates.measuring().includes(runId); i++) await clock.advance(1000);
  expect(gates.measuring()).not.toContain(runId);
}

describe('the analysis gate service', () => {
  it('opens a gate once, measures it to a decision, and another leader reads the same progress from SQL', async () => {
    const { gates, clock, ended } = service(answering([0.1]));
    const ref = gate();
    expect(await gates.progress(ref)).toEqual({ state: 'WAITING', reason: 'analysis not started' });
    const run = await gates.open(ref, TEMPLATE, { version: 'v2' });
    expect(run).toMatchObject({ gateKey: 'after:canary', attempt: 1, phase: 'RUNNING', rolloutId: ref.rolloutId, args: { version: 'v2' } });
    // Opening again (a second call, a second leader) is the same run.
    expect((await gates.open(ref, TEMPLATE, { version: 'v2' })).id).toBe(run.id);
    expect(await gates.progress(ref)).toMatchObject({ state: 'WAITING', reason: `analysis ${run.id} measuring` });
    await untilSettled(gates, clock, run.id);
    expect(ended).toEqual([`${run.id}:SUCCESSFUL`]);
    const measurements = await db.analysis.measurementsOf(run.id);
    expect(measurements.map((m) => [m.seq, m.verdict])).toEqual([
      [0, 'SUCCESSFUL'],
      [1, 'SUCCESSFUL'],
      [2, 'SUCCESSFUL'],
    ]);
    // A new leader on its own connection, with nothing in memory, gives the same answer.
    const other = await openSqliteDatabase(file);
    try {
      const { gates: successor } = service(answering([0.9]), new FakeClock(), other.analysis);
      expect(await successor.progress(ref)).toEqual({ state: 'PASSED', reason: `analysis ${run.id} successful` });
      expect(await successor.resume()).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('retries a failed gate as a new attempt linked to the old one, which measures again (argo-rollouts#2897)', async () => {
    const client = answering([0.9, 0.1]);
    const { gates, clock } = service(client);
    const ref = gate();
    await expect(gates.retry(ref)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const first = await gates.open(ref, TEMPLATE, { version: 'v2' });
    await expect(gates.retry(ref)).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/is still measuring/) });
    await untilSettled(gates, clock, first.id);
    expect(await gates.progress(ref)).toMatchObject({ state: 'FAILED', reason: expect.stringMatching(/failed \(1\) > failureLimit \(0\)/) });
    const asked = client.asked;

    const second = await gates.retry(ref);
    expect(second).toMatchObject({ attempt: 2, previousRunId: first.id, phase: 'RUNNING', args: { version: 'v2' }, gateKey: 'after:canary' });
    await untilSettled(gates, clock, second.id);
    // Measured again, from its first measurement: nothing carried over from the failed attempt.
    expect(client.asked - asked).toBe(3);
    expect((await db.analysis.measurementsOf(second.id)).map((m) => m.verdict)).toEqual(['SUCCESSFUL', 'SUCCESSFUL', 'SUCCESSFUL']);
    expect(await gates.progress(ref)).toEqual({ state: 'PASSED', reason: `attempt 2: analysis ${second.id} successful` });
    expect((await db.analysis.gateRuns(ref.rolloutId, ref.gateKey)).map((r) => [r.attempt, r.phase])).toEqual([
      [1, 'FAILED'],
      [2, 'SUCCESSFUL'],
    ]);
  });

  it('bounds the attempts of one gate: each keeps its resolved queries (attack 24, H2)', async () => {
    // Every measurement fails: each attempt fails at its first.
    const { gates, clock } = service(answering([0.9]));
    const ref = gate();
    let run = await gates.open(ref, TEMPLATE, { version: 'v2' });
    for (let attempt = 1; ; attempt++) {
      await untilSettled(gates, clock, run.id);
      if (attempt === MAX_GATE_ATTEMPTS) break;
      run = await gates.retry(ref);
    }
    await expect(gates.retry(ref)).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringMatching(new RegExp(`was measured ${MAX_GATE_ATTEMPTS} times, the most one gate is`)),
    });
    expect((await db.analysis.gateRuns(ref.rolloutId, ref.gateKey)).length).toBe(MAX_GATE_ATTEMPTS);
  });

  it('cancels a running analysis with the reason: nothing is measured after it, and the gate holds (never passes)', async () => {
    const { gates, clock, ended } = service(answering([0.1]));
    const ref = gate();
    const run = await gates.open(ref, TEMPLATE, { version: 'v2' });
    for (let i = 0; i < 20 && (await db.analysis.measurementsOf(run.id)).length < 1; i++) await clock.advance(1000);
    const cancelled = await gates.cancel(ref, 'superseded by rollout rollout-99');
    expect(cancelled).toMatchObject({ id: run.id, phase: 'CANCELLED', message: 'superseded by rollout rollout-99' });
    expect(gates.measuring()).toEqual([]);
    const taken = (await db.analysis.measurementsOf(run.id)).length;
    await clock.advance(60_000);
    expect(await db.analysis.measurementsOf(run.id)).toHaveLength(taken);
    expect(await gates.progress(ref)).toEqual({
      state: 'WAITING',
      reason: `analysis ${run.id} cancelled: superseded by rollout rollout-99`,
      until: null,
    });
    expect(ended).toEqual([`${run.id}:CANCELLED`]);
    // Cancelling an ended gate changes nothing; a gate never opened has nothing to cancel.
    expect((await gates.cancel(ref, 'again'))!.message).toBe('superseded by rollout rollout-99');
    expect(await gates.cancel(gate(), 'nothing')).toBeUndefined();
  });

  it('lets go of its runs on close, recording nothing; the next leader resumes them from their measurements', async () => {
    const first = service(answering([0.1]));
    const ref = gate();
    const run = await first.gates.open(ref, TEMPLATE, { version: 'v2' });
    for (let i = 0; i < 20 && (await db.analysis.measurementsOf(run.id)).length < 2; i++) await first.clock.advance(1000);
    await first.gates.close();
    await expect(first.gates.open(gate(), TEMPLATE, { version: 'v2' })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(first.gates.resume()).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await db.analysis.findRun(run.id))!.phase).toBe('RUNNING');

    const next = service(answering([0.2]), new FakeClock(0, Date.now()));
    const picked = await next.gates.resume();
    expect(picked.map((r) => r.id)).toContain(run.id);
    await untilSettled(next.gates, next.clock, run.id);
    const measurements = await db.analysis.measurementsOf(run.id);
    expect(measurements.map((m) => [m.seq, m.values[0]])).toEqual([
      [0, 0.1],
      [1, 0.1],
      [2, 0.2],
    ]);
    expect((await db.analysis.findRun(run.id))!.phase).toBe('SUCCESSFUL');
  });

  it('stands down when the replica stops leading (measures nothing, records nothing) and resumes when it leads again', async () => {
    const { gates, clock } = service(answering([0.1]));
    const run = await gates.open(gate(), TEMPLATE, { version: 'v2' });
    for (let i = 0; i < 20 && (await db.analysis.measurementsOf(run.id)).length < 1; i++) await clock.advance(1000);
    await gates.standDown();
    expect(gates.measuring()).toEqual([]);
    const taken = (await db.analysis.measurementsOf(run.id)).length;
    await clock.advance(30_000);
    expect(await db.analysis.measurementsOf(run.id)).toHaveLength(taken);
    // Opening the gate again while stood down drives nothing (the engine runs only on the leader anyway).
    await gates.open({ ...gate(), rolloutId: run.rolloutId }, TEMPLATE, { version: 'v2' });
    expect(gates.measuring()).toEqual([]);
    expect((await gates.resume()).map((r) => r.id)).toContain(run.id);
    await untilSettled(gates, clock, run.id);
    expect((await db.analysis.findRun(run.id))!.phase).toBe('SUCCESSFUL');
    expect((await db.analysis.measurementsOf(run.id)).map((m) => m.seq)).toEqual([0, 1, 2]);
  });

  it('refuses to open without a Prometheus to ask (UNAVAILABLE), recording nothing', async () => {
    const { gates } = service(undefined);
    const ref = gate();
    await expect(gates.open(ref, TEMPLATE, { version: 'v2' })).rejects.toMatchObject({ code: 'UNAVAILABLE', reason: 'PROMETHEUS_NOT_CONFIGURED' });
    expect(await db.analysis.gateRuns(ref.rolloutId, ref.gateKey)).toEqual([]);
  });

  it('records an unreachable Prometheus as Error measurements and holds the gate with the reason', async () => {
    const down = new PrometheusError('UNREACHABLE', 'cannot reach Prometheus at http://prometheus.test: ECONNREFUSED');
    const { gates, clock } = service(answering([down]));
    const ref = gate();
    const run = await gates.open(ref, TEMPLATE, { version: 'v2' });
    await untilSettled(gates, clock, run.id);
    expect((await db.analysis.measurementsOf(run.id)).map((m) => m.verdict)).toEqual(['ERROR', 'ERROR', 'ERROR', 'ERROR', 'ERROR']);
    expect(await gates.progress(ref)).toMatchObject({ state: 'WAITING', reason: expect.stringMatching(/errored: .*UNREACHABLE/) });
  });
});
