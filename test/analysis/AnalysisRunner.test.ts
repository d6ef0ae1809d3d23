import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnalysisRunInput, resumeAnalysis, runAnalysis } from '../../src/analysis/AnalysisRunner.js';
import { AnalysisUnavailableError } from '../../src/analysis/errors.js';
import { createAnalysisMetrics, holdSeries } from '../../src/analysis/metrics.js';
import type { AnalysisStore } from '../../src/analysis/model.js';
import { PrometheusError, type PrometheusClient, type QueryResult } from '../../src/analysis/PrometheusClient.js';
import { parseAnalysisTemplate } from '../../src/analysis/template.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { FakeClock } from '../../src/util/FakeClock.js';

/**
 * The runner's rules on a fake clock, with answers scripted per query (a Prometheus cannot be made to answer a given
 * sequence; test/analysis/prometheusAnalysis.test.ts runs it against a real one). The store is the real SQLite one.
 */

const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane analysis runner '));
let db: SqliteDatabase;
beforeAll(async () => {
  db = await openSqliteDatabase(`file:${path.join(dir, 'runner.db')}`);
});
afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

type Answer = QueryResult | PrometheusError | number | number[];

/** A client answering each query with the next scripted answer (the last one repeated); records the queries. */
function scripted(script: Record<string, Answer[]>): PrometheusClient & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    baseUrl: 'http://prometheus.test',
    async query(query: string) {
      asked.push(query);
      const key = Object.keys(script).find((k) => query.startsWith(`${k}_total`));
      const list = key ? script[key]! : [];
      const next = list.length > 1 ? list.shift()! : list[0];
      if (next === undefined) throw new Error(`no answer scripted for ${query}`);
      if (next instanceof PrometheusError) throw next;
      if (typeof next === 'number') return { type: 'vector', samples: [{ labels: {}, value: next }] };
      if (Array.isArray(next)) return { type: 'vector', samples: next.map((value) => ({ labels: {}, value })) };
      return next;
    },
  } as unknown as PrometheusClient & { asked: string[] };
}

const EMPTY: QueryResult = { type: 'vector', samples: [] };
let runs = 0;

function metric(name: string, change: Record<string, unknown> = {}) {
  return { name, successCondition: 'result[0] < 0.5', provider: { prometheus: { query: `${name}_total{version="{{args.version}}"}` } }, ...change };
}

