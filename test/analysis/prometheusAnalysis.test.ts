import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAnalysis } from '../../src/analysis/AnalysisRunner.js';
import { AnalysisUnavailableError } from '../../src/analysis/errors.js';
import { startLocalPrometheus } from '../../src/analysis/localPrometheus.js';
import { PrometheusClient, type PrometheusError } from '../../src/analysis/PrometheusClient.js';
import { parseAnalysisTemplate } from '../../src/analysis/template.js';
import { agentPodName, AGENT_NAMESPACE } from '../../src/sim/fleet.js';
import { type Simulator, startSimulator } from '../../src/sim/index.js';
import { Resources } from '../../src/sim/store/resources.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { systemClock } from '../../src/util/clock.js';
import { describeWithPrometheus, setDhcpAgentImage, startTestPrometheus, type TestPrometheus } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';

/**
 * Analysis end to end below the engine: Debian's Prometheus scrapes the simulator's agents every second, and analysis
 * runs measure them through it (real queries, real answers, real time), recording into a real SQLite store.
 */

const HEALTH = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: dhcp-health
spec:
  args:
  - name: namespace
  - name: name
  - name: version
  metrics:
  - name: lease-rate
    interval: 1s
    count: 3
    successCondition: result[0] > 0
    provider:
      prometheus:
        query: sum(rate(sim_dhcp_leases_total{pool_namespace="{{args.namespace}}",pool="{{args.name}}",version="{{args.version}}"}[5s]))
  - name: errors
    interval: 1s
    count: 3
    failureCondition: result[0] > 0
    noData: FAIL
    provider:
      prometheus:
        query: sum(rate(sim_dhcp_errors_total{pool_namespace="{{args.namespace}}",pool="{{args.name}}",version="{{args.version}}"}[5s]))
