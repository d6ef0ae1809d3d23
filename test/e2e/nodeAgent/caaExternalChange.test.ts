/**
 * A `helm upgrade` of the cloud-api-adaptor chart made outside rollplane (fleet option upstream=caa: the chart's
 * RollingUpdate maxUnavailable 0 / maxSurge 1 DaemonSet), through the real server and reconcilers over HTTP: the
 * DaemonSet controller replaces every agent by itself, and rollplane records the change and each replacement as
 * unplanned (exactly once, across a restart of rollplane in the middle of it), shows the set as drift, and a rollout
 * afterwards is attributed to its rollout as before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';
import { caaFleet, DELAYS, DS, NODES, NS, OLD, serving } from './caaFleet.js';

const CHART_NEXT = 'quay.io/confidential-containers/cloud-api-adaptor:v0.12.0';
const NEW = 'quay.io/confidential-containers/cloud-api-adaptor:v0.13.0';

const BUMP = `mutation ($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { rollout { id } } }`;
const STATE = `query ($id: ID!) { rollout(id: $id) { state } }`;
const EVENTS = `{ events(filter: { kind: NODE_AGENT, types: [UpstreamControllerChanged, NodeAgentReplaced] }) { edges { node { type rolloutId object { namespace name } payload } } } }`;
/** A cheap query to poll on (the full history costs enough to run into the query-cost rate limit at 50 polls a second). */
const REPLACED = `{ events(filter: { kind: NODE_AGENT, types: [NodeAgentReplaced] }, first: 10) { edges { cursor } } }`;
const DRIFT = `{ drift(kind: NODE_AGENT) { edges { node { kind namespace name desiredVersion runningVersion since } } } }`;
const SET = `query { nodeAgentSet(namespace: "${NS}", name: "${DS}") { nodes { node image } } }`;

interface HistoryEvent {
  type: string;
  rolloutId: string | null;
  object: { namespace: string; name: string } | null;
  payload: Record<string, unknown>;
}

let sim: Simulator;
let app: TestApp | undefined;
let dir: string;

const { types, daemonSet, agentsOn } = caaFleet(() => sim);
const onImage = (image: string) => NODES.every((n) => agentsOn(n).length === 1 && agentsOn(n).every((p) => serving(p) && p.spec.containers[0].image === image));

async function history(): Promise<HistoryEvent[]> {
  const r = await gql(app!.url, EVENTS);
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return r.data.events.edges.map((e: { node: HistoryEvent }) => e.node);
}

async function replacedCount(): Promise<number> {
  const r = await gql(app!.url, REPLACED);
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return r.data.events.edges.length;
}

async function startApp(): Promise<TestApp> {
  const started = await startTestApp({
    databaseFile: path.join(dir, 'rollplane.db'),
    env: { ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: sim.kubeconfigPath, ROLLPLANE_CONTROLLERS: 'on' },
  });
  // Its caches are filled once the set shows every node's agent.
  await until('the node-agent caches filled', async () => (await gql(started.url, SET)).data?.nodeAgentSet?.nodes?.length === NODES.length);
  return started;
}

/** As `helm upgrade` with a new image value does it: Helm's three-way merge sets the chart's image in the template. */
function helmUpgrade(image: string): void {
  const live = structuredClone(daemonSet());
  live.spec.template.spec.containers[0].image = image;
  sim.store.update(types().daemonsets, live);
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-caa-external-'));
  sim = await startSimulator({ delays: DELAYS, fleet: 'nodes=3,upstream=caa' });
  await until('the chart agents Ready', () => onImage(OLD));
  app = await startApp();
});

afterEach(async () => {
  await app?.close();
  app = undefined;
  await sim.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a helm upgrade of the cloud-api-adaptor made outside rollplane', () => {
  it('is history (one unplanned change, one unplanned replacement per node, across a restart) and drift; a rollout afterwards is attributed to it', async () => {
    expect((await gql(app!.url, DRIFT)).data.drift.edges).toEqual([]);
    helmUpgrade(CHART_NEXT);

    // rollplane restarts in the middle of the DaemonSet's own rolling update, once it recorded a replacement.
    await until('a first unplanned replacement recorded', async () => (await replacedCount()) > 0);
    await app!.close();
    app = await startApp();
    await until('every node on the chart image', () => onImage(CHART_NEXT));
    await until('one unplanned replacement per node', async () => (await replacedCount()) >= NODES.length);
    const external = await history();

    expect(external.filter((e) => e.type === 'UpstreamControllerChanged')).toEqual([
      {
        type: 'UpstreamControllerChanged',
        rolloutId: null,
        object: { namespace: NS, name: DS },
        payload: expect.objectContaining({ daemonSet: `${NS}/${DS}`, oldImage: OLD, newImage: CHART_NEXT, planned: false }),
      },
    ]);
    const replaced = external.filter((e) => e.type === 'NodeAgentReplaced');
    expect(replaced.map((e) => e.object?.name).sort()).toEqual(NODES);
    for (const e of replaced) {
      expect(e.rolloutId).toBeNull();
      expect(e.payload).toMatchObject({ oldImage: OLD, newImage: CHART_NEXT, planned: false, reason: 'unplanned', daemonSet: `${NS}/${DS}` });
      // The agent it names is the one running there now.
      expect(e.payload.newPod).toBe(agentsOn(e.object!.name)[0]!.metadata.name);
    }

    // Drift: every node runs an image other than the one rollplane last rolled out (here: found).
    const drift = (await gql(app!.url, DRIFT)).data.drift.edges.map((e: { node: Record<string, unknown> }) => e.node);
    expect(drift.map((d: Record<string, unknown>) => [d.name, d.desiredVersion, d.runningVersion])).toEqual(NODES.map((n) => [n, OLD, CHART_NEXT]));
    for (const d of drift) expect(d.since).not.toBeNull();

    // Nothing more is recorded on its own (a third start reads the same history, records nothing again).
    await app!.close();
    app = await startApp();
    expect(await history()).toEqual(external);

    // A rollout afterwards: its replacements are its own, nothing unplanned is added, and drift is gone.
    const run = await gql(app!.url, BUMP, { input: { namespace: NS, name: DS, image: NEW } });
    expect(run.errors, JSON.stringify(run.errors)).toBeUndefined();
    const id = run.data.bumpNodeAgentImage.rollout.id as string;
    await until(`rollout ${id} done`, async () => ['SUCCEEDED', 'FAILED'].includes((await gql(app!.url, STATE, { id })).data?.rollout?.state) || undefined);
    expect((await gql(app!.url, STATE, { id })).data.rollout.state).toBe('SUCCEEDED');
    await until('every node on the rollout image', () => onImage(NEW));
    await until('the chart strategy back', () => daemonSet().spec.updateStrategy?.type === 'RollingUpdate');
    const after = await history();
    const added = after.slice(external.length);
    expect(added.map((e) => [e.type, e.rolloutId, e.object?.name, e.payload.oldImage, e.payload.newImage])).toEqual(
      NODES.map((n) => ['NodeAgentReplaced', id, n, CHART_NEXT, NEW]),
    );
    for (const e of added) expect(e.payload.planned).toBeUndefined();
    expect((await gql(app!.url, DRIFT)).data.drift.edges).toEqual([]);
  });
});
