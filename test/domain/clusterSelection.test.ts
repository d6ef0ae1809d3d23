import { describe, expect, it } from 'vitest';
import {
  type ClusterPorts,
  kindPortIn,
  kindPortsAcross,
  memberClusterSelectionInput,
  planAcrossClusters,
  selectClusters,
} from '../../src/domain/clusterSelection.js';
import { NotImplementedError } from '../../src/errors.js';
import type { RolloutPlan } from '../../src/domain/kinds/index.js';

/** A bump's cluster selection (issue 29): default `local`, by names and/or labels, refusing what is not registered. */
describe('selectClusters', () => {
  const registered: { name: string; labels: Record<string, string> }[] = [
    { name: 'local', labels: {} },
    { name: 'edge-2', labels: { tier: 'edge', region: 'us' } },
    { name: 'edge-1', labels: { tier: 'edge', region: 'eu' } },
    { name: 'core', labels: { tier: 'core' } },
  ];

  it('is local when nothing is selected, and the union of names and labels otherwise, local first', () => {
    expect(selectClusters(undefined, registered)).toEqual(['local']);
    expect(selectClusters({ names: [], labelSelector: ' ' }, registered)).toEqual(['local']);
    expect(selectClusters({ labelSelector: 'tier=edge' }, registered)).toEqual(['edge-1', 'edge-2']);
    expect(selectClusters({ names: ['core', 'local'], labelSelector: 'region in (eu)' }, registered)).toEqual(['local', 'core', 'edge-1']);
  });

  it('refuses an unknown name, a bad selector and a selection of none, with the field', () => {
    expect(() => selectClusters({ names: ['edge-9'] }, registered)).toThrow(/no member cluster named "edge-9"/);
    expect(() => selectClusters({ labelSelector: 'tier=' + 'x'.repeat(70) }, registered)).toThrow();
    expect(() => selectClusters({ labelSelector: 'tier=nowhere' }, registered)).toThrow(/selects no member cluster/);
  });
});

describe('planAcrossClusters', () => {
  const planOf = (from: string, names: string[]): RolloutPlan => ({
    kind: 'AGENT_POOL',
    fromVersion: from,
    toVersion: 'v2',
    selector: {},
    strategy: { kind: 'AGENT_POOL' } as RolloutPlan['strategy'],
    targets: names.map((name) => ({ namespace: 'default', name, fromVersion: from, toVersion: 'v2' })),
  });

  it("puts each cluster's targets together in the order given, naming the cluster outside local", async () => {
    const plan = await planAcrossClusters(['local', 'edge-1'], async (cluster) => (cluster === 'local' ? planOf('v1', ['a']) : planOf('v0', ['a', 'b'])));
    expect(plan.targets).toEqual([
      { namespace: 'default', name: 'a', fromVersion: 'v1', toVersion: 'v2' },
      { cluster: 'edge-1', namespace: 'default', name: 'a', fromVersion: 'v0', toVersion: 'v2' },
      { cluster: 'edge-1', namespace: 'default', name: 'b', fromVersion: 'v0', toVersion: 'v2' },
    ]);
    expect(plan.fromVersion).toBeNull();
    expect((await planAcrossClusters(['edge-1'], async () => planOf('v1', ['a']))).fromVersion).toBe('v1');
  });

  it('refuses clusters that would go to different versions, and no cluster at all', async () => {
    await expect(planAcrossClusters(['a', 'b'], async (c) => ({ ...planOf('v1', ['x']), toVersion: c }))).rejects.toThrow(/different versions/);
    await expect(planAcrossClusters([], async () => planOf('v1', []))).rejects.toThrow(/selects no member cluster/);
  });

  it('refuses clusters whose plans would need different strategies, naming the fields', async () => {
    const withDeadline = (seconds: number) => ({
      ...planOf('v1', ['x']),
      strategy: { kind: 'AGENT_POOL', progressDeadlineSeconds: seconds } as RolloutPlan['strategy'],
    });
    await expect(planAcrossClusters(['local', 'edge-1'], async (c) => withDeadline(c === 'local' ? 600 : 300))).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      message: expect.stringMatching(/local and edge-1 would need different strategies \(progressDeadlineSeconds differ\)/),
    });
    // The same strategy with its keys in another order is the same strategy.
    const a = { ...planOf('v1', ['x']), strategy: { kind: 'AGENT_POOL', canary: 1, maxUnavailable: '1' } as unknown as RolloutPlan['strategy'] };
    const b = { ...planOf('v1', ['y']), strategy: { maxUnavailable: '1', canary: 1, kind: 'AGENT_POOL' } as unknown as RolloutPlan['strategy'] };
    expect((await planAcrossClusters(['local', 'edge-1'], async (c) => (c === 'local' ? a : b))).targets).toHaveLength(2);
  });
});

