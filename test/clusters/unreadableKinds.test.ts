import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { FAILED_LISTS_BEFORE_DEGRADED } from '../../src/clusters/MemberConnection.js';
import { MEMBER_FLEET_ENV } from '../helpers/memberFleet.js';
import { answerStatus, type MemberProxy, type MemberProxyOptions, startMemberProxy } from '../helpers/memberProxy.js';
import { parsePrometheusText } from '../helpers/promText.js';
import { until } from '../helpers/until.js';

/**
 * Attack 15, F4 (docs/adr/0066-member-kind-caches.md): member clusters whose discovery is real (each is a simulated
 * cluster behind an HTTP proxy of this test) but whose IPPool list answers 404, 500, or carries objects a
 * kube-apiserver never sends among the good ones, or never answers. Through the real server's `clusters` query: a 404
 * is "not served" (the kind is left out, READY, the message says why); a 500 that keeps coming, or a list that never
 * arrives, is DEGRADED naming the kind and the cause, reads say it, and the kind comes back once the list answers; a malformed object is skipped (and counted),
 * and the good pools are read.
 */
type Mode = 'list404' | 'list500' | 'listHang' | 'malformed' | 'nullMetadata' | 'proto' | 'pass';
const MEMBERS: Record<string, Mode> = {
  'k-404': 'list404',
  'k-500': 'list500',
  'k-hang': 'listHang',
  'k-malformed': 'malformed',
  'k-null': 'nullMetadata',
  'k-proto': 'proto',
};
const POOLS_LIST = /^\/apis\/network\.harvesterhci\.io\/v1alpha1\/ippools(\?|$)/;

/** Objects a kube-apiserver never sends, put among the real pools of a list answer. */
function extraItems(mode: Mode, good: Record<string, unknown>): unknown[] {
  const like = (metadata: unknown) => ({ ...good, metadata });
  switch (mode) {
    case 'malformed':
      return [
        { kind: 'IPPool' },
        null,
        'str',
        42,
        [],
        like({ name: 123, namespace: ['x'] }),
        like({ name: 'x'.repeat(300), namespace: 'default' }),
        like({ name: 'Bad_Name', namespace: 'default' }),
      ];
    case 'nullMetadata':
      return [like(null), like(undefined)];
    case 'proto':
      return [
        like({ name: '__proto__', namespace: 'default', uid: 'u-proto', resourceVersion: '1' }),
        like({ name: 'constructor', namespace: '__proto__', resourceVersion: '1' }),
      ];
    default:
      return [];
  }
}

/** What each member's proxy does with its IPPool lists now (the test switches k-500 to `pass`). */
const modes = new Map<string, Mode>(Object.entries(MEMBERS));

/** Passes everything to the simulated cluster but its IPPool lists (not watches), which it answers per the member's mode. */
function poolLists(member: string): MemberProxyOptions['intercept'] {
  return (req, res, forward) => {
    const url = req.url ?? '';
    const mode = modes.get(member)!;
    if (req.method !== 'GET' || !POOLS_LIST.test(url) || /[?&]watch=(true|1)/.test(url) || mode === 'pass') return false;
    if (mode === 'list404') answerStatus(res, 404, 'NotFound');
    else if (mode === 'list500') answerStatus(res, 500, 'InternalError');
    // Never answered (a list too large or too slow to arrive within the member timeout): the socket closes on stop.
    else if (mode === 'listHang') return true;
    else
      forward((body) => {
        const parsed = JSON.parse(body) as { items: Record<string, unknown>[] };
        parsed.items = [...parsed.items, ...extraItems(mode, parsed.items[0] ?? {})] as Record<string, unknown>[];
        return JSON.stringify(parsed);
      });
    return true;
  };
}

interface ClusterView {
  name: string;
  kinds: string[];
  health: { state: string; message: string | null };
  kindFigures: { kind: string; unavailable: string | null; versions: { count: number }[] | null }[];
}
const CLUSTERS = '{ clusters { name kinds health { state message } kindFigures { kind unavailable versions { count } } } }';
const POOLS = 'query($c: String) { agentPools(cluster: $c) { edges { node { cluster namespace name } } } }';

