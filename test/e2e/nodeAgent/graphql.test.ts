import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { startService, type ServiceProcess } from '../../helpers/child.js';
import { collect, gql, wsClient } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';
import { DELAYS, DS as DS_NAME, NS as DS_NS, OLD, serving } from './caaFleet.js';

const NEW = 'quay.io/confidential-containers/cloud-api-adaptor:v0.11.0';

/**
 * With rollplane away, waits until the simulator has done all it does alone: no agent terminating, every agent's
 * containers Ready (a gated one stays not Ready: only rollplane opens its gate), nothing queued in its controllers. A
 * DaemonSet that replaced an agent by itself would have done so by then (its controllers act without delay here).
 */
/** The images of the agents on `node`, a retiring one included. */
const imagesOn = (node: string) =>
  agents()
    .filter((p) => p.spec.nodeName === node)
    .map((p) => p.spec.containers[0].image);

async function simSettled(): Promise<void> {
  await until('the simulator settled', () =>
    agents().every(
      (p) =>
        !p.metadata.deletionTimestamp &&
        p.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'ContainersReady' && c.status === 'True'),
    ),
  );
  await sim.behaviour!.idle();
}

let sim: Simulator;
const apps: TestApp[] = [];

/** The app drives an external simulator (kubeconfig mode), so that rollplane can restart while the cluster stays. */
async function startApp(databaseFile?: string): Promise<TestApp> {
  const app = await startTestApp({
    ...(databaseFile ? { databaseFile } : {}),
    env: { ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: sim.kubeconfigPath, ROLLPLANE_CONTROLLERS: 'on' },
  });
  apps.push(app);
  return app;
}

const agents = () => sim.store.list(sim.store.resourceType('', 'pods')!).filter((p) => p.metadata.namespace === DS_NS);

beforeEach(async () => {
  sim = await startSimulator({ delays: DELAYS, fleet: 'nodes=3' });
  await until('the fleet Ready', () => {
    const pods = sim.store.list(sim.store.resourceType('', 'pods')!);
    return pods.length === 9 && pods.every(serving);
  });
});

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  await sim.stop();
});

const BUMP = `mutation ($input: BumpNodeAgentImageInput!) {
  bumpNodeAgentImage(input: $input) {
    created dryRun
    rollout { id state kind toVersion fromVersion strategy { maxUnavailable maxConcurrent mode minReadySeconds progressDeadlineSeconds failureThreshold } }
    plan { namespace name fromVersion toVersion action reason }
  }
}`;
const SET = `query ($ns: String!, $name: String!) {
  nodeAgentSet(namespace: $ns, name: $name) { namespace name peerRuntimeClass desiredImage updateStrategy drivenBy savedUpdateStrategy nodes { node podName image ready peerPods peerPodsReady upToDate retiringPod } }
}`;
const ROLLOUT = `query ($id: ID!) { rollout(id: $id) { state progress { succeeded total } targets { edges { node { name state } } } } }`;