describe('memberClusterSelectionInput', () => {
  it('is absent for nothing or an empty selection (so old requests hash as before), names deduplicated and sorted', () => {
    expect(memberClusterSelectionInput.parse(undefined)).toBeUndefined();
    expect(memberClusterSelectionInput.parse(null)).toBeUndefined();
    expect(memberClusterSelectionInput.parse({ names: [], labelSelector: '  ' })).toBeUndefined();
    expect(memberClusterSelectionInput.parse({ names: ['edge-2', 'local', 'edge-2'], labelSelector: ' tier=edge ' })).toEqual({
      names: ['edge-2', 'local'].sort(),
      labelSelector: 'tier=edge',
    });
  });

  it('refuses a name that is no DNS-1123 label and a malformed selector', () => {
    expect(memberClusterSelectionInput.safeParse({ names: ['Edge_1'] }).success).toBe(false);
    const bad = memberClusterSelectionInput.safeParse({ labelSelector: 'tier in (edge' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toMatch(/is not a label selector/);
  });
});

describe('kindPortsAcross and kindPortIn: the seam a bump plans through', () => {
  type Q = { id: string };
  const request = {
    kind: 'AGENT_POOL' as const,
    pick: (ports: Record<string, unknown>) => ports.agentPools as Q | undefined,
    missingLocal: () => new NotImplementedError('agent pools'),
  };
  const registered: { name: string; labels: Record<string, string> }[] = [
    { name: 'local', labels: {} },
    { name: 'edge-1', labels: { tier: 'edge' } },
    { name: 'edge-2', labels: { tier: 'edge' } },
    { name: 'bare', labels: { tier: 'edge' } },
  ];
  const seam = (down: string[] = []): ClusterPorts => ({
    registered: async () => registered,
    portsOf: (cluster) =>
      down.includes(cluster)
        ? { unavailable: `member cluster ${cluster} is UNREACHABLE since 2026-12-05T08:00:00.000Z (ECONNREFUSED)` }
        : { ports: (cluster === 'bare' ? {} : { agentPools: { id: cluster } }) as never },
  });
  const domain = (down?: string[]) => ({ clusterPorts: seam(down) }) as never;

  it('is local alone without a selection, and every selected cluster with its own port otherwise', async () => {
    expect(await kindPortsAcross(domain(), undefined, request)).toEqual([{ cluster: 'local', queries: { id: 'local' } }]);
    expect((await kindPortsAcross(domain(), { names: ['edge-2', 'local'] }, request)).map((c) => c.queries.id)).toEqual(['local', 'edge-2']);
    // Picked by the selector alone, a cluster that does not serve the kind is left out; named, it is refused.
    expect((await kindPortsAcross(domain(), { labelSelector: 'tier=edge' }, request)).map((c) => c.cluster)).toEqual(['edge-1', 'edge-2']);
    await expect(kindPortsAcross(domain(), { names: ['bare'] }, request)).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      message: expect.stringMatching(/member cluster bare does not serve AGENT_POOL/),
    });
  });

  it('is UNAVAILABLE naming a selected cluster it cannot read now, and local answers its kind refusal', async () => {
    await expect(kindPortsAcross(domain(['edge-2']), { labelSelector: 'tier=edge' }, request)).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: expect.stringMatching(/member cluster edge-2 is UNREACHABLE since .* \(ECONNREFUSED\)/),
      details: { clusters: ['edge-2'] },
    });
    const noLocal = { clusterPorts: { ...seam(), portsOf: () => ({ ports: {} }) } } as never;
    await expect(kindPortsAcross(noLocal, undefined, request)).rejects.toMatchObject({ code: 'NOT_IMPLEMENTED' });
    // Without the composition root's seam (a Domain built by hand): local's own ports, and no member.
    expect(await kindPortsAcross({ agentPools: { id: 'own' } } as never, undefined, request)).toEqual([{ cluster: 'local', queries: { id: 'own' } }]);
    await expect(kindPortsAcross({ agentPools: { id: 'own' } } as never, { names: ['edge-1'] }, request)).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });

  it("answers one cluster's port for a list, with the same refusals", async () => {
    expect(await kindPortIn(domain(), undefined, request)).toEqual({ id: 'local' });
    expect(await kindPortIn(domain(), 'edge-1', request)).toEqual({ id: 'edge-1' });
    await expect(kindPortIn(domain(), 'edge-9', request)).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    await expect(kindPortIn(domain(['edge-1']), 'edge-1', request)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });
});
