import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { until } from '../helpers/until.js';
import { DELAYS, DS, NODES, NS, OLD } from './nodeAgent/caaFleet.js';

/**
 * Gates between the targets of NODE_AGENT and VIRTUAL_CLUSTER rollouts (issue 30, ADR 0071 addendum): `input.gate` on
 * bumpNodeAgentImage and bumpClusterVersion, through the real server driving a simulator over HTTP.
 */
const CV = 'cv-sample-np';
const CLUSTERS = ['vc-1', 'vc-2', 'vc-3'];
const CAA = 'quay.io/confidential-containers/cloud-api-adaptor';
const APISERVER = 'virtualcluster/apiserver-v1.16.2';
const STATE = 'query ($id: ID!) { rollout(id: $id) { state message waitingFor gates { key type state } } }';

describe('gates between the targets of node-agent and virtual-cluster rollouts', () => {
  let sim: Simulator;
  let app: TestApp;

  beforeAll(async () => {
    sim = await startSimulator({ delays: DELAYS, fleet: `clusters=${CLUSTERS.length},nodes=${NODES.length}` });
    app = await startTestApp({
      env: { ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: sim.kubeconfigPath, ROLLPLANE_CONTROLLERS: 'on', ROLLPLANE_LEADER_ELECT: 'false' },
    });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await sim?.stop();
  });

  const state = async (id: string) => {
    const result = await gql(app.url, STATE, { id });
    expect(result.errors).toBeUndefined();
    return result.data.rollout as { state: string; message: string | null; waitingFor: string | null; gates: unknown[] };
  };
  const ended = (id: string) =>
    until(`rollout ${id} ended`, async () => {
      const r = await state(id);
      return ['SUCCEEDED', 'FAILED', 'PAUSED', 'ABORTED'].includes(r.state) ? r : undefined;
    });

  it('NODE_AGENT: an approval after the first node stops the others until approved', async () => {
    const images = () =>
      sim.store
        .list(sim.store.resourceType('', 'pods')!)
        .filter((p) => p.metadata.namespace === NS && !p.metadata.deletionTimestamp)
        .map((p) => `${p.spec.nodeName}=${p.spec.containers[0].image}`)
        .sort();
    const BUMP = 'mutation ($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { rollout { id } } }';
    const refused = await gql(app.url, BUMP, { input: { namespace: NS, name: DS, image: `${CAA}:v0.11.0`, gate: { type: 'TIMED_WAIT', after: [1] } } });
    expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(refused.errors?.[0]?.message).toMatch(/^input\.gate\.config\.seconds: /);

    const IMAGE = `${CAA}:v0.11.0`;
    const result = await gql(app.url, BUMP, { input: { namespace: NS, name: DS, image: IMAGE, gate: { type: 'APPROVAL', after: [1] } } });
    expect(result.errors).toBeUndefined();
    const id = result.data.bumpNodeAgentImage.rollout.id as string;
    const waiting = await until('the gate targets:1 waiting', async () => {
      const r = await state(id);
      return r.waitingFor?.startsWith('gate targets:1: ') ? r : undefined;
    });
    expect(waiting.gates).toEqual([{ key: 'targets:1', type: 'APPROVAL', state: 'WAITING' }]);
    expect(images()).toEqual([`${NODES[0]}=${IMAGE}`, `${NODES[1]}=${OLD}`, `${NODES[2]}=${OLD}`]);
    const approved = await gql(app.url, 'mutation ($id: ID!) { approveGate(rolloutId: $id, gate: "targets:1") { state } }', { id });
    expect(approved.data?.approveGate).toEqual({ state: 'PASSED' });
    expect((await ended(id)).state).toBe('SUCCEEDED');
    expect(images()).toEqual(NODES.map((node) => `${node}=${IMAGE}`));
  });

  it('VIRTUAL_CLUSTER: a 0 s timed wait after every cluster passes each step by itself', async () => {
    const BUMP = 'mutation ($input: BumpClusterVersionInput!) { bumpClusterVersion(input: $input) { rollout { id } } }';
    const result = await gql(app.url, BUMP, {
      input: { clusterVersion: CV, apiServer: { image: `${APISERVER}:v1.16.3` }, gate: { type: 'TIMED_WAIT', config: { seconds: 0 }, every: 1 } },
    });
    expect(result.errors).toBeUndefined();
    const done = await ended(result.data.bumpClusterVersion.rollout.id as string);
    expect(done.state).toBe('SUCCEEDED');
    expect(done.gates).toEqual([
      { key: 'targets:1', type: 'TIMED_WAIT', state: 'PASSED' },
      { key: 'targets:2', type: 'TIMED_WAIT', state: 'PASSED' },
    ]);
  });
});
