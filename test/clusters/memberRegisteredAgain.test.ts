import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimulatedClusters, startSimulatedClusters } from '../../src/sim/simulatedClusters.js';
import { BUMP, helmUpgrade } from '../e2e/agentPool/rig.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { MEMBER_FLEET_ENV, registerMembers } from '../helpers/memberFleet.js';
import { until } from '../helpers/until.js';

/**
 * Attack 18, M3: a member's name registered again at another cluster kept the old cluster's history as its baseline:
 * the first look at the new cluster's vm-dhcp-controller recorded a change from the old cluster's image (a revert made
 * outside rollplane, in the history and its notifications) that never happened. Each recorded change now says which
 * API server it was seen through (a hash of its URL); one seen through another starts a new baseline.
 */
const OLD = 'rancher/harvester-vm-dhcp-agent:v0.3.0';
const OTHER_IMAGE = 'rancher/harvester-vm-dhcp-agent:v0.3.2';
const CHANGES = `query ($c: String) { events(filter: { types: [UpstreamControllerChanged], cluster: $c }, first: 50) { edges { node { payload } } } }`;

describe('a member name registered again at another cluster', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member registered again '));
  let fleet: SimulatedClusters;
  let app: TestApp;
  const changes = async (): Promise<any[]> => (await gql(app.url, CHANGES, { c: 'edge-1' })).data.events.edges.map((e: any) => e.node.payload);

  beforeAll(async () => {
    fleet = await startSimulatedClusters({
      clusters: ['edge-1', 'elsewhere'].map((name) => ({ name, fleet: 'pools=1,nodes=1,peers=0,upstream=vm-dhcp' })),
    });
    helmUpgrade({ sim: fleet.clusters.get('elsewhere')!.simulator }, OTHER_IMAGE);
    registerMembers(dir, fleet, ['edge-1'], () => ({ tier: 'edge' }));
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: MEMBER_FLEET_ENV });
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts a new baseline there instead of recording a change from the old cluster', async () => {
    await until('the baseline of edge-1 recorded', async () => (await changes()).length === 1);
    expect((await changes())[0]).toMatchObject({ oldImage: null, newImage: OLD, firstSeen: true, endpoint: expect.any(String) });

    // The name now names the other cluster (the credentials file rewritten, as an operator would).
    const other = fleet.clusters.get('elsewhere')!;
    registerMembers(dir, { ...fleet, clusters: new Map([['edge-1', other]]) } as SimulatedClusters, ['edge-1'], () => ({ tier: 'edge' }));
    await app.memberClusters.sync.syncFresh();
    await until('the new cluster looked at', async () => (await changes()).length === 2);
    const [first, again] = await changes();
    expect(again).toMatchObject({ oldImage: null, newImage: OTHER_IMAGE, planned: false, firstSeen: true });
    expect(again.endpoint).not.toBe(first.endpoint);
    expect((await changes()).filter((c) => c.oldImage === OLD)).toEqual([]);
  });
});

/**
 * Attack 20, F7: the name's drift kept the old cluster's decisions: every pool of the new cluster showed as drifted,
 * desired by a rollout that never ran there. Decisions made before the name began to name this cluster no longer count.
 */
describe('the drift of a member name registered again at another cluster', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane member drift registered again '));
  const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';
  const DRIFT = `query ($c: String) { drift(kind: AGENT_POOL, cluster: $c) { totalCount edges { node { name desiredVersion runningVersion desiredBy } } } }`;
  let fleet: SimulatedClusters;
  let app: TestApp;
  const changes = async (): Promise<any[]> => (await gql(app.url, CHANGES, { c: 'edge-1' })).data.events.edges.map((e: any) => e.node.payload);
  const drift = async () => (await gql(app.url, DRIFT, { c: 'edge-1' })).data.drift;

  beforeAll(async () => {
    fleet = await startSimulatedClusters({
      clusters: ['edge-1', 'elsewhere'].map((name) => ({ name, fleet: 'pools=2,nodes=1,peers=0,upstream=vm-dhcp' })),
    });
    registerMembers(dir, fleet, ['edge-1'], () => ({ tier: 'edge' }));
    app = await startTestApp({ databaseFile: path.join(dir, 'rollplane.db'), env: MEMBER_FLEET_ENV });
  });
  afterAll(async () => {
    await app?.close();
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps none of the old cluster's decisions", async () => {
    await until('the baseline of edge-1 recorded', async () => (await changes()).length === 1);
    const bump = await gql(app.url, BUMP, { input: { image: NEW, memberClusters: { names: ['edge-1'] }, strategy: { maxUnavailable: '2' } } });
    expect(bump.errors).toBeUndefined();
    const id: string = bump.data.bumpAgentImage.rollout.id;
    await until(
      'the bump of edge-1 succeeded',
      async () => (await gql(app.url, 'query ($id: ID!) { rollout(id: $id) { state } }', { id })).data.rollout.state === 'SUCCEEDED',
    );
    expect((await drift()).totalCount).toBe(0);

    const other = fleet.clusters.get('elsewhere')!;
    registerMembers(dir, { ...fleet, clusters: new Map([['edge-1', other]]) } as SimulatedClusters, ['edge-1'], () => ({ tier: 'edge' }));
    await app.memberClusters.sync.syncFresh();
    const first = (await changes()).at(-1);
    await until('the new cluster looked at', async () => (await changes()).some((c) => c.firstSeen && c.endpoint !== first.endpoint));
    // Its pools run what its controller deploys (OLD), and no rollout decided anything about them.
    let last: unknown;
    await until(
      () => `the new cluster's pools in the drift query (${JSON.stringify(last)})`,
      async () => {
        last = await drift();
        const pools = (await gql(app.url, `{ agentPools(cluster: "edge-1") { edges { node { runningImage } } } }`)).data?.agentPools?.edges;
        return Array.isArray(pools) && pools.length === 2 && pools.every((e: any) => e.node.runningImage === OLD);
      },
    );
    expect(await drift()).toEqual({ totalCount: 0, edges: [] });
  });
});
