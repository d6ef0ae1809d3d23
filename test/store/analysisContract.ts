import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AnalysisStore, AnalysisTemplateStore, NewMeasurement } from '../../src/analysis/model.js';

/** The analysis store's contract (analysis/model.ts), run against every store on a fresh, migrated database. */
/** A measurement's query columns as stored, in the order taken (to see what the store keeps, not only what it answers). */
export type StoredQueries = (runId: string) => Promise<{ query: string; baselineQuery: string | null }[]>;

export interface AnalysisStoreFactory {
  open(): Promise<{ store: AnalysisStore & AnalysisTemplateStore; storedQueries: StoredQueries; close(): Promise<void> }>;
}

const T0 = new Date('2026-12-09T12:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

export function analysisStoreContract(factory: () => AnalysisStoreFactory): void {
  let store: AnalysisStore & AnalysisTemplateStore;
  let close: () => Promise<void> = async () => {};
  let storedQueries: StoredQueries;
  beforeAll(async () => {
    const opened = await factory().open();
    store = opened.store;
    storedQueries = opened.storedQueries;
    close = opened.close;
  });
  afterAll(() => close());

  const measurement = (runId: string, n: number, change: Partial<NewMeasurement> = {}): NewMeasurement => ({
    runId,
    metricName: 'errors',
    seq: n,
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
    // The tally Rollout.waitingFor reads, counted by the database (attack 24, H1): the decided ones, and the latest.
    const decidedHere = measurements.filter((m) => m.verdict !== 'ERROR' && m.verdict !== 'WAITING').length;
    expect(await store.measurementTally('run-1')).toEqual({ decided: new Map([['errors', decidedHere]]), latest: { verdict: 'WAITING', message: 'no data' } });
    expect(await store.measurementTally('no-such-run')).toEqual({ decided: new Map(), latest: undefined });
    const found = await store.findRun('run-1');
    expect(found).toMatchObject({ phase: 'FAILED', metricPhases: { errors: 'FAILED' }, message: 'metric "errors": failed (1) > failureLimit (0)' });
    expect(found!.finishedAt!.toISOString()).toBe(at(300).toISOString());
  });

  it("keeps a run's resolved queries once, not in every measurement, and answers each measurement with them", async () => {
    const query = `sum(rate(x{v="${'a'.repeat(20_000)}"}[1m]))`;
    const baselineQuery = `sum(rate(x{v="${'b'.repeat(20_000)}"}[1m]))`;
    const base = { rolloutId: 'rollout-q', cluster: 'local', target: null, wave: null, templateName: 't', template: '{}', args: {}, previousRunId: null };
    await store.createRun({ ...base, id: 'run-q', startedAt: at(0), queries: [{ metricName: 'errors', query, baselineQuery }] });
    await store.addMeasurement(measurement('run-q', 0, { query, baselineQuery, baselineValues: [0] }));
    // An error before the baseline was asked: no baseline query, as sent.
    await store.addMeasurement(measurement('run-q', 1, { query, verdict: 'ERROR' }));
    // A query the run does not know (another metric's, or a text that differs) keeps its own text.
    await store.addMeasurement(measurement('run-q', 2, { query: 'up', baselineQuery: 'down', baselineValues: [1] }));
    await store.addMeasurement(measurement('run-q', 0, { metricName: 'leases', query, baselineQuery, baselineValues: [2] }));
    expect((await store.measurementsOf('run-q')).map((m) => [m.metricName, m.seq, m.query, m.baselineQuery])).toEqual([
      ['errors', 0, query, baselineQuery],
      ['errors', 1, query, null],
      ['errors', 2, 'up', 'down'],
      ['leases', 0, query, baselineQuery],
    ]);
    expect(await storedQueries('run-q')).toEqual([
      { query: '', baselineQuery: '' },
      { query: '', baselineQuery: null },
      { query: 'up', baselineQuery: 'down' },
      { query, baselineQuery },
    ]);
    // A run recorded without its queries (as every run before they were kept): each measurement keeps its text.
    await store.createRun({ ...base, id: 'run-old', startedAt: at(1) });
    await store.addMeasurement(measurement('run-old', 0, { query, baselineQuery, baselineValues: [0] }));
    expect(await storedQueries('run-old')).toEqual([{ query, baselineQuery }]);
    expect(await store.measurementsOf('run-old')).toMatchObject([{ query, baselineQuery }]);
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

  it('keeps one measurement per (run, metric, seq), and none once the run ended: a second writer writes nothing', async () => {
    const base = { rolloutId: 'rollout-3', cluster: 'local', target: null, wave: null, templateName: 't', template: '{}', args: {}, previousRunId: null };
    await store.createRun({ ...base, id: 'run-c', startedAt: at(0) });
    expect(await store.addMeasurement(measurement('run-c', 0))).toMatchObject({ seq: 0, values: [0] });
    // The same measurement number again (a leader not quite dead, and its successor): kept once, the first.
    expect(await store.addMeasurement(measurement('run-c', 0, { values: [9] }))).toBeUndefined();
    // The same number for another metric is another measurement.
    expect(await store.addMeasurement(measurement('run-c', 0, { metricName: 'leases' }))).toBeDefined();
    expect((await store.measurementsOf('run-c')).map((m) => [m.metricName, m.seq, m.values[0]])).toEqual([
      ['errors', 0, 0],
      ['leases', 0, 0],
    ]);
    const end = { phase: 'CANCELLED' as const, message: 'cancelled: superseded by rollout-4', metricPhases: {}, finishedAt: at(5) };
    expect(await store.finishRun('run-c', end)).toBe(true);
    // Ended: no decision overwrites the cancellation, and no measurement lands after it.
    expect(await store.finishRun('run-c', { ...end, phase: 'SUCCESSFUL', message: null })).toBe(false);
    expect(await store.addMeasurement(measurement('run-c', 1))).toBeUndefined();
    expect(await store.findRun('run-c')).toMatchObject({ phase: 'CANCELLED', message: 'cancelled: superseded by rollout-4' });
    expect(await store.measurementsOf('run-c')).toHaveLength(2);
  });

  it("records a gate's attempt once, lists its attempts in order and the gates' runs still RUNNING", async () => {
    const base = { rolloutId: 'rollout-5', cluster: 'local', target: null, wave: 1, templateName: 't', template: '{}', args: {} };
    const first = await store.createRun({ ...base, id: 'gate-1', gateKey: 'after:canary', attempt: 1, previousRunId: null, startedAt: at(0) });
    expect(first).toMatchObject({ id: 'gate-1', gateKey: 'after:canary', attempt: 1, phase: 'RUNNING' });
    // A second leader opening the same attempt writes nothing and is told whose run holds it.
    const again = await store.createRun({ ...base, id: 'gate-1-other', gateKey: 'after:canary', attempt: 1, previousRunId: null, startedAt: at(1) });
    expect(again.id).toBe('gate-1');
    expect(await store.findRun('gate-1-other')).toBeUndefined();
    await store.createRun({ ...base, id: 'other-gate', gateKey: 'before:canary', attempt: 1, previousRunId: null, startedAt: at(2) });
    await store.finishRun('gate-1', { phase: 'FAILED', message: 'failed', metricPhases: {}, finishedAt: at(3) });
    await store.createRun({ ...base, id: 'gate-2', gateKey: 'after:canary', attempt: 2, previousRunId: 'gate-1', startedAt: at(4) });
    expect((await store.gateRuns('rollout-5', 'after:canary')).map((r) => [r.id, r.attempt, r.previousRunId, r.phase])).toEqual([
      ['gate-1', 1, null, 'FAILED'],
      ['gate-2', 2, 'gate-1', 'RUNNING'],
    ]);
    expect(await store.gateRuns('rollout-5', 'after:none')).toEqual([]);
    const running = (await store.runningGateRuns()).map((r) => r.id);
    expect(running).toEqual(expect.arrayContaining(['other-gate', 'gate-2']));
    expect(running).not.toContain('gate-1');
    // Runs no gate opened (gateKey null) are not a gate's to continue.
    expect(running).not.toContain('run-a');
  });

  it('keeps named templates: one per name, replaced and deleted by name, listed by name', async () => {
    const t = (name: string, text: string, seconds: number) => ({ name, template: text, createdAt: at(seconds), updatedAt: at(seconds) });
    expect(await store.insertTemplate(t('b-errors', '{"b":1}', 0))).toBe(true);
    expect(await store.insertTemplate(t('a-leases', '{"a":1}', 1))).toBe(true);
    expect(await store.insertTemplate(t('b-errors', '{"other":1}', 2))).toBe(false);
    expect((await store.templates()).map((x) => x.name)).toEqual(['a-leases', 'b-errors']);
    expect(await store.templateNamed('b-errors')).toEqual(t('b-errors', '{"b":1}', 0));
    expect(await store.updateTemplate('b-errors', '{"b":2}', at(3))).toBe(true);
    expect(await store.templateNamed('b-errors')).toEqual({ ...t('b-errors', '{"b":2}', 0), updatedAt: at(3) });
    expect(await store.updateTemplate('nope', '{}', at(3))).toBe(false);
    expect(await store.deleteTemplate('b-errors')).toBe(true);
    expect(await store.deleteTemplate('b-errors')).toBe(false);
    expect(await store.templateNamed('b-errors')).toBeUndefined();
  });
}