`;

describe('without a Prometheus binary', () => {
  it('analysis says it is unavailable, with a code and what to install', async () => {
    const error = await startLocalPrometheus({ binary: '/nonexistent/prometheus', targets: [] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AnalysisUnavailableError);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', reason: 'PROMETHEUS_NOT_INSTALLED', details: { reason: 'PROMETHEUS_NOT_INSTALLED' } });
    expect((error as Error).message).toMatch(/analysis unavailable: no Prometheus binary .*apt-get install prometheus/);
  });
});

describeWithPrometheus('analysis against a real Prometheus scraping the simulator', () => {
  let sim: Simulator;
  let prometheus: TestPrometheus;
  let db: SqliteDatabase;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane analysis e2e '));
  let rollouts = 0;

  beforeAll(async () => {
    // No upstream controllers: nothing puts the agents' images back while the test changes them.
    sim = await startSimulator({ fleet: 'demo,upstream=none' });
    prometheus = await startTestPrometheus([{ url: sim.url }]);
    db = await openSqliteDatabase(`file:${path.join(dir, 'analysis.db')}`);
  });
  afterAll(async () => {
    await prometheus?.stop();
    await sim?.stop();
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const analyse = (template: string | object, args: Record<string, string>) =>
    runAnalysis(
      {
        template: parseAnalysisTemplate(template),
        args,
        rolloutId: `rollout-${++rollouts}`,
        cluster: 'local',
        target: args.name ? `${args.namespace}/${args.name}` : null,
        wave: null,
      },
      { store: db.analysis, clock: systemClock, prometheus: (address) => new PrometheusClient(address ?? prometheus.url, { timeoutMs: 10_000 }) },
    );

  /** Waits until Prometheus has two scrapes of a pool's agent at `version` (rate() needs two). */
  const scraped = (pool: string, version: string) =>
    prometheus.waitForSeries(
      `rate(sim_dhcp_leases_total{pool="${pool}",version="${version}"}[5s]) or rate(sim_dhcp_errors_total{pool="${pool}",version="${version}"}[5s]) > 0`,
    );

  it('measures a healthy agent Successful', async () => {
    await scraped('net-2', 'v0.3.0');
    const decision = await analyse(HEALTH, { namespace: 'default', name: 'net-2', version: 'v0.3.0' });
    expect(decision.phase).toBe('SUCCESSFUL');
    expect(decision.metricPhases).toEqual({ 'lease-rate': 'SUCCESSFUL', errors: 'SUCCESSFUL' });
    const measurements = await db.analysis.measurementsOf(decision.run.id);
    expect(measurements).toHaveLength(6);
    const leases = measurements.filter((m) => m.metricName === 'lease-rate');
    expect(leases.every((m) => m.verdict === 'SUCCESSFUL' && m.values[0]! > 0)).toBe(true);
    expect(leases[0]!.query).toBe('sum(rate(sim_dhcp_leases_total{pool_namespace="default",pool="net-2",version="v0.3.0"}[5s]))');
  });

  it('measures a degraded-but-Ready agent Failed, and keeps the measurements and the decision', async () => {
    setDhcpAgentImage(sim, 'net-1', 'rancher/harvester-vm-dhcp-agent:degraded-v0.3.1');
    const series = await prometheus.waitForSeries('rate(sim_dhcp_errors_total{pool="net-1",version="degraded-v0.3.1"}[5s]) > 0');
    expect(series).toHaveLength(1);
    // Ready all along, as far as Kubernetes can tell.
    const now = sim.store.get(Resources.pods, AGENT_NAMESPACE, agentPodName('default', 'net-1'))!;
    expect(now.status.conditions.find((c: { type: string }) => c.type === 'Ready').status).toBe('True');

    const decision = await analyse(HEALTH, { namespace: 'default', name: 'net-1', version: 'degraded-v0.3.1' });
    expect(decision.phase).toBe('FAILED');
    expect(decision.message).toMatch(/failed \(1\) > failureLimit \(0\)/);
    const stored = await db.analysis.findRun(decision.run.id);
    expect(stored).toMatchObject({ phase: 'FAILED', rolloutId: `rollout-${rollouts}`, target: 'default/net-1', templateName: 'dhcp-health' });
    expect(stored!.args).toEqual({ namespace: 'default', name: 'net-1', version: 'degraded-v0.3.1' });
    const measurements = await db.analysis.measurementsOf(decision.run.id);
    const failed = measurements.filter((m) => m.verdict === 'FAILED');
    expect(failed.length).toBeGreaterThan(0);
    for (const m of failed) {
      expect(m.query).toContain('version="degraded-v0.3.1"');
      expect(m.condition).toMatch(/^(success: result\[0\] > 0|failure: result\[0\] > 0)$/);
      expect(m.finishedAt.getTime()).toBeGreaterThanOrEqual(m.startedAt.getTime());
    }
    expect(measurements.find((m) => m.metricName === 'errors' && m.verdict === 'FAILED')?.values[0]).toBeGreaterThan(0);
  });

  it('compares the upgraded pool with the pools not yet upgraded: more errors fail, the same lease rate passes', async () => {
    // Runs after the degraded test: net-1 is degraded-v0.3.1, net-2 and net-3 still v0.3.0.
    await scraped('net-3', 'v0.3.0');
    const template = {
      metrics: [
        {
          name: 'errors-vs-baseline',
          interval: '1s',
          count: 2,
          provider: { prometheus: { query: 'avg(rate(sim_dhcp_errors_total{version="{{args.version}}"}[5s]))' } },
          baseline: { query: 'avg(rate(sim_dhcp_errors_total{version="{{args.baselineVersion}}"}[5s]))', direction: 'increase', maxRatio: 1.3, minDelta: 0.1 },
        },
      ],
    };
    const degraded = await analyse(template, { version: 'degraded-v0.3.1', baselineVersion: 'v0.3.0' });
    expect(degraded.phase).toBe('FAILED');
    const [m] = await db.analysis.measurementsOf(degraded.run.id);
    expect(m).toMatchObject({ verdict: 'FAILED', baselineQuery: 'avg(rate(sim_dhcp_errors_total{version="v0.3.0"}[5s]))', baselineValues: [0] });
    expect(m!.values[0]).toBeGreaterThan(0.1);
    // Two pools of the same version against each other: the same level, whatever its exact value.
    const leases = {
      metrics: [
        {
          name: 'leases-vs-baseline',
          interval: '1s',
          count: 2,
          provider: { prometheus: { query: 'avg(rate(sim_dhcp_leases_total{pool="net-2"}[5s]))' } },
          baseline: { query: 'avg(rate(sim_dhcp_leases_total{pool="net-3",version="{{args.baselineVersion}}"}[5s]))', direction: 'decrease', maxRatio: 1.3 },
        },
      ],
    };
    const same = await analyse(leases, { baselineVersion: 'v0.3.0' });
    expect(same.phase).toBe('SUCCESSFUL');
    expect((await db.analysis.measurementsOf(same.run.id)).every((x) => x.baselineValues![0]! > 0 && x.message!.startsWith('within the baseline'))).toBe(true);
  });

  it('decides a query with no data by each noData policy', async () => {
    const template = (noData: string) => ({
      metrics: [
        {
          name: 'missing',
          interval: '1s',
          count: 2,
          noData,
          successCondition: 'result[0] >= 0',
          provider: { prometheus: { query: 'sum(sim_dhcp_leases_total{pool="net-404"})' } },
        },
      ],
    });
    const phases: Record<string, string> = {};
    for (const noData of ['FAIL', 'PASS', 'INCONCLUSIVE', 'WAIT(2s)']) {
      const decision = await analyse(template(noData), {});
      phases[noData] = decision.phase;
      const measurements = await db.analysis.measurementsOf(decision.run.id);
      expect(measurements.every((m) => m.noData && m.values.length === 0)).toBe(true);
      if (noData === 'WAIT(2s)') expect(measurements.map((m) => m.verdict).at(-1)).toBe('INCONCLUSIVE');
    }
    expect(phases).toEqual({ FAIL: 'FAILED', PASS: 'SUCCESSFUL', INCONCLUSIVE: 'INCONCLUSIVE', 'WAIT(2s)': 'INCONCLUSIVE' });
  });

  it('never compares NaN (0/0 from Prometheus) as a number', async () => {
    await scraped('net-3', 'v0.3.0');
    const ratio = 'sum(rate(sim_dhcp_errors_total{pool="net-3"}[5s])) / sum(rate(sim_dhcp_errors_total{pool="net-3"}[5s]))';
    const failing = await analyse(
      { metrics: [{ name: 'ratio', noData: 'FAIL', successCondition: 'result[0] < 0.1', provider: { prometheus: { query: ratio } } }] },
      {},
    );
    expect(failing.phase).toBe('FAILED');
    const [m] = await db.analysis.measurementsOf(failing.run.id);
    expect(m!.values[0]).toBeNaN();
    expect(m).toMatchObject({ noData: true, verdict: 'FAILED' });
    expect(m!.message).toMatch(/compared NaN/);
    const guarded = await analyse(
      { metrics: [{ name: 'ratio', noData: 'FAIL', successCondition: 'isNaN(result[0]) || result[0] < 0.1', provider: { prometheus: { query: ratio } } }] },
      {},
    );
    expect(guarded.phase).toBe('SUCCESSFUL');
  });

  it("reads Prometheus's scalars and vectors, and refuses matrices, strings and refused queries with a reason", async () => {
    const client = new PrometheusClient(prometheus.url, { timeoutMs: 10_000 });
    expect(await client.query('scalar(vector(0.5))')).toEqual({ type: 'scalar', value: 0.5 });
    const vector = await client.query('sim_dhcp_leases_total');
    expect(vector.type === 'vector' && vector.samples.length).toBe(3);
    const reason = (query: string, c = client) =>
      c.query(query).then(
        () => 'answered',
        (e: PrometheusError) => `${e.reason}: ${e.message}`,
      );
    expect(await reason('sim_dhcp_leases_total[5s]')).toMatch(/^UNSUPPORTED_RESULT: the query returned a matrix/);
    expect(await reason('"text"')).toMatch(/^UNSUPPORTED_RESULT: the query returned a string/);
    expect(await reason('sum(')).toMatch(/^QUERY_REFUSED: Prometheus refused the query \(bad_data\)/);
    expect(await reason('sim_dhcp_leases_total', new PrometheusClient(prometheus.url, { maxSeries: 2 }))).toMatch(
      /^TOO_LARGE: the query returned 3 series, more than 2/,
    );
    // A measurement taken while Prometheus refuses is an Error with that reason, recorded.
    const decision = await analyse(
      { metrics: [{ name: 'matrix', consecutiveErrorLimit: 0, provider: { prometheus: { query: 'sim_dhcp_leases_total[5s]' } } }] },
      {},
    );
    expect(decision.phase).toBe('ERROR');
    expect((await db.analysis.measurementsOf(decision.run.id))[0]).toMatchObject({ verdict: 'ERROR', message: expect.stringMatching(/^UNSUPPORTED_RESULT/) });
  });
  it('rides out Prometheus going down mid-analysis: errors recorded with their reason, then recovery within consecutiveErrorLimit', async () => {
    const template = {
      metrics: [
        {
          name: 'leases',
          interval: '1s',
          count: 3,
          successCondition: 'result[0] > 0',
          noData: 'WAIT(30s)',
          provider: { prometheus: { query: 'sum(rate(sim_dhcp_leases_total{pool="net-2"}[30s]))' } },
        },
      ],
    };
    const running = analyse(template, {});
    const rolloutId = `rollout-${rollouts}`;
    const measurements = async () => {
      const [run] = await db.analysis.runsOf(rolloutId);
      return run ? db.analysis.measurementsOf(run.id) : [];
    };
    await until('a first measurement', async () => (await measurements()).length >= 1);
    await prometheus.shutDown();
    await until('two measurements failing while Prometheus is down', async () => (await measurements()).filter((m) => m.verdict === 'ERROR').length >= 2);
    await prometheus.restart();
    const decision = await running;
    expect(decision.phase).toBe('SUCCESSFUL');
    const taken = await measurements();
    const errors = taken.filter((m) => m.verdict === 'ERROR');
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(errors.length).toBeLessThanOrEqual(4);
    expect(errors.every((m) => /^UNREACHABLE: cannot reach Prometheus at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED$/.test(m.message ?? ''))).toBe(true);
    expect(taken.filter((m) => m.verdict === 'SUCCESSFUL')).toHaveLength(3);
  });
  it('decides Error once Prometheus stays down past consecutiveErrorLimit, with the reason', async () => {
    await prometheus.shutDown();
    try {
      const template = {
        metrics: [{ name: 'leases', interval: '1s', count: 2, consecutiveErrorLimit: 1, provider: { prometheus: { query: 'sum(sim_dhcp_leases_total)' } } }],
      };
      const decision = await analyse(template, {});
      expect(decision.phase).toBe('ERROR');
      expect(decision.message).toMatch(/^metric "leases": consecutive errors \(2\) > consecutiveErrorLimit \(1\); last: UNREACHABLE: cannot reach Prometheus/);
      expect((await db.analysis.measurementsOf(decision.run.id)).map((m) => m.verdict)).toEqual(['ERROR', 'ERROR']);
    } finally {
      await prometheus.restart();
    }
  });
});
