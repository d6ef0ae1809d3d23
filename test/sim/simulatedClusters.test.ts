import { KIND_SERVED_RESOURCES } from '../../src/kinds/index.js';
import { readFileSync, statSync } from 'node:fs';
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMemberKubeconfig } from '../../src/clusters/credentials.js';
import { fingerprintOf, MemberClusters } from '../../src/clusters/MemberClusters.js';
import type { ClusterHealth } from '../../src/domain/clusters/model.js';
import { DEMO_MEMBER_CLUSTERS, type SimulatedClusters, simulatedClusterSpecs, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { until } from '../helpers/until.js';

/**
 * One process, several simulated clusters (docs/adr/0050-simulated-member-clusters.md): each with its own endpoint,
 * fleet and kubeconfig context, and a state switched at run time that real clients (client-node, a member connection)
 * see as they would see a real cluster's trouble. Waits on health changes, never on time.
 */

const OPTIONS = {
  qps: 20,
  burst: 40,
  // Long enough that a loaded machine's in-process simulators answer in time; only the black hole runs into it.
  requestTimeoutMs: 1_500,
  probeIntervalMs: 150,
  backoffBaseMs: 50,
  backoffMaxMs: 400,
  versions: { min: { major: 1, minor: 24 }, max: { major: 1, minor: 34 } },
  kindResources: KIND_SERVED_RESOURCES,
  random: () => 0.5,
};

describe('simulated clusters', () => {
  let sims: SimulatedClusters;
  let members: MemberClusters;

  beforeAll(async () => {
    sims = await startSimulatedClusters({
      clusters: [
        { name: 'edge-1', labels: { tier: 'edge', region: 'eu-west' }, fleet: 'pools=3,nodes=1,peers=0', behaviour: false },
        { name: 'edge-2', labels: { tier: 'edge' }, behaviour: false },
      ],
      adminPort: 0,
    });
    members = new MemberClusters({ ...OPTIONS, logger: pino({ level: 'silent' }), recordHealth: async () => {} });
    members.reconcile(
      new Map(
        [...sims.clusters.values()].map((cluster) => [
          cluster.name,
          { kubeConfig: parseMemberKubeconfig(cluster.kubeconfig, cluster.name, { allowExecPlugins: false }), fingerprint: fingerprintOf(cluster.kubeconfig) },
        ]),
      ),
    );
  });
  afterAll(async () => {
    await members?.stop();
    await sims?.stop();
  });

  const stateOf = (name: string) => members.get(name)?.health().state;
  const waitFor = (name: string, state: ClusterHealth['state']) =>
    until(`${name} ${state} (is ${stateOf(name)})`, () => (stateOf(name) === state ? members.get(name)!.health() : undefined));

  it('writes one kubeconfig with a context per cluster, and one file per cluster, that client-node reads', async () => {
    const all = new KubeConfig();
    all.loadFromFile(sims.kubeconfigPath);
    expect(all.getContexts().map((c) => c.name)).toEqual(['edge-1', 'edge-2']);
    expect(all.getCurrentContext()).toBe('edge-1');
    expect(statSync(sims.kubeconfigPath).mode & 0o777).toBe(0o600);
    // Each context reaches its own cluster, with its own fleet.
    const pools = async (context: string) => {
      all.setCurrentContext(context);
      const list = (await all
        .makeApiClient(CustomObjectsApi)
        .listClusterCustomObject({ group: 'network.harvesterhci.io', version: 'v1alpha1', plural: 'ippools' })) as {
        items: unknown[];
      };
      return list.items.length;
    };
    expect(await pools('edge-1')).toBe(3);
    expect(await pools('edge-2')).toBe(0);
    for (const cluster of sims.clusters.values()) {
      const one = new KubeConfig();
      one.loadFromFile(cluster.kubeconfigPath);
      expect(one.getContexts().map((c) => c.name)).toEqual([cluster.name]);
      expect(one.getCurrentCluster()?.server).toBe(cluster.url);
      expect(readFileSync(cluster.kubeconfigPath, 'utf8')).toBe(cluster.kubeconfig);
    }
    expect(new Set([...sims.clusters.values()].map((c) => c.url)).size).toBe(2);
  });

  it('a member connection sees each state: refused → UNREACHABLE, 401 → UNAUTHORIZED, black hole → UNREACHABLE after its timeout, back → READY', async () => {
    await Promise.all([waitFor('edge-1', 'READY'), waitFor('edge-2', 'READY')]);
    expect(members.get('edge-1')!.health().kinds).toContain('AGENT_POOL');

    await sims.set('edge-1', 'unreachable');
    expect((await waitFor('edge-1', 'UNREACHABLE')).message).toBe('ECONNREFUSED');
    await sims.set('edge-1', 'ready');
    await waitFor('edge-1', 'READY');

    await sims.set('edge-1', 'unauthorized');
    expect((await waitFor('edge-1', 'UNAUTHORIZED')).message).toBe('HTTP 401: the credentials were refused');

    await sims.set('edge-1', 'blackhole');
    expect((await waitFor('edge-1', 'UNREACHABLE')).message).toBe('no answer within 1500 ms');

    // Slower than the member's request timeout: as unreachable as a black hole, but answered in the end.
    await sims.set('edge-1', 'slow', 60_000);
    await sims.set('edge-1', 'ready');
    await waitFor('edge-1', 'READY');
    await sims.set('edge-1', 'slow', 60_000);
    expect((await waitFor('edge-1', 'UNREACHABLE')).message).toBe('no answer within 1500 ms');
    await sims.set('edge-1', 'ready');
    await waitFor('edge-1', 'READY');
    // edge-2 stayed as it was throughout.
    expect(stateOf('edge-2')).toBe('READY');
  });

  it('client-node sees the refused connection, the 401 and the added latency', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(sims.clusters.get('edge-2')!.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    try {
      await sims.set('edge-2', 'unreachable');
      const refused = await core.listNamespace().catch((error: unknown) => error);
      expect(JSON.stringify(refused, Object.getOwnPropertyNames(refused)) + String((refused as Error).cause)).toContain('ECONNREFUSED');

      await sims.set('edge-2', 'unauthorized');
      const denied = await core.listNamespace().catch((error: unknown) => error);
      expect(denied).toBeInstanceOf(ApiException);
      expect((denied as ApiException<unknown>).code).toBe(401);

      await sims.set('edge-2', 'slow', 300);
      const started = performance.now();
      const answered = await core.listNamespace();
      expect(answered.items.map((ns) => ns.metadata?.name)).toContain('default');
      expect(performance.now() - started).toBeGreaterThanOrEqual(300); // a timer waits at least its delay
    } finally {
      await sims.set('edge-2', 'ready');
    }
    expect((await core.listNamespace()).items.length).toBeGreaterThan(0);
  });

  it('the admin endpoint lists the clusters and switches their state at run time; bad input changes nothing', async () => {
    const admin = sims.adminUrl!;
    const put = (name: string, body: unknown) =>
      fetch(`${admin}/sim/clusters/${name}`, { method: 'PUT', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    const switched = await put('edge-2', { state: 'slow', latencyMs: 250 });
    expect(switched.status).toBe(200);
    expect(await switched.json()).toEqual({ state: 'slow', latencyMs: 250 });
    const listed = (await (await fetch(`${admin}/sim/clusters`)).json()) as { name: string; state: string; labels: Record<string, string> }[];
    expect(listed.map(({ name, state, labels }) => ({ name, state, labels }))).toEqual([
      { name: 'edge-1', state: 'ready', labels: { tier: 'edge', region: 'eu-west' } },
      { name: 'edge-2', state: 'slow', labels: { tier: 'edge' } },
    ]);

    const bad = await put('edge-2', { state: 'on-fire' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/^invalid cluster state: state:/);
    expect((await put('edge-9', { state: 'ready' })).status).toBe(404);
    expect(sims.clusters.get('edge-2')!.state()).toEqual({ state: 'slow', latencyMs: 250 });

    expect((await put('edge-2', { state: 'ready' })).status).toBe(200);
    expect(sims.clusters.get('edge-2')!.state()).toEqual({ state: 'ready', latencyMs: 0 });
  });

  it('reads `rollplane sim --clusters`: demo, a count or names, each with the fleet given', () => {
    expect(simulatedClusterSpecs('demo', 'pools=9')).toEqual(DEMO_MEMBER_CLUSTERS);
    expect(simulatedClusterSpecs('3', 'pools=3').map((s) => [s.name, s.fleet])).toEqual([
      ['sim-1', 'pools=3'],
      ['sim-2', 'pools=3'],
      ['sim-3', 'pools=3'],
    ]);
    expect(simulatedClusterSpecs('a, b', 'empty').map((s) => s.name)).toEqual(['a', 'b']);
    expect(() => simulatedClusterSpecs('0', 'empty')).toThrow(/1 to 5000/);
    expect(() => simulatedClusterSpecs('a,A', 'empty')).toThrow(/"A"/);
  });

  it('refuses a bad cluster name or a duplicate before starting anything', async () => {
    await expect(startSimulatedClusters({ clusters: [{ name: 'Edge_1' }] })).rejects.toThrow(/simulated cluster name "Edge_1"/);
    await expect(startSimulatedClusters({ clusters: [{ name: 'a' }, { name: 'a' }] })).rejects.toThrow(/"a" is given twice/);
  });
});