async function analyse(
  metrics: unknown[],
  script: Record<string, Answer[]>,
  options: { registry?: Registry; signal?: AbortSignal; store?: AnalysisStore; client?: PrometheusClient | undefined; args?: Record<string, string> } = {},
) {
  const clock = new FakeClock();
  const client = 'client' in options ? options.client : scripted(script);
  const input: AnalysisRunInput = {
    template: parseAnalysisTemplate({ metrics }),
    args: { version: 'v2', cluster: 'local', namespace: 'default', name: 'net-1', ...options.args },
    rolloutId: `rollout-${++runs}`,
    cluster: 'local',
    target: 'default/net-1',
    wave: null,
  };
  const decision = runAnalysis(input, {
    store: options.store ?? db.analysis,
    clock,
    prometheus: () => client,
    ...(options.registry ? { metrics: createAnalysisMetrics(options.registry) } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  let settled = false;
  const done = decision.finally(() => {
    settled = true;
  });
  // Moves time a second at a time until the run decides (bounded: a broken runner fails here, not by hanging).
  for (let second = 0; !settled && second < 600; second++) await clock.advance(1000);
  const result = await done;
  const measurements = await db.analysis.measurementsOf(result.run.id);
  return { ...result, measurements, clock, client };
}

describe('analysis runs: Argo Rollouts limits, count, interval and initialDelay', () => {
  it('takes count measurements, the first after initialDelay and each an interval after the last, and succeeds', async () => {
    const { phase, measurements, run } = await analyse([metric('errors', { count: 3, interval: '2s', initialDelay: '5s' })], { errors: [0.1, 0.2, 0.1] });
    expect(phase).toBe('SUCCESSFUL');
    expect(measurements.map((m) => [m.verdict, m.values[0]])).toEqual([
      ['SUCCESSFUL', 0.1],
      ['SUCCESSFUL', 0.2],
      ['SUCCESSFUL', 0.1],
    ]);
    const offsets = measurements.map((m) => (m.startedAt.getTime() - run.startedAt.getTime()) / 1000);
    expect(offsets).toEqual([5, 7, 9]);
    expect(measurements[0]).toMatchObject({ query: 'errors_total{version="v2"}', condition: 'success: result[0] < 0.5', threshold: 0.5 });
    const stored = await db.analysis.findRun(run.id);
    expect(stored).toMatchObject({
      phase: 'SUCCESSFUL',
      metricPhases: { errors: 'SUCCESSFUL' },
      args: { version: 'v2', name: 'net-1' },
      target: 'default/net-1',
    });
  });

  it('fails once failed measurements exceed failureLimit (default 0), and says why', async () => {
    const once = await analyse([metric('errors', { count: 3, interval: '1s' })], { errors: [0.1, 0.9] });
    expect(once.phase).toBe('FAILED');
    expect(once.measurements.map((m) => m.verdict)).toEqual(['SUCCESSFUL', 'FAILED']);
    expect(once.message).toMatch(/metric "errors": failed \(1\) > failureLimit \(0\)/);
    const limited = await analyse([metric('errors', { count: 4, interval: '1s', failureLimit: 1 })], { errors: [0.9, 0.1, 0.9] });
    expect(limited.phase).toBe('FAILED');
    expect(limited.measurements.map((m) => m.verdict)).toEqual(['FAILED', 'SUCCESSFUL', 'FAILED']);
    const within = await analyse([metric('errors', { count: 3, interval: '1s', failureLimit: 1 })], { errors: [0.9, 0.1, 0.1] });
    expect(within.phase).toBe('SUCCESSFUL');
  });

  it('errors count toward consecutiveErrorLimit (default 4), not toward count, and a success resets them', async () => {
    const down = new PrometheusError('UNREACHABLE', 'cannot reach Prometheus at http://prometheus.test: ECONNREFUSED');
    const recovered = await analyse([metric('errors', { count: 2, interval: '1s' })], { errors: [down, down, 0.1, down, 0.1] });
    expect(recovered.phase).toBe('SUCCESSFUL');
    expect(recovered.measurements.map((m) => m.verdict)).toEqual(['ERROR', 'ERROR', 'SUCCESSFUL', 'ERROR', 'SUCCESSFUL']);
    expect(recovered.measurements[0]!.message).toBe('UNREACHABLE: cannot reach Prometheus at http://prometheus.test: ECONNREFUSED');
    const broken = await analyse([metric('errors', { count: 2, interval: '1s', consecutiveErrorLimit: 2 })], { errors: [down] });
    expect(broken.phase).toBe('ERROR');
    expect(broken.measurements.map((m) => m.verdict)).toEqual(['ERROR', 'ERROR', 'ERROR']);
    expect(broken.message).toMatch(/consecutive errors \(3\) > consecutiveErrorLimit \(2\)/);
    // Without an interval an error is measured again after 10 s, as Argo does.
    const single = await analyse([metric('errors')], { errors: [down, 0.1] });
    expect(single.phase).toBe('SUCCESSFUL');
    expect(single.measurements[1]!.startedAt.getTime() - single.measurements[0]!.finishedAt.getTime()).toBe(10_000);
  });

  it("is Inconclusive when neither condition holds, Failed when the failure one does even if success does too (Argo's rules)", async () => {
    const both = { successCondition: 'result[0] < 0.5', failureCondition: 'result[0] > 0.8' };
    expect((await analyse([metric('a', both)], { a: [0.6] })).phase).toBe('INCONCLUSIVE');
    expect((await analyse([metric('a', { ...both, failureCondition: 'result[0] < 0.3' })], { a: [0.2] })).phase).toBe('FAILED');
    expect((await analyse([metric('a', { successCondition: undefined, failureCondition: 'result[0] > 0.8' })], { a: [0.6] })).phase).toBe('SUCCESSFUL');
    expect((await analyse([metric('a', { successCondition: undefined })], { a: [0.9] })).phase).toBe('SUCCESSFUL');
    const limited = await analyse([metric('a', { ...both, count: 3, interval: '1s', inconclusiveLimit: 1 })], { a: [0.6, 0.1, 0.6] });
    expect(limited.phase).toBe('INCONCLUSIVE');
    expect(limited.message).toMatch(/inconclusive \(2\) > inconclusiveLimit \(1\)/);
  });

  it('stops measuring once a gating metric fails; the others count as Successful; a dry run never decides', async () => {
    const stopped = await analyse([metric('a'), metric('b', { count: 5, interval: '1s' })], { a: [0.9], b: [0.1] });
    expect(stopped.phase).toBe('FAILED');
    expect(stopped.metricPhases).toEqual({ a: 'FAILED', b: 'SUCCESSFUL' });
    expect(stopped.measurements.filter((m) => m.metricName === 'b').length).toBeLessThan(5);
    const dry = await analyse([metric('a', { dryRun: true, count: 2, interval: '1s' }), metric('b', { count: 2, interval: '1s' })], { a: [0.9], b: [0.1] });
    expect(dry.phase).toBe('SUCCESSFUL');
    expect(dry.metricPhases).toEqual({ a: 'FAILED', b: 'SUCCESSFUL' });
    expect(dry.measurements.filter((m) => m.metricName === 'a').every((m) => m.dryRun && m.verdict === 'FAILED')).toBe(true);
  });
});

describe('analysis runs: no data is decided by the metric, never by accident', () => {
  it('an empty result under FAIL, PASS and INCONCLUSIVE (the default)', async () => {
    for (const [noData, phase] of [
      ['FAIL', 'FAILED'],
      ['PASS', 'SUCCESSFUL'],
      ['INCONCLUSIVE', 'INCONCLUSIVE'],
      [undefined, 'INCONCLUSIVE'],
    ] as const) {
      const result = await analyse([metric('a', noData ? { noData } : {})], { a: [EMPTY] });
      expect(result.phase, String(noData)).toBe(phase);
      expect(result.measurements[0]).toMatchObject({ noData: true, values: [] });
      expect(result.measurements[0]!.message).toMatch(/^no data: the query returned no series \(noData: /);
    }
  });

  it('WAIT(max) waits without counting, measures again, and is Inconclusive once max has passed', async () => {
    const gaveUp = await analyse([metric('a', { noData: 'WAIT(3s)', count: 2, interval: '1s' })], { a: [EMPTY] });
    expect(gaveUp.phase).toBe('INCONCLUSIVE');
    // Empty at 0 s, 1 s and 2 s (waiting), and at 3 s, when WAIT(3s) has run out.
    expect(gaveUp.measurements.map((m) => m.verdict)).toEqual(['WAITING', 'WAITING', 'WAITING', 'INCONCLUSIVE']);
    expect(gaveUp.measurements.at(-1)!.message).toMatch(/WAIT\(3s\) ran out/);
    const arrived = await analyse([metric('a', { noData: 'WAIT(1m)', count: 2, interval: '1s' })], { a: [EMPTY, EMPTY, 0.1] });
    expect(arrived.phase).toBe('SUCCESSFUL');
    expect(arrived.measurements.map((m) => m.verdict)).toEqual(['WAITING', 'WAITING', 'SUCCESSFUL', 'SUCCESSFUL']);
  });

  it('fewer series than minSamples is no data', async () => {
    const result = await analyse([metric('a', { minSamples: 3, noData: 'FAIL' })], { a: [[0.1, 0.2]] });
    expect(result.phase).toBe('FAILED');
    expect(result.measurements[0]!.message).toMatch(/returned 2 series, fewer than minSamples \(3\)/);
    expect((await analyse([metric('a', { minSamples: 2, noData: 'FAIL' })], { a: [[0.1, 0.2]] })).phase).toBe('SUCCESSFUL');
  });

  it('NaN never passes a comparison: it is no data, decided by the policy; isNaN() can look at it', async () => {
    for (const [noData, phase] of [
      ['FAIL', 'FAILED'],
      ['PASS', 'SUCCESSFUL'],
      ['INCONCLUSIVE', 'INCONCLUSIVE'],
    ] as const) {
      const result = await analyse([metric('a', { noData })], { a: [Number.NaN] });
      expect(result.phase, noData).toBe(phase);
      expect(result.measurements[0]!.noData).toBe(true);
      expect(result.measurements[0]!.values[0]).toBeNaN();
    }
    const guarded = await analyse([metric('a', { successCondition: 'isNaN(result[0]) || result[0] < 0.5', noData: 'FAIL' })], { a: [Number.NaN] });
    expect(guarded.phase).toBe('SUCCESSFUL');
    expect(guarded.measurements[0]!.noData).toBe(false);
  });
});

describe('analysis runs: the targets not yet upgraded as a live baseline', () => {
  const compared = (change: Record<string, unknown> = {}, metricChange: Record<string, unknown> = {}) =>
    metric('errors', {
      successCondition: undefined,
      count: 2,
      interval: '1s',
      baseline: { query: 'baseline_total{version="{{args.baselineVersion}}"}', direction: 'increase', maxRatio: 1.2, ...change },
      ...metricChange,
    });
  const ARGS = { version: 'v2', baselineVersion: 'v1' };

  it('fails a 30 % error increase on the upgraded targets; passes the same absolute level on both groups', async () => {
    const worse = await analyse([compared()], { errors: [13], baseline: [10] }, { args: ARGS });
    expect(worse.phase).toBe('FAILED');
    expect(worse.measurements[0]).toMatchObject({ verdict: 'FAILED', values: [13], baselineValues: [10], baselineQuery: 'baseline_total{version="v1"}' });
    expect(worse.measurements[0]!.message).toBe('worse than the baseline: canary 13 vs baseline 10 (ratio 1.300, allowed increase up to 1.2×)');
    const same = await analyse([compared()], { errors: [10], baseline: [10] }, { args: ARGS });
    expect(same.phase).toBe('SUCCESSFUL');
    expect(same.measurements.map((m) => m.verdict)).toEqual(['SUCCESSFUL', 'SUCCESSFUL']);
    // Nothing on either side is the same level, not an infinite ratio.
    expect((await analyse([compared()], { errors: [0], baseline: [0] }, { args: ARGS })).phase).toBe('SUCCESSFUL');
  });

  it('minDelta keeps a baseline near zero from failing on noise; decrease watches the other way', async () => {
    expect((await analyse([compared({ minDelta: 0.01 })], { errors: [0.002], baseline: [0.001] }, { args: ARGS })).phase).toBe('SUCCESSFUL');
    expect((await analyse([compared({ minDelta: 0.01 })], { errors: [0.5], baseline: [0.001] }, { args: ARGS })).phase).toBe('FAILED');
    expect((await analyse([compared({ direction: 'decrease' })], { errors: [1.5], baseline: [2] }, { args: ARGS })).phase).toBe('FAILED');
    expect((await analyse([compared({ direction: 'decrease' })], { errors: [3], baseline: [2] }, { args: ARGS })).phase).toBe('SUCCESSFUL');
  });

  it('a critical comparison fails the metric at once, whatever its failureLimit; no baseline data is no data', async () => {
    const critical = await analyse([compared({ critical: true }, { count: 4, failureLimit: 3 })], { errors: [13], baseline: [10] }, { args: ARGS });
    expect(critical.phase).toBe('FAILED');
    expect(critical.measurements).toHaveLength(1);
    expect(critical.message).toMatch(/critical baseline comparison failed/);
    const tolerant = await analyse([compared({}, { count: 4, failureLimit: 3 })], { errors: [13], baseline: [10] }, { args: ARGS });
    expect(tolerant.measurements).toHaveLength(4);
    const missing = await analyse([compared({}, { noData: 'FAIL' })], { errors: [1], baseline: [EMPTY] }, { args: ARGS });
    expect(missing.phase).toBe('FAILED');
    expect(missing.measurements[0]).toMatchObject({ noData: true, baselineValues: [] });
    expect(missing.measurements[0]!.message).toMatch(/no data to compare: canary 1, baseline none/);
  });
});

describe('analysis runs: around the measurements', () => {
  it('exports the value and the threshold while a run measures and removes them when it ends; the decision is counted', async () => {
    const registry = new Registry();
    const seen: string[] = [];
    const client: PrometheusClient = {
      baseUrl: 'http://prometheus.test',
      query: async () => {
        seen.push(await registry.metrics());
        return { type: 'vector', samples: [{ labels: {}, value: 0.25 }] };
      },
    } as unknown as PrometheusClient;
    await analyse([metric('errors', { count: 2, interval: '1s' })], {}, { registry, client });
    // While measuring (the second query is asked after the first measurement was recorded):
    expect(seen[1]).toContain('rollplane_analysis_value{template="",metric="errors"} 0.25');
    expect(seen[1]).toContain('rollplane_analysis_threshold{template="",metric="errors"} 0.5');
    const text = await registry.metrics();
    expect(text).not.toContain('rollplane_analysis_value{');
    expect(text).not.toContain('rollplane_analysis_threshold{');
    expect(text).toContain('rollplane_analysis_decisions_total{outcome="SUCCESSFUL"} 1');
  });

  it('keeps a series while any run of its template measures here, and removes it after the last', async () => {
    const registry = new Registry();
    const metrics = createAnalysisMetrics(registry);
    const labels = { template: 't', metric: 'm' };
    const first = holdSeries(metrics, [labels]);
    const second = holdSeries(metrics, [labels]);
    metrics.threshold.set(labels, 1);
    first();
    first(); // letting go twice counts once
    expect(await registry.metrics()).toContain('rollplane_analysis_threshold{template="t",metric="m"} 1');
    second();
    expect(await registry.metrics()).not.toContain('rollplane_analysis_threshold{');
    expect(metrics.held.size).toBe(0);
  });

  it('is unavailable, clearly, when there is no Prometheus to ask; nothing is recorded', async () => {
    const before = (await db.analysis.runsOf(`rollout-${runs + 1}`)).length;
    const error = await analyse([metric('a')], {}, { client: undefined }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AnalysisUnavailableError);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', reason: 'PROMETHEUS_NOT_CONFIGURED' });
    expect((error as Error).message).toMatch(/metric "a" gives no provider.prometheus.address and rollplane has no Prometheus configured/);
    expect((await db.analysis.runsOf(`rollout-${runs}`)).length).toBe(before);
  });

  it('a stopped run is recorded as an error with the reason, and measures no more', async () => {
    const controller = new AbortController();
    controller.abort(new Error('superseded by rollout 7'));
    const result = await analyse([metric('a', { count: 3, interval: '1s' })], { a: [0.1] }, { signal: controller.signal });
    expect(result.phase).toBe('ERROR');
    expect(result.message).toBe('stopped before deciding: superseded by rollout 7');
    expect((await db.analysis.findRun(result.run.id))!.phase).toBe('ERROR');
  });

  it('a run whose process died is resumed: recorded measurements count, none is taken again, the schedule holds', async () => {
    // The first "leader" takes two measurements, then hangs in its third query and is never heard of again.
    const first = new FakeClock();
    let asked = 0;
    const hanging = {
      baseUrl: 'http://prometheus.test',
      query: async () => (++asked <= 2 ? { type: 'vector', samples: [{ labels: {}, value: 0.9 }] } : new Promise(() => {})),
    } as unknown as PrometheusClient;
    const template = parseAnalysisTemplate({ metrics: [metric('errors', { count: 4, interval: '5s', failureLimit: 2 })] });
    const input: AnalysisRunInput = { template, args: { version: 'v2' }, rolloutId: `rollout-${++runs}`, cluster: 'local', target: null, wave: null };
    void runAnalysis(input, { store: db.analysis, clock: first, prometheus: () => hanging });
    for (let i = 0; i < 20 && asked < 3; i++) await first.advance(1000);
    const [run] = await db.analysis.runsOf(input.rolloutId);
    expect(run!.phase).toBe('RUNNING');
    expect((await db.analysis.measurementsOf(run!.id)).map((m) => m.verdict)).toEqual(['FAILED', 'FAILED']);

    // Another replica takes over 3 s after the second measurement ended: the next is due 2 s later, not at once.
    const second = new FakeClock(0, run!.startedAt.getTime() + 5_000 + 3_000);
    const client = scripted({ errors: [0.1] });
    const resumed = resumeAnalysis(run!.id, { store: db.analysis, clock: second, prometheus: () => client });
    await second.advance(1_000);
    expect(client.asked).toHaveLength(0);
    let settled = false;
    void resumed.finally(() => {
      settled = true;
    });
    for (let i = 0; i < 60 && !settled; i++) await second.advance(1000);
    const decision = await resumed;
    // failureLimit 2: the two failures recorded before still count; two more successes reach count 4.
    expect(decision.phase).toBe('SUCCESSFUL');
    const measurements = await db.analysis.measurementsOf(run!.id);
    expect(measurements.map((m) => m.verdict)).toEqual(['FAILED', 'FAILED', 'SUCCESSFUL', 'SUCCESSFUL']);
    expect(measurements[2]!.startedAt.getTime() - measurements[1]!.finishedAt.getTime()).toBe(5_000);
    expect(client.asked).toHaveLength(2);
    // A decided run is returned as recorded, without measuring.
    expect((await resumeAnalysis(run!.id, { store: db.analysis, clock: second, prometheus: () => client })).phase).toBe('SUCCESSFUL');
    expect(client.asked).toHaveLength(2);
    await expect(resumeAnalysis('nope', { store: db.analysis, clock: second, prometheus: () => client })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it("an argument the template gives no value is the run's (a gate's config.args), also when another process resumes the run", async () => {
    const clock = new FakeClock();
    let asked = 0;
    const hanging = {
      baseUrl: 'http://prometheus.test',
      query: async () => (++asked <= 1 ? { type: 'vector', samples: [{ labels: {}, value: 0.1 }] } : new Promise(() => {})),
    } as unknown as PrometheusClient;
    const source = {
      metrics: [{ ...metric('errors', { count: 2, interval: '1s' }), provider: { prometheus: { query: 'errors_total{pool="{{args.pool}}"}' } } }],
      args: [{ name: 'pool' }],
    };
    const template = parseAnalysisTemplate(source, { pool: 'net-7' });
    const input: AnalysisRunInput = { template, args: { pool: 'net-7' }, rolloutId: `rollout-${++runs}`, cluster: 'local', target: null, wave: null };
    void runAnalysis(input, { store: db.analysis, clock, prometheus: () => hanging });
    for (let i = 0; i < 20 && asked < 2; i++) await clock.advance(1000);
    const [run] = await db.analysis.runsOf(input.rolloutId);
    expect(run!.args).toMatchObject({ pool: 'net-7' });
    const client = scripted({ errors: [0.1] });
    const resumed = resumeAnalysis(run!.id, { store: db.analysis, clock, prometheus: () => client });
    let settled = false;
    void resumed.finally(() => {
      settled = true;
    });
    for (let i = 0; i < 20 && !settled; i++) await clock.advance(1000);
    expect((await resumed).phase).toBe('SUCCESSFUL');
    expect(client.asked).toEqual(['errors_total{pool="net-7"}']);
    expect((await db.analysis.measurementsOf(run!.id)).map((m) => m.query)).toEqual(['errors_total{pool="net-7"}', 'errors_total{pool="net-7"}']);
  });
});