describe('node agents over GraphQL', () => {
  it('lists the set with per-node state, validates and plans bumps, and rolls node by node with one event per node', async () => {
    const app = await startApp();
    const sets = await gql(
      app.url,
      '{ nodeAgentSets { totalCount edges { cursor node { namespace name desiredImage nodes { node } } } pageInfo { hasNextPage } } }',
    );
    expect(sets.errors).toBeUndefined();
    expect(sets.data.nodeAgentSets.totalCount).toBe(1);
    expect(sets.data.nodeAgentSets.edges[0].node).toMatchObject({ namespace: DS_NS, name: DS_NAME, desiredImage: OLD });
    expect(sets.data.nodeAgentSets.edges[0].node.nodes.map((n: { node: string }) => n.node)).toEqual(['sim-node-1', 'sim-node-2', 'sim-node-3']);

    const set = await gql(app.url, SET, { ns: DS_NS, name: DS_NAME });
    expect(set.data.nodeAgentSet.peerRuntimeClass).toBe('kata-remote');
    expect(set.data.nodeAgentSet.updateStrategy).toEqual({ type: 'OnDelete' });
    expect(set.data.nodeAgentSet).toMatchObject({ drivenBy: null, savedUpdateStrategy: null });
    for (const node of set.data.nodeAgentSet.nodes)
      expect(node).toMatchObject({ image: OLD, ready: true, peerPods: 2, peerPodsReady: 2, upToDate: true, retiringPod: null });
    expect((await gql(app.url, SET, { ns: DS_NS, name: 'nope' })).data.nodeAgentSet).toBeNull();

    // Validation names the field; an unknown DaemonSet is NOT_FOUND; nothing is created.
    const bad = await gql(app.url, BUMP, { input: { namespace: DS_NS, name: DS_NAME, image: 'Not An Image' } });
    expect(bad.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.image' });
    const badSelector = await gql(app.url, BUMP, { input: { namespace: DS_NS, name: DS_NAME, image: NEW, canaryNodeSelector: 'a in (b' } });
    expect(badSelector.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.canaryNodeSelector' });
    const badDeadline = await gql(app.url, BUMP, { input: { namespace: DS_NS, name: DS_NAME, image: NEW, nodeDeadlineSeconds: 0 } });
    expect(badDeadline.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.nodeDeadlineSeconds' });
    const missing = await gql(app.url, BUMP, { input: { namespace: DS_NS, name: 'nope', image: NEW } });
    expect(missing.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    // Dry run: canary node first, then by name; strategy one node at a time.
    const dry = await gql(app.url, BUMP, {
      input: { namespace: DS_NS, name: DS_NAME, image: NEW, dryRun: true, canaryNodeSelector: 'kubernetes.io/hostname in (sim-node-3)' },
    });
    expect(dry.errors).toBeUndefined();
    expect(dry.data.bumpNodeAgentImage).toMatchObject({
      dryRun: true,
      created: false,
      rollout: { id: 'dry-run', kind: 'NODE_AGENT', fromVersion: OLD, toVersion: NEW },
    });
    expect(dry.data.bumpNodeAgentImage.rollout.strategy).toEqual({
      maxUnavailable: '1',
      maxConcurrent: 1,
      mode: 'NODE_BY_NODE', // an OnDelete set does not update by surge itself
      minReadySeconds: 0,
      // The agent's startupProbe budget (20 s + 20 s × 30) plus 120 s for the pull (issue 27).
      progressDeadlineSeconds: 740,
      failureThreshold: 1,
    });
    expect(dry.data.bumpNodeAgentImage.plan.map((p: { name: string; namespace: string; action: string }) => [p.namespace, p.name, p.action])).toEqual([
      ['', 'sim-node-3', 'change'],
      ['', 'sim-node-1', 'change'],
      ['', 'sim-node-2', 'change'],
    ]);
    expect(agents().map((p) => p.spec.containers[0].image)).toEqual([OLD, OLD, OLD]);

    // The real thing, watched on the events subscription.
    const client = wsClient(app.url);
    const open = async () => (await app.metrics.subscriptionsActive.get()).values[0]?.value ?? 0;
    const openBefore = await open();
    const feed = collect(client, 'subscription { events(filter: { types: [NodeAgentReplaced] }) { type rolloutId object { kind namespace name } payload } }');
    try {
      // The subscription is open on the server (its gauge counts it) before the bump.
      await until('the events subscription to be open', async () => (await open()) > openBefore);
      // A canary node first, under an idempotency key: sent twice below.
      const input = {
        namespace: DS_NS,
        name: DS_NAME,
        image: NEW,
        canaryNodeSelector: 'kubernetes.io/hostname=sim-node-3',
        idempotencyKey: 'ci-run-1',
        cause: { actor: 'ci' },
      };
      const run = await gql(app.url, BUMP, { input });
      expect(run.errors).toBeUndefined();
      const id = run.data.bumpNodeAgentImage.rollout.id as string;
      await feed.waitFor(3, 20_000);
      const events = feed.results.map(
        (r: { events: { rolloutId: string; object: { kind: string; namespace: string; name: string }; payload: Record<string, unknown> } }) => r.events,
      );
      expect(events.map((e) => e.object)).toEqual(['sim-node-3', 'sim-node-1', 'sim-node-2'].map((name) => ({ kind: 'NODE_AGENT', namespace: '', name })));
      for (const e of events) {
        expect(e.rolloutId).toBe(id);
        expect(e.payload).toMatchObject({ node: e.object.name, oldImage: OLD, newImage: NEW, peerPodsRestarted: 2 });
      }
      const done = await until('SUCCEEDED', async () => {
        const r = await gql(app.url, ROLLOUT, { id });
        return r.data.rollout.state === 'SUCCEEDED' ? r.data.rollout : undefined;
      });
      expect(done.progress).toEqual({ succeeded: 3, total: 3 });
      // Same key, same request: the same rollout back.
      const again = await gql(app.url, BUMP, { input });
      expect(again.data.bumpNodeAgentImage).toMatchObject({ created: false, rollout: { id } });
    } finally {
      feed.unsubscribe();
      await client.dispose();
    }
    const after = await gql(app.url, SET, { ns: DS_NS, name: DS_NAME });
    expect(after.data.nodeAgentSet.desiredImage).toBe(NEW);
    for (const node of after.data.nodeAgentSet.nodes) expect(node).toMatchObject({ image: NEW, ready: true, peerPodsReady: 2, upToDate: true });
    const drift = await gql(app.url, '{ drift(kind: NODE_AGENT) { totalCount } }');
    expect(drift.data.drift.totalCount).toBe(0);
  });

  it('a restart of rollplane mid-rollout resumes at the right node', async () => {
    // Our own database file: a test app deletes the one it made when it stops.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-nodeagent-restart-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const first = await startApp(path.join(dir, 'rollplane.db'));
    const run = await gql(first.url, BUMP, { input: { namespace: DS_NS, name: DS_NAME, image: NEW } });
    const id = run.data.bumpNodeAgentImage.rollout.id as string;
    const replaced = async (url: string) =>
      (await gql(url, '{ events(filter: { types: [NodeAgentReplaced] }) { edges { node { payload } } } }')).data.events.edges.map(
        (e: { node: { payload: { node: string } } }) => e.node.payload.node,
      ) as string[];
    await until('the first node replaced', async () => (await replaced(first.url)).length >= 1);
    await first.close();
    apps.splice(apps.indexOf(first), 1);
    const frozen = agents()
      .map((p) => `${p.spec.nodeName}:${p.spec.containers[0].image}`)
      .sort();
    await simSettled();
    // Nothing moves while rollplane is away (the DaemonSet is OnDelete; an admitted node's new agent waits on its gate).
    expect(imagesOn('sim-node-3')).toEqual([OLD]);

    const second = await startApp(first.databaseFile);
    const done = await until('SUCCEEDED', async () => {
      const r = await gql(second.url, ROLLOUT, { id });
      return r.data?.rollout?.state === 'SUCCEEDED' ? r.data.rollout : undefined;
    });
    expect(done.targets.edges.map((e: { node: { name: string; state: string } }) => [e.node.name, e.node.state])).toEqual([
      ['sim-node-1', 'SUCCEEDED'],
      ['sim-node-2', 'SUCCEEDED'],
      ['sim-node-3', 'SUCCEEDED'],
    ]);
    expect(await replaced(second.url)).toEqual(['sim-node-1', 'sim-node-2', 'sim-node-3']);
    expect(frozen.length).toBeGreaterThanOrEqual(3);
    expect(agents().every(serving)).toBe(true);
    expect(agents().map((p) => p.spec.containers[0].image)).toEqual([NEW, NEW, NEW]);
  });

  it('a SIGKILLed rollplane resumes at the node it was on; no node is replaced twice and each gets one event', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-nodeagent-kill-'));
    const children: ServiceProcess[] = [];
    onTestFinished(async () => {
      for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
      await Promise.all(children.map((c) => c.exited));
      rmSync(dir, { recursive: true, force: true });
    });
    const env = {
      DATABASE_URL: `file:${path.join(dir, 'rollplane.db')}`,
      ROLLPLANE_KUBE: 'kubeconfig',
      KUBECONFIG: sim.kubeconfigPath,
      ROLLPLANE_LEADER_ELECT: 'false',
      ROLLPLANE_AUTH: 'off',
      HOST: '127.0.0.1',
    };
    const first = await startService(env);
    children.push(first);
    const url = `${first.url.replace(/\/graphql$/, '')}/graphql`;
    const started: string[] = [];
    const unsubscribe = sim.store.subscribe((event) => {
      const pod = event.object;
      if (event.type !== 'ADDED' || event.resource.plural !== 'pods' || pod.metadata.namespace !== DS_NS || pod.spec.containers[0].image !== NEW) return;
      started.push(pod.spec.nodeName);
      // The moment the second node's new agent exists, rollplane dies mid-flight.
      if (started.length === 2) first.child.kill('SIGKILL');
    });
    try {
      const run = await gql(url, BUMP, { input: { namespace: DS_NS, name: DS_NAME, image: NEW } });
      expect(run.errors).toBeUndefined();
      const id = run.data.bumpNodeAgentImage.rollout.id as string;
      expect((await first.exited).signal).toBe('SIGKILL');
      await simSettled();
      expect(imagesOn('sim-node-3')).toEqual([OLD]);

      const second = await startService(env);
      children.push(second);
      const url2 = `${second.url.replace(/\/graphql$/, '')}/graphql`;
      await until('SUCCEEDED', async () => (await gql(url2, ROLLOUT, { id })).data?.rollout?.state === 'SUCCEEDED', 30_000);
      expect(started).toEqual(['sim-node-1', 'sim-node-2', 'sim-node-3']);
      const events = await gql(url2, '{ events(filter: { types: [NodeAgentReplaced] }) { edges { node { payload } } } }');
      expect(events.data.events.edges.map((e: { node: { payload: { node: string } } }) => e.node.payload.node)).toEqual([
        'sim-node-1',
        'sim-node-2',
        'sim-node-3',
      ]);
      expect(agents().every(serving)).toBe(true);
      expect(agents().map((p) => p.spec.containers[0].image)).toEqual([NEW, NEW, NEW]);
    } finally {
      unsubscribe();
    }
  });
});
