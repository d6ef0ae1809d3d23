import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimulatedClusters, startSimulatedClusters } from '../../../src/sim/simulatedClusters.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { MEMBER_FLEET_ENV, registerMembers } from '../../helpers/memberFleet.js';
import { until } from '../../helpers/until.js';

/**
 * A ClusterVersion change across member clusters dry-runs its first writes in every cluster before it is accepted, as
 * an agent-pool bump does: every cluster asked (a bounded number at once), each refusal naming its member, nothing
 * created when one refuses. It used to ask them all at once without a bound, and a member's refusal did not say which
 * member refused (the same `namespace/name` is in every cluster).
 */
const BUMP = `mutation ($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) {
  dryRun rollout { id } plan { cluster name action } } }`;
const INPUT = { clusterVersion: 'cv-sample-np', apiServer: { args: ['-v=7'] }, memberClusters: { names: ['edge-1', 'edge-2'] }, maxConcurrent: 2 };

describe('a ClusterVersion change across member clusters: the preflight', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane vc preflight '));
  let fleet: SimulatedClusters;
  let app: TestApp;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({
      clusters: ['edge-1', 'edge-2'].map((name) => ({ name, fleet: 'clusters=2,nodes=1,pools=0,peers=0' })),
    });
    registerMembers(dir, fleet, ['edge-1', 'edge-2'], () => ({ tier: 'edge' }));
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: { ...MEMBER_FLEET_ENV, ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS: '10000' } });
    await until('both members serve virtual clusters', () =>
      ['edge-1', 'edge-2'].every((name) => app.memberRuntimes?.snapshot().some((r) => r.cluster === name && r.running && r.kinds.includes('VIRTUAL_CLUSTER'))),
    );
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('plans every member when none refuses', async () => {
    const res = await gql(app.url, BUMP, { input: { ...INPUT, dryRun: true } });
    expect(res.errors).toBeUndefined();
    expect(res.data.bumpClusterVersion.plan.map((p: any) => `${p.cluster}/${p.name} ${p.action}`).sort()).toEqual(
      ['edge-1', 'edge-2'].flatMap((c) => [`${c}/vc-1 change`, `${c}/vc-2 change`]),
    );
  });

  it('names the member that refused, and every other that did too; nothing is created', async () => {
    const refuse = (name: string) => fleet.clusters.get(name)!.simulator.faults.set({ errorRate: { patch: 1, update: 1 }, errorCode: 503 });
    try {
      refuse('edge-2');
      const one = await gql(app.url, BUMP, { input: INPUT });
      expect(one.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
      expect(one.errors?.[0]?.message).toMatch(/^in member cluster edge-2: /);

      refuse('edge-1');
      const both = await gql(app.url, BUMP, { input: INPUT });
      expect(both.errors?.[0]?.message).toMatch(/^in member cluster edge-1: .*\(refused in 1 more cluster\(s\) too: edge-2/);
      const rollouts = await gql(app.url, '{ rollouts(filter: { kind: VIRTUAL_CLUSTER }) { totalCount } }');
      expect(rollouts.data.rollouts.totalCount).toBe(0);
    } finally {
      for (const name of ['edge-1', 'edge-2']) fleet.clusters.get(name)!.simulator.faults.set({});
    }
  });
});
