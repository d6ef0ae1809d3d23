import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentMetricsText } from '../../src/sim/agentMetrics.js';
import { agentPodName, AGENT_NAMESPACE, applyFleet } from '../../src/sim/fleet.js';
import { type Simulator, startSimulator } from '../../src/sim/index.js';
import { MemoryStore } from '../../src/sim/store/MemoryStore.js';
import { Resources } from '../../src/sim/store/resources.js';
import type { KubeObject } from '../../src/sim/types.js';
import { describeWithPrometheus, startTestPrometheus, type TestPrometheus } from '../helpers/prometheus.js';

/** `name{labels} value` lines of one family, as a map from the `pool`/`node`/`cluster_namespace` label to the value. */
function samples(text: string, family: string, key: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${family}{`)) continue;
    const label = new RegExp(`${key}="([^"]*)"`).exec(line)?.[1] ?? '';
    out.set(label, Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

describe('agent metrics (GET /metrics of the simulator)', () => {
  async function fleet(): Promise<{ store: MemoryStore; readySince: (pool: string) => number }> {
    const store = new MemoryStore();
    await applyFleet(store, 'pools=2,clusters=0,nodes=1,upstream=none');
    const readySince = (pool: string) => {
      const pod = store.get(Resources.pods, AGENT_NAMESPACE, agentPodName('default', pool))!;
      return Date.parse(pod.status.conditions.find((c: { type: string }) => c.type === 'Ready').lastTransitionTime);
    };
    return { store, readySince };
  }

  it('counts leases per pool from the moment the agent became Ready, and no errors, for a healthy image', async () => {
    const { store, readySince } = await fleet();
    const text = agentMetricsText(store, { now: () => readySince('net-1') + 10_000 });
    expect(text).toContain('# TYPE sim_dhcp_leases_total counter');
    expect(samples(text, 'sim_dhcp_leases_total', 'pool').get('net-1')).toBe(20);
    expect(samples(text, 'sim_dhcp_errors_total', 'pool').get('net-1')).toBe(0);
    expect(text).toMatch(/sim_dhcp_leases_total\{pool_namespace="default",pool="net-1",pod="default-net-1-agent",version="v0\.3\.0"\} 20/);
  });

  it('a degraded-* image stays Ready but serves no leases and counts errors; a pod that is not Ready exports nothing', async () => {
    const { store, readySince } = await fleet();
    const pod = store.get(Resources.pods, AGENT_NAMESPACE, agentPodName('default', 'net-1'))!;
    const degraded: KubeObject = structuredClone(pod);
    degraded.spec.containers[0].image = 'rancher/harvester-vm-dhcp-agent:degraded-v0.3.1';
    store.update(Resources.pods, degraded);
    const notReady: KubeObject = structuredClone(store.get(Resources.pods, AGENT_NAMESPACE, agentPodName('default', 'net-2'))!);
    notReady.status.conditions = notReady.status.conditions.map((c: { type: string }) => (c.type === 'Ready' ? { ...c, status: 'False' } : c));
    store.update(Resources.pods, notReady, 'status');
    const text = agentMetricsText(store, { now: () => readySince('net-1') + 10_000 });
    expect(samples(text, 'sim_dhcp_leases_total', 'pool').get('net-1')).toBe(0);
    expect(samples(text, 'sim_dhcp_errors_total', 'pool').get('net-1')).toBe(10);
    expect(text).toContain('version="degraded-v0.3.1"');
    expect(samples(text, 'sim_dhcp_leases_total', 'pool').has('net-2')).toBe(false);
    // The degrading glob is an option: with another one, the same image is healthy.
    const other = agentMetricsText(store, { now: () => readySince('net-1') + 10_000, degradedImagePatterns: ['*:slow*'] });
    expect(samples(other, 'sim_dhcp_leases_total', 'pool').get('net-1')).toBe(20);
  });

  it('an errors-<n> tag is healthy but fails n requests a second (a release a little worse than another)', async () => {
    const { store, readySince } = await fleet();
    const pod: KubeObject = structuredClone(store.get(Resources.pods, AGENT_NAMESPACE, agentPodName('default', 'net-1'))!);
    pod.spec.containers[0].image = 'rancher/harvester-vm-dhcp-agent:v0.3.1-errors-13';
    store.update(Resources.pods, pod);
    const text = agentMetricsText(store, { now: () => readySince('net-1') + 10_000 });
    expect(samples(text, 'sim_dhcp_errors_total', 'pool').get('net-1')).toBe(130);
    expect(samples(text, 'sim_dhcp_leases_total', 'pool').get('net-1')).toBe(20);
    expect(samples(text, 'sim_dhcp_errors_total', 'pool').get('net-2')).toBe(0);
  });
});

describeWithPrometheus('a real Prometheus scrapes the simulated agents', () => {
  let sim: Simulator;
  let prometheus: TestPrometheus;
  beforeAll(async () => {
    sim = await startSimulator({ fleet: 'demo' });
    prometheus = await startTestPrometheus([{ url: sim.url }]);
  });
  afterAll(async () => {
    await prometheus?.stop();
    await sim?.stop();
  });

  it('sees leases per pool, API server requests per virtual cluster and peer-pod starts per node', async () => {
    const leases = await prometheus.waitForSeries('sim_dhcp_leases_total', { min: 3 });
    expect(leases.map((s) => s.metric.pool).sort()).toEqual(['net-1', 'net-2', 'net-3']);
    expect(leases[0]!.metric.job).toBe('rollplane-sim');
    const requests = await prometheus.waitForSeries('sim_apiserver_requests_total', { min: 2 });
    expect(requests.map((s) => s.metric.virtual_cluster).sort()).toEqual(['default/vc-1', 'default/vc-2']);
    const starts = await prometheus.waitForSeries('sim_peer_pod_starts_total', { min: 3 });
    expect(starts.map((s) => s.metric.node).sort()).toEqual(['sim-node-1', 'sim-node-2', 'sim-node-3']);
    // Counters grow between scrapes: rate() over them is positive for every pool.
    const rates = await prometheus.waitForSeries('rate(sim_dhcp_leases_total[5s]) > 0', { min: 3 });
    expect(rates.every((s) => s.value > 0)).toBe(true);
    expect(await prometheus.vector('sum(rate(sim_dhcp_errors_total[5s]))')).toEqual([{ metric: {}, value: 0 }]);
  });
});
