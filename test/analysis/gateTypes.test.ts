import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnalysisGates } from '../../src/analysis/AnalysisGates.js';
import { pino } from 'pino';
import { alertGateType, analysisGateType, createGateTypes, type GateContext, type GateTypeEntry, prometheusClients } from '../../src/analysis/gateTypes.js';
import type { PrometheusClient, QueryResult } from '../../src/analysis/PrometheusClient.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { FakeClock } from '../../src/util/FakeClock.js';

/**
 * The ANALYSIS and ALERT gate types as a staged run's registry would hold them: the "engine" below knows only the
 * entry's interface and a gate's `type` and JSON `config`, as issue 30's gate model gives them. Prometheus's answers
 * are scripted by query (the real one: analysisGatePrometheus.test.ts, alertGatePrometheus.test.ts).
 */

const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane gate types '));
let db: SqliteDatabase;
beforeAll(async () => {
  db = await openSqliteDatabase(`file:${path.join(dir, 'gates.db')}`);
});
afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Answers ALERTS queries with `alerts()` and any other query with `errorRate()`. */
function prometheus(state: { errorRate: number; firing: string[] }): PrometheusClient & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    baseUrl: 'http://prometheus.test',
    async query(query: string): Promise<QueryResult> {
      asked.push(query);
      if (query.startsWith('ALERTS{')) return { type: 'vector', samples: state.firing.map((alertname) => ({ labels: { alertname }, value: 1 })) };
      return { type: 'vector', samples: [{ labels: {}, value: state.errorRate }] };
    },
  } as unknown as PrometheusClient & { asked: string[] };
}

const TEMPLATE_YAML = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: { name: dhcp-errors }
spec:
  args: [{ name: name }, { name: version }]
  metrics:
  - name: errors
    interval: 10s
    count: 2
    successCondition: result[0] < 0.1
    provider:
      prometheus:
        query: sum(rate(sim_dhcp_errors_total{pool="{{args.name}}",version="{{args.version}}"}[1m]))