describe('member clusters whose list of a kind fails or carries malformed objects (attack 15, F4)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane unreadable kinds '));
  let fleet: SimulatedClusters;
  const proxies: MemberProxy[] = [];
  let app: TestApp;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({ clusters: Object.keys(MEMBERS).map((name) => ({ name, fleet: 'pools=2,nodes=1' })) });
    const clusters = [];
    for (const name of Object.keys(MEMBERS)) {
      const member = fleet.clusters.get(name)!;
      const proxy = await startMemberProxy(member.url, { intercept: poolLists(name) });
      proxies.push(proxy);
      clusters.push({ name, labels: { hostile: 'yes' }, kubeconfig: member.kubeconfig.replaceAll(member.url, proxy.url) });
    }
    writeFileSync(path.join(dir, 'member-clusters.yaml'), stringify({ clusters }), { mode: 0o600 });
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: { ...MEMBER_FLEET_ENV, ROLLPLANE_SIM_FLEET: 'pools=1,nodes=1' } });
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all(proxies.map((p) => p.close()));
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function clusters(): Promise<Map<string, ClusterView>> {
    const res = await gql(app.url, CLUSTERS);
    expect(res.errors).toBeUndefined();
    return new Map(res.data.clusters.map((c: ClusterView) => [c.name, c]));
  }
  const clusterWhere = (name: string, holds: (c: ClusterView) => boolean) =>
    until(`${name} as expected`, async () => {
      const c = (await clusters()).get(name);
      return c && holds(c) ? c : undefined;
    });
  const poolNames = async (cluster: string) => {
    const res = await gql(app.url, POOLS, { c: cluster });
    return { errors: res.errors, names: res.data?.agentPools.edges.map((e: { node: { name: string } }) => e.node.name).sort() };
  };
  const upstreamPools = (cluster: string) => {
    const sim = fleet.clusters.get(cluster)!.simulator;
    return sim.store
      .list(sim.store.resourceType('network.harvesterhci.io', 'ippools')!)
      .map((p) => p.metadata.name as string)
      .sort();
  };

  it('a kind whose list answers 404 is not served: READY, left out of kinds with the reason, its other kinds driven', async () => {
    const c = await clusterWhere('k-404', (v) => v.health.state === 'READY' && v.health.message !== null);
    expect(c.kinds).toEqual(['NODE_AGENT', 'VIRTUAL_CLUSTER']);
    expect(c.health.message).toContain('AGENT_POOL not served');
    expect(c.health.message).toContain('ippools list: HTTP 404');
    // The Clusters page's dash: no figures for a kind it does not serve; the others are read from its caches.
    const figures = await until('k-404 figures of its other kinds', async () => {
      const f = (await clusters()).get('k-404')!.kindFigures;
      return f.length === 2 && f.every((k) => k.unavailable === null) ? f : undefined;
    });
    expect(figures.map((f) => f.kind)).toEqual(['NODE_AGENT', 'VIRTUAL_CLUSTER']);
    // Reading its pools: refused as for any cluster that does not serve the kind, with the cause; not "its caches are
    // syncing" for ever.
    const read = await poolNames('k-404');
    expect(read.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(read.errors?.[0]?.message).toBe(
      // The read's argument is `cluster` (attack 16, G7: it said `cluster.names`, a bump's field).
      'cluster: member cluster k-404 does not serve AGENT_POOL (its ippools list: HTTP 404, though discovery lists it)',
    );
    // So is an unknown cluster's (attack 17, L4).
    const unknown = await poolNames('nosuch');
    expect(unknown.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(unknown.errors?.[0]?.message).toBe('cluster: no member cluster named "nosuch" is registered');
    expect(unknown.errors?.[0]?.extensions?.field).toBe('cluster');
    // Every read of one kind in one cluster says the same, on its argument `cluster`, not a bump's `cluster.names`.
    for (const read of [
      '{ virtualClusters(cluster: "nosuch") { totalCount } }',
      '{ nodeAgentSets(cluster: "nosuch") { totalCount } }',
      '{ agentPool(namespace: "default", name: "net-1", cluster: "nosuch") { name } }',
      '{ virtualCluster(namespace: "default", name: "vc-1", cluster: "nosuch") { name } }',
      '{ nodeAgentSet(namespace: "default", name: "agents", cluster: "nosuch") { name } }',
      '{ drift(cluster: "nosuch") { totalCount } }',
    ]) {
      const res = await gql(app.url, read);
      expect(res.errors?.[0], read).toMatchObject({
        message: 'cluster: no member cluster named "nosuch" is registered',
        extensions: { code: 'BAD_USER_INPUT', field: 'cluster' },
      });
    }
  });

  it('a kind whose list keeps answering 500 is DEGRADED naming the kind and the cause, and comes back once it answers', async () => {
    const c = await clusterWhere('k-500', (v) => v.health.state === 'DEGRADED');
    expect(c.kinds).toEqual(['NODE_AGENT', 'VIRTUAL_CLUSTER']);
    // DEGRADED only after FAILED_LISTS_BEFORE_DEGRADED lists failed in a row, and the message counts them (attack 16, G5).
    const failed = /^AGENT_POOL cannot be read \(ippools list: HTTP 500; (\d+) failed lists in a row, retrying with backoff\)$/.exec(c.health.message ?? '');
    expect(failed, c.health.message ?? '').not.toBeNull();
    expect(Number(failed![1])).toBeGreaterThanOrEqual(FAILED_LISTS_BEFORE_DEGRADED);
    const figures = await until('k-500 AGENT_POOL figures unavailable', async () => {
      const f = (await clusters()).get('k-500')!.kindFigures;
      return f.length === 3 ? f : undefined;
    });
    expect(figures.find((f) => f.kind === 'AGENT_POOL')).toMatchObject({ versions: null, unavailable: expect.stringContaining('HTTP 500') });
    const read = await poolNames('k-500');
    expect(read.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
    expect(read.errors?.[0]?.message).toContain('member cluster k-500 is DEGRADED: AGENT_POOL cannot be read since');
    // A read, not a plan (attack 16, G7).
    expect(read.errors?.[0]?.message).toMatch(/^cannot read AGENT_POOL: /);
    expect(read.errors?.[0]?.message).toContain('ippools list: HTTP 500');

    // The list answers again: the kind is retried (with backoff) and read; the cluster is READY with every kind.
    modes.set('k-500', 'pass');
    const back = await clusterWhere('k-500', (v) => v.health.state === 'READY' && v.kinds.includes('AGENT_POOL'));
    expect(back.health.message).toBeNull();
    const pools = await until('k-500 pools read', async () => {
      const r = await poolNames('k-500');
      return r.errors ? undefined : r.names;
    });
    expect(pools).toEqual(upstreamPools('k-500'));
  });

  it('a kind whose list never arrives within the member timeout is DEGRADED saying so', async () => {
    const c = await clusterWhere('k-hang', (v) => v.health.state === 'DEGRADED');
    expect(c.kinds).toEqual(['NODE_AGENT', 'VIRTUAL_CLUSTER']);
    expect(c.health.message).toMatch(
      /^AGENT_POOL cannot be read \(ippools list: no answer within 1000 ms; \d+ failed lists in a row, retrying with backoff\)$/,
    );
    const read = await poolNames('k-hang');
    expect(read.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
    expect(read.errors?.[0]?.message).toContain('ippools list: no answer within 1000 ms');
  });

  it.each([
    ['k-malformed', 8],
    ['k-null', 2],
    ['k-proto', 2],
  ])('%s: the objects that are not Kubernetes objects are skipped and counted, the good pools are read', async (cluster, bad) => {
    const c = await clusterWhere(cluster, (v) => v.health.state === 'READY' && v.kinds.includes('AGENT_POOL'));
    expect(c.health.message).toBeNull();
    const pools = await until(`${cluster} pools read`, async () => {
      const r = await poolNames(cluster);
      return r.errors ? undefined : r.names;
    });
    expect(pools).toEqual(upstreamPools(cluster));
    expect(pools.length).toBe(2);
    // Nothing of a `__proto__` key reached a prototype.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
    const metrics = parsePrometheusText(await (await fetch(`${app.baseUrl}/metrics`)).text());
    const skipped = metrics.find(
      (s) => s.name === 'rollplane_informer_skipped_objects_total' && s.labels.cluster === cluster && s.labels.informer === 'ippools',
    );
    expect(skipped?.value).toBeGreaterThanOrEqual(bad);
  });
});
