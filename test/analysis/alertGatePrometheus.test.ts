import { afterAll, beforeAll, expect, it } from 'vitest';
import { alertGateProgress, parseAlertGateConfig } from '../../src/analysis/alertGate.js';
import { PrometheusClient } from '../../src/analysis/PrometheusClient.js';
import { type Simulator, startSimulator } from '../../src/sim/index.js';
import { describeWithPrometheus, setDhcpAgentImage, startTestPrometheus, type TestPrometheus } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';

/**
 * The alert gate against a real Prometheus evaluating a rule file over the simulator's agents (issue 33, Kured's
 * idea): a Ready-but-degraded DHCP agent makes `DhcpErrors` fire and the gate waits, naming it; the agent put back,
 * the alert resolves and the gate passes; a pending alert never holds it; Prometheus down holds it with the reason.
 */

const RULES = `
groups:
- name: rollplane-test
  rules:
  - alert: DhcpErrors
    expr: sum by (pool) (rate(sim_dhcp_errors_total[5s])) > 0
  - alert: AlwaysPending
    expr: vector(1)
    for: 1h
  - alert: NeverFires
    expr: vector(1) < 0
`;

describeWithPrometheus('the alert gate against a real Prometheus', () => {
  let sim: Simulator;
  let prometheus: TestPrometheus;

  beforeAll(async () => {
    // No upstream controllers: nothing puts the agent's image back while the test changes it.
    sim = await startSimulator({ fleet: 'demo,upstream=none' });
    prometheus = await startTestPrometheus([{ url: sim.url }], 1000, { rules: RULES });
  });
  afterAll(async () => {
    await prometheus?.stop();
    await sim?.stop();
  });

  it('waits while a named alert fires, naming it, and passes once it resolved; a pending alert does not hold it', async () => {
    const client = new PrometheusClient(prometheus.url, { timeoutMs: 10_000 });
    const config = parseAlertGateConfig({ alerts: ['DhcpErrors', 'AlwaysPending', 'NeverFires'] });
    const look = () => alertGateProgress(config, client, new Date());
    // The rules are loaded and evaluated (the pending alert is there), and nothing fires: the gate passes.
    await prometheus.waitForSeries('ALERTS{alertname="AlwaysPending",alertstate="pending"}');
    await prometheus.waitForSeries('rate(sim_dhcp_leases_total{pool="net-1"}[5s]) > 0');
    expect(await look()).toEqual({ state: 'PASSED', reason: 'no alert firing among DhcpErrors, AlwaysPending, NeverFires' });

    // A Ready-but-degraded agent: its errors make DhcpErrors fire, and the gate waits with the alert's name.
    const healthy = setDhcpAgentImage(sim, 'net-1', 'rancher/harvester-vm-dhcp-agent:degraded-v0.3.1');
    const waiting = await until(
      'the gate waiting on DhcpErrors',
      async () => {
        const progress = await look();
        return progress.state === 'WAITING' ? progress : undefined;
      },
      { timeoutMs: 60_000, intervalMs: prometheus.scrapeIntervalMs },
    );
    expect(waiting.reason).toBe('alerts firing: DhcpErrors');
    expect(waiting.until!.getTime()).toBeGreaterThan(Date.now());
    // Scoped by labels: a gate that watches another pool's alerts is not held by net-1's.
    const otherPool = parseAlertGateConfig({ alerts: ['DhcpErrors'], matchLabels: { pool: 'net-2' } });
    expect((await alertGateProgress(otherPool, client, new Date())).state).toBe('PASSED');
    const thisPool = parseAlertGateConfig({ alerts: ['DhcpErrors'], matchLabels: { pool: 'net-1' } });
    expect((await alertGateProgress(thisPool, client, new Date())).state).toBe('WAITING');

    // The agent put back: the alert resolves, and the gate passes again.
    setDhcpAgentImage(sim, 'net-1', healthy);
    await until('the gate passing again', async () => (await look()).state === 'PASSED', { timeoutMs: 60_000, intervalMs: prometheus.scrapeIntervalMs });
  });

  it('holds the gate with the reason while Prometheus is down: never a silent pass', async () => {
    const client = new PrometheusClient(prometheus.url, { timeoutMs: 10_000 });
    const config = parseAlertGateConfig({ alerts: ['NeverFires'] });
    expect((await alertGateProgress(config, client, new Date())).state).toBe('PASSED');
    await prometheus.shutDown();
    try {
      const progress = await alertGateProgress(config, client, new Date());
      expect(progress.state).toBe('WAITING');
      expect(progress.reason).toMatch(
        /^cannot tell whether alerts fire \(NeverFires\): UNREACHABLE: cannot reach Prometheus at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED$/,
      );
    } finally {
      await prometheus.restart();
    }
    expect((await alertGateProgress(config, client, new Date())).state).toBe('PASSED');
  });
});