`;

describe('analysis and alert gates as registry entries', () => {
  it('refuse a bad config at submit time with the field path inside the gate', () => {
    const gates = new AnalysisGates({ store: db.analysis, clock: new FakeClock(), prometheus: () => undefined });
    const registry: Record<string, GateTypeEntry<unknown>> = { ANALYSIS: analysisGateType(gates), ALERT: alertGateType(() => undefined) };
    const refusal = (type: string, config: unknown) => {
      try {
        registry[type]!.parseConfig(config, 'waves[1].after.config');
        return 'accepted';
      } catch (error) {
        expect(error).toMatchObject({ code: 'BAD_USER_INPUT' });
        return (error as Error).message;
      }
    };
    expect(refusal('ANALYSIS', { template: TEMPLATE_YAML })).toBe('accepted');
    expect(refusal('ANALYSIS', {})).toMatch(/^waves\[1\]\.after\.config\.template: is required/);
    expect(refusal('ANALYSIS', { template: TEMPLATE_YAML, errorFails: 'yes' })).toBe('waves[1].after.config.errorFails: must be true or false');
    expect(refusal('ANALYSIS', { template: { metrics: [{ name: 'm', provider: { datadog: {} } }] } })).toMatch(
      /^waves\[1\]\.after\.config\.template\.metrics\[0\]\.provider\.datadog: /,
    );
    expect(refusal('ALERT', { alerts: ['DhcpErrors'] })).toBe('accepted');
    expect(refusal('ALERT', { alerts: 'DhcpErrors' })).toBe('waves[1].after.config.alerts: must list 1 to 50 alert names');
  });

  it('open, progress, retry and cancel through the entry interface alone', async () => {
    const state = { errorRate: 0.5, firing: ['DhcpErrors'] };
    const client = prometheus(state);
    const clock = new FakeClock(0, Date.UTC(2026, 11, 10, 12));
    const gates = new AnalysisGates({ store: db.analysis, clock, prometheus: () => client });
    const registry: Record<string, GateTypeEntry<unknown>> = { ANALYSIS: analysisGateType(gates), ALERT: alertGateType(() => client) };
    const context = (gateKey: string): GateContext => ({
      rolloutId: 'rollout-1',
      gateKey,
      cluster: 'local',
      target: null,
      wave: 0,
      args: { name: 'net-1', version: 'v2' },
      now: new Date(clock.wallNow()),
    });
    const analysis = { type: 'ANALYSIS', config: registry.ANALYSIS!.parseConfig({ template: TEMPLATE_YAML }, 'config') };
    const alert = { type: 'ALERT', config: registry.ALERT!.parseConfig({ alerts: ['DhcpErrors'] }, 'config') };
    const progress = (gate: { type: string; config: unknown }, key: string) => registry[gate.type]!.progress(context(key), gate.config);
    const settle = async () => {
      for (let i = 0; i < 60 && gates.measuring().length > 0; i++) await clock.advance(1000);
    };

    // The alert gate holds while the alert fires, and passes once it stops.
    expect(await progress(alert, 'before:canary')).toMatchObject({ state: 'WAITING', reason: 'alerts firing: DhcpErrors' });
    state.firing = [];
    expect(await progress(alert, 'before:canary')).toEqual({ state: 'PASSED', reason: 'no alert firing among DhcpErrors' });

    // The analysis gate: opened, measured to Failed; retried (after the fix), measured again to Successful.
    expect(await progress(analysis, 'after:canary')).toEqual({ state: 'WAITING', reason: 'analysis not started' });
    await registry.ANALYSIS!.open(context('after:canary'), analysis.config);
    await registry.ANALYSIS!.open(context('after:canary'), analysis.config);
    await settle();
    expect(await progress(analysis, 'after:canary')).toMatchObject({ state: 'FAILED' });
    expect(client.asked).toContain('sum(rate(sim_dhcp_errors_total{pool="net-1",version="v2"}[1m]))');
    state.errorRate = 0.01;
    await registry.ANALYSIS!.retry(context('after:canary'), analysis.config);
    await settle();
    expect(await progress(analysis, 'after:canary')).toMatchObject({ state: 'PASSED', reason: expect.stringMatching(/^attempt 2: analysis .* successful$/) });
    expect(await db.analysis.gateRuns('rollout-1', 'after:canary')).toHaveLength(2);

    // A superseding rollout cancels a gate still measuring, with its reason.
    await registry.ANALYSIS!.open(context('after:wave-2'), analysis.config);
    await registry.ANALYSIS!.cancel(context('after:wave-2'), 'superseded by rollout rollout-2');
    expect(await progress(analysis, 'after:wave-2')).toMatchObject({
      state: 'WAITING',
      reason: expect.stringMatching(/cancelled: superseded by rollout rollout-2/),
    });
    await registry.ALERT!.cancel(context('before:canary'), 'superseded');
  });

  it('are built for wiring from a Prometheus URL: one client per address; without any, analysis is UNAVAILABLE and alerts wait', async () => {
    const clients = prometheusClients('http://prometheus.default:9090');
    expect(clients(undefined)?.baseUrl).toBe('http://prometheus.default:9090');
    expect(clients(undefined)).toBe(clients(undefined));
    expect(clients('http://other:9090')?.baseUrl).toBe('http://other:9090');
    expect(prometheusClients(undefined)(undefined)).toBeUndefined();

    const { gates, entries } = createGateTypes({ store: db.analysis, clock: new FakeClock(), prometheusUrl: undefined, logger: pino({ level: 'silent' }) });
    const [analysis, alert] = entries;
    expect([analysis.type, alert.type]).toEqual(['ANALYSIS', 'ALERT']);
    const context: GateContext = { rolloutId: 'rollout-9', gateKey: 'before:canary', cluster: 'local', target: null, wave: 0, args: {}, now: new Date(0) };
    await expect(analysis.open(context, analysis.parseConfig({ template: TEMPLATE_YAML }, 'config'))).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      reason: 'PROMETHEUS_NOT_CONFIGURED',
    });
    expect(await alert.progress(context, alert.parseConfig({ alerts: ['DhcpErrors'] }, 'config'))).toMatchObject({
      state: 'WAITING',
      reason: expect.stringMatching(/no Prometheus configured/),
    });
    await gates.close();
  });
});
