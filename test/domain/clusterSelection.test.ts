import { describe, expect, it } from 'vitest';
import { planAcrossClusters, selectClusters } from '../../src/domain/clusterSelection.js';
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
});
