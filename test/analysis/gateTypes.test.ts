import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnalysisGates } from '../../src/analysis/AnalysisGates.js';
import { pino } from 'pino';
import { alertGateType, analysisGateType, createGateTypes, gateArgs, prometheusClients, versionArg } from '../../src/analysis/gateTypes.js';
import { GateLooks } from '../../src/domain/gates/looks.js';
import type { GateAttempt, GateFacts, GateType } from '../../src/domain/gates/registry.js';
import type { GateAttemptRow } from '../../src/domain/historyPort.js';
import type { PrometheusClient, QueryResult } from '../../src/analysis/PrometheusClient.js';
import { openSqliteDatabase, type SqliteDatabase } from '../../src/store/db.js';
import { FakeClock } from '../../src/util/FakeClock.js';

/**
 * The ANALYSIS and ALERT gate types as a staged run's registry holds them (src/domain/gates/registry.ts): the "engine"
 * below knows only the GateType interface and a gate's `type` and JSON `config`. Prometheus's answers are scripted by
 * query (the real one: analysisGatePrometheus.test.ts, alertGatePrometheus.test.ts, test/e2e/clusters/gatesPrometheus).
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

/** Looks kept in memory, as the store would keep them (GateAttempt rows), with the rollouts they woke. */
function keptLooks(clock: FakeClock) {
  const kept: GateAttemptRow[] = [];
  const woken: string[] = [];
  const looks = new GateLooks({
    record: async (row) => {
      if (kept.some((k) => k.gateId === row.gateId && k.seq === row.seq)) return false;
      kept.push(row);
      return true;
    },
    wake: (id) => woken.push(id),
    now: () => clock.wallNow(),
  });
  const attempts = (gateId: string): GateAttempt[] => kept.filter((k) => k.gateId === gateId).map((k) => ({ ...k, answer: k.answer as GateAttempt['answer'] }));
  return { looks, kept, woken, attempts };
}

