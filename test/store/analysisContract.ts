import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AnalysisStore, NewMeasurement } from '../../src/analysis/model.js';

/** The analysis store's contract (analysis/model.ts), run against every store on a fresh, migrated database. */
export interface AnalysisStoreFactory {
  open(): Promise<{ store: AnalysisStore; close(): Promise<void> }>;
}

const T0 = new Date('2026-12-09T12:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

export function analysisStoreContract(factory: () => AnalysisStoreFactory): void {
  let store: AnalysisStore;
  let close: () => Promise<void> = async () => {};
  beforeAll(async () => {
    const opened = await factory().open();
    store = opened.store;
    close = opened.close;
  });
  afterAll(() => close());

  const measurement = (runId: string, n: number, change: Partial<NewMeasurement> = {}): NewMeasurement => ({
    runId,
    metricName: 'errors',
    query: 'sum(rate(sim_dhcp_errors_total{pool="net-1"}[30s]))',
    values: [n / 10],
    condition: 'success: result[0] < 0.5',
    threshold: 0.5,
    verdict: 'SUCCESSFUL',
    noData: false,
    dryRun: false,
    message: null,
    baselineQuery: null,
    baselineValues: null,
    startedAt: at(n),
    finishedAt: at(n + 0.25),
    ...change,
  });

  it('records a run, every measurement in order (no cap), and its decision', async () => {
    const run = await store.createRun({
      id: 'run-1',
      rolloutId: 'rollout-1',
      cluster: 'local',
      target: 'default/net-1',
      wave: 2,
      templateName: 'dhcp-health',
      template: '{"metrics":[]}',
      args: { version: 'v0.3.1', namespace: 'default', name: 'net-1' },
      previousRunId: null,
      startedAt: at(0),
    });
    expect(run).toMatchObject({ id: 'run-1', phase: 'RUNNING', message: null, finishedAt: null, wave: 2, target: 'default/net-1', metricPhases: {} });
    expect(run.startedAt.toISOString()).toBe(at(0).toISOString());
    const taken = 250; // Argo keeps 10 per metric; rollplane keeps them all
    for (let n = 0; n < taken; n++) await store.addMeasurement(measurement('run-1', n));
    await store.addMeasurement(
      measurement('run-1', taken, {
        values: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY],
        verdict: 'WAITING',
        noData: true,
        message: 'no data',
        dryRun: true,
        baselineQuery: 'sum(rate(sim_dhcp_errors_total{version="v1"}[30s]))',
        baselineValues: [0.5, Number.NaN],
      }),
    );
    await store.finishRun('run-1', {
      phase: 'FAILED',
      message: 'metric "errors": failed (1) > failureLimit (0)',
      metricPhases: { errors: 'FAILED' },
      finishedAt: at(300),
    });
    const measurements = await store.measurementsOf('run-1');
    expect(measurements).toHaveLength(taken + 1);
    expect(measurements[0]).toMatchObject({ metricName: 'errors', values: [0], threshold: 0.5, verdict: 'SUCCESSFUL', noData: false, dryRun: false });
    expect(measurements.map((m) => m.values[0]).slice(0, 3)).toEqual([0, 0.1, 0.2]);
    expect(measurements[1]!.finishedAt.toISOString()).toBe(at(1.25).toISOString());
    const last = measurements.at(-1)!;
    expect(last.values[0]).toBeNaN();
    expect(last.values.slice(1)).toEqual([Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]);
    expect(last).toMatchObject({
      verdict: 'WAITING',
      noData: true,
      dryRun: true,
      message: 'no data',
      baselineQuery: 'sum(rate(sim_dhcp_errors_total{version="v1"}[30s]))',
    });
    expect(last.baselineValues![0]).toBe(0.5);
    expect(last.baselineValues![1]).toBeNaN();
    expect(measurements[0]).toMatchObject({ baselineQuery: null, baselineValues: null });
    expect(measurements.every((m, i) => i === 0 || m.id > measurements[i - 1]!.id)).toBe(true);
    const found = await store.findRun('run-1');
    expect(found).toMatchObject({ phase: 'FAILED', metricPhases: { errors: 'FAILED' }, message: 'metric "errors": failed (1) > failureLimit (0)' });
    expect(found!.finishedAt!.toISOString()).toBe(at(300).toISOString());
  });

  it("lists a rollout's runs oldest first, a retry linked to the run it retries", async () => {
    const base = { rolloutId: 'rollout-2', cluster: 'east', target: null, wave: null, templateName: 't', template: '{}', args: {} };
    await store.createRun({ ...base, id: 'run-b', previousRunId: 'run-a', startedAt: at(20) });
    await store.createRun({ ...base, id: 'run-a', previousRunId: null, startedAt: at(10) });
    const runs = await store.runsOf('rollout-2');
    expect(runs.map((r) => [r.id, r.previousRunId, r.cluster, r.target])).toEqual([
      ['run-a', null, 'east', null],
      ['run-b', 'run-a', 'east', null],
    ]);
    expect(await store.runsOf('rollout-none')).toEqual([]);
    expect(await store.findRun('nope')).toBeUndefined();
    expect(await store.measurementsOf('run-a')).toEqual([]);
  });
}