describe('analysis and alert gates as registry entries', () => {
  it('refuse a bad config at submit time with the field path inside the gate, and UNAVAILABLE without a Prometheus', () => {
    const gates = new AnalysisGates({ store: db.analysis, clock: new FakeClock(), prometheus: () => undefined });
    const looks = keptLooks(new FakeClock()).looks;
    const configured = () => prometheus({ errorRate: 0, firing: [] });
    const registry: Record<string, GateType> = { ANALYSIS: analysisGateType(gates, configured), ALERT: alertGateType(configured, looks) };
    const refusal = (type: string, config: unknown, types = registry) => {
      try {
        types[type]!.check(config, 'waves[1].after.config');
        return 'accepted';
      } catch (error) {
        return `${(error as { code: string }).code} ${(error as Error).message}`;
      }
    };
    expect(refusal('ANALYSIS', { template: TEMPLATE_YAML })).toBe('accepted');
    expect(refusal('ANALYSIS', { template: TEMPLATE_YAML, args: { name: 'net-1' } })).toBe('accepted');
    expect(refusal('ANALYSIS', {})).toMatch(/^BAD_USER_INPUT waves\[1\]\.after\.config\.template: is required/);
    // An argument without a value of its own is given by config.args (attack 19, F3), and refused when nothing gives it.
    const unvalued = {
      metrics: [{ name: 'm', provider: { prometheus: { query: 'up{a="{{args.big}}"}' } } }],
      args: [{ name: 'big' }],
    };
    expect(refusal('ANALYSIS', { template: unvalued, args: { big: 'x' } })).toBe('accepted');
    expect(refusal('ANALYSIS', { template: unvalued })).toMatch(
      /^BAD_USER_INPUT waves\[1\]\.after\.config\.template\.args\[0\]\.value: argument "big" has no value/,
    );
    expect(refusal('ANALYSIS', { template: unvalued, args: JSON.parse('{"__proto__": "x"}') })).toMatch(/has no value/);
    // A value that could never be measured is refused when given, not after the first step moved (attack 23, G4) …
    expect(refusal('ANALYSIS', { template: unvalued, args: { big: 'x"} or vector(1) #' } })).toBe(
      'BAD_USER_INPUT waves[1].after.config.args.big: contains a quote, backslash, brace or control character (argument values name things; they are not PromQL)',
    );
    // … and so is one that makes a query longer than any run may send (attack 23, G1).
    const repeated = { ...unvalued, metrics: [{ name: 'm', provider: { prometheus: { query: `up{a="${'{{args.big}}'.repeat(40)}"}` } } }] };
    expect(refusal('ANALYSIS', { template: repeated, args: { big: 'x'.repeat(1_000) } })).toMatch(
      /^BAD_USER_INPUT waves\[1\]\.after\.config\.template\.metrics\[0\]\.provider\.prometheus\.query: resolves to 40\d{3} characters/,
    );
    expect(refusal('ANALYSIS', { template: TEMPLATE_YAML, errorFails: 'yes' })).toBe('BAD_USER_INPUT waves[1].after.config.errorFails: must be true or false');
    expect(refusal('ANALYSIS', { template: TEMPLATE_YAML, args: { other: 'x' } })).toBe(
      'BAD_USER_INPUT waves[1].after.config.args.other: is not an argument the template declares',
    );
    expect(refusal('ANALYSIS', { template: { metrics: [{ name: 'm', provider: { datadog: {} } }] } })).toMatch(
      /^BAD_USER_INPUT waves\[1\]\.after\.config\.template\.metrics\[0\]\.provider\.datadog: /,
    );
    expect(refusal('ALERT', { alerts: ['DhcpErrors'] })).toBe('accepted');
    expect(refusal('ALERT', { alerts: 'DhcpErrors' })).toBe('BAD_USER_INPUT waves[1].after.config.alerts: must list 1 to 50 alert names');
    // No Prometheus configured and none named: refused at submit, not a gate that waits forever.
    const none = { ANALYSIS: analysisGateType(gates, () => undefined), ALERT: alertGateType(() => undefined, looks) };
    expect(refusal('ANALYSIS', { template: TEMPLATE_YAML }, none)).toMatch(
      /^UNAVAILABLE analysis unavailable: waves\[1\]\.after\.config\.template\.metrics\[0\]: .*ROLLPLANE_PROMETHEUS_URL/,
    );
    expect(refusal('ALERT', { alerts: ['DhcpErrors'] }, none)).toMatch(/^UNAVAILABLE analysis unavailable: .*ROLLPLANE_PROMETHEUS_URL/);
  });

  it('open and progress through the registry interface alone, answered from what was kept', async () => {
    const state = { errorRate: 0.5, firing: ['DhcpErrors'] };
    const client = prometheus(state);
    const clock = new FakeClock(0, Date.UTC(2026, 11, 10, 12));
    const gates = new AnalysisGates({ store: db.analysis, clock, prometheus: () => client });
    const kept = keptLooks(clock);
    const registry: Record<string, GateType> = { ANALYSIS: analysisGateType(gates, () => client), ALERT: alertGateType(() => client, kept.looks) };
    const facts = (key: string): GateFacts => ({
      openedAt: new Date(Date.UTC(2026, 11, 10, 12)),
      now: new Date(clock.wallNow()),
      decisions: [],
      attempts: kept.attempts(`rollout-1:${key}`),
      gate: {
        id: `rollout-1:${key}`,
        rolloutId: 'rollout-1',
        key,
        wave: { name: 'canary', ordinal: 0, clusters: ['edge-1', 'edge-2'] },
        version: 'rancher/agent:v2',
        baselineVersion: 'rancher/agent:v1',
      },
    });
    const analysis = { type: 'ANALYSIS', config: registry.ANALYSIS!.check({ template: TEMPLATE_YAML, args: { name: 'net-1' } }, 'config') };
    const alert = { type: 'ALERT', config: registry.ALERT!.check({ alerts: ['DhcpErrors'] }, 'config') };
    const progress = (gate: { type: string; config: Record<string, unknown> }, key: string) => registry[gate.type]!.progress(gate.config, facts(key));
    const open = (gate: { type: string; config: Record<string, unknown> }, key: string) => registry[gate.type]!.open!(gate.config, facts(key));
    const settle = async () => {
      for (let i = 0; i < 60 && gates.measuring().length > 0; i++) await clock.advance(1000);
    };
    const looked = async (n: number) => {
      for (let i = 0; i < 100 && kept.kept.length < n; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(kept.kept).toHaveLength(n);
    };

    // The alert gate: nothing asked by progress; open asks in the background, keeps the answer and wakes the rollout.
    expect(await progress(alert, 'before:canary')).toMatchObject({ state: 'WAITING', reason: 'asking Prometheus whether DhcpErrors fire' });
    expect(client.asked).toEqual([]);
    await open(alert, 'before:canary');
    await open(alert, 'before:canary'); // under way: not asked twice
    await looked(1);
    expect(client.asked).toHaveLength(1);
    expect(kept.woken).toEqual(['rollout-1']);
    expect(await progress(alert, 'before:canary')).toMatchObject({
      state: 'WAITING',
      reason: 'alerts firing: DhcpErrors',
      until: new Date(clock.wallNow() + 30_000),
    });
    state.firing = [];
    await open(alert, 'before:canary'); // not due before the recheck
    expect(client.asked).toHaveLength(1);
    await clock.advance(30_000);
    await open(alert, 'before:canary');
    await looked(2);
    expect(await progress(alert, 'before:canary')).toEqual({ state: 'PASSED', reason: 'no alert firing among DhcpErrors' });

    // The analysis gate: opened (twice: one run), measured to Failed with the built-in and configured arguments.
    expect(await progress(analysis, 'after:canary')).toEqual({ state: 'WAITING', reason: 'analysis not started', until: new Date(clock.wallNow() + 30_000) });
    await open(analysis, 'after:canary');
    await open(analysis, 'after:canary');
    await settle();
    expect(await progress(analysis, 'after:canary')).toMatchObject({ state: 'FAILED' });
    expect(client.asked).toContain('sum(rate(sim_dhcp_errors_total{pool="net-1",version="v2"}[1m]))');
    const [run] = await db.analysis.gateRuns('rollout-1', 'after:canary');
    expect(run!.args).toMatchObject({ version: 'v2', baselineVersion: 'v1', cluster: 'edge-1|edge-2', wave: 'canary', name: 'net-1' });
    await gates.close();
    kept.looks.stop();
  });

  it('resolve the built-in arguments of a wave gate', () => {
    expect(versionArg('rancher/harvester-vm-dhcp-agent:v0.3.1')).toBe('v0.3.1');
    expect(versionArg('registry:5000/agent')).toBe('registry:5000/agent');
    expect(versionArg('1.31.2')).toBe('1.31.2');
    expect(
      gateArgs({ id: 'g', rolloutId: 'r', key: 'after:w', wave: { name: 'w', ordinal: 1, clusters: ['a', 'b'] }, version: 'x/y:v2', baselineVersion: null }),
    ).toEqual({ version: 'v2', cluster: 'a|b', wave: 'w' });
  });

  it('are built for wiring from a Prometheus URL: one client per address', async () => {
    const clients = prometheusClients('http://prometheus.default:9090');
    expect(clients(undefined)?.baseUrl).toBe('http://prometheus.default:9090');
    expect(clients(undefined)).toBe(clients(undefined));
    expect(clients('http://other:9090')?.baseUrl).toBe('http://other:9090');
    expect(prometheusClients(undefined)(undefined)).toBeUndefined();
    const clock = new FakeClock();
    const { gates, types } = createGateTypes({
      store: db.analysis,
      clock,
      prometheusUrl: 'http://prometheus.default:9090',
      logger: pino({ level: 'silent' }),
      looks: keptLooks(clock).looks,
    });
    expect(Object.keys(types)).toEqual(['ANALYSIS', 'ALERT']);
    expect(types.ANALYSIS.check({ template: TEMPLATE_YAML }, 'config')).toEqual({ template: TEMPLATE_YAML });
    await gates.close();
  });
});
