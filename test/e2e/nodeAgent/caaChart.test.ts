/**
 * Node-agent rollouts against the cloud-api-adaptor DaemonSet as its `peerpods` chart installs it (RollingUpdate,
 * maxUnavailable 0 / maxSurge 1; fleet option upstream=caa), through the real server and reconcilers over HTTP. A
 * watcher on the simulator's store checks the cluster at every pod and DaemonSet event.
 */
import { isDeepStrictEqual } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import type { StoreEvent } from '../../../src/sim/types.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { gql } from '../../helpers/graphql.js';
import { until } from '../../helpers/until.js';
import { caaFleet, DELAYS, DS, NODES, NS, OLD, serving } from './caaFleet.js';

const NEW = 'quay.io/confidential-containers/cloud-api-adaptor:v0.11.0';
const BAD = 'quay.io/confidential-containers/cloud-api-adaptor:bad-1';
const GATE = 'rollplane.io/peer-pods-ready';
const CHART_STRATEGY = { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } };

const BUMP = `mutation ($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { rollout { id strategy { mode } } } }`;
const STATE = `query ($id: ID!) { rollout(id: $id) { state targets { edges { node { name state } } } } }`;
const ROLLBACK = `mutation ($id: ID!) { rollbackRollout(id: $id) { id } }`;

let sim: Simulator;
let app: TestApp | undefined;

const { types, daemonSet, agentsOn } = caaFleet(() => sim);
const peersOn = (node: string) =>
  sim.store.list(types().pods).filter((p) => p.spec?.nodeName === node && p.spec?.runtimeClassName === 'kata-remote' && !p.metadata.deletionTimestamp);

/**
 * Checks the cluster at every pod and DaemonSet event: at most one node without a Ready agent; at most one node "busy"
 * (its agents are not exactly one Ready pod, or a peer pod there is not Ready) — so the next node starts only once the
 * previous one's peer pods are back; the DaemonSet's strategy is the chart's or OnDelete (rollplane's), never anything
 * else, and its template never carries the readiness gate. Records the order nodes get busy and agent pods created.
 */
function watchCluster(options: { everyNodeReady?: boolean } = {}) {
  const allowedWithoutReady = options.everyNodeReady ? 0 : 1;
  const violations: string[] = [];
  const busyOrder: string[] = [];
  const created = new Map<string, number>();
  let busy = new Set<string>();
  const check = (event: StoreEvent) => {
    const plural = event.resource.plural;
    if (plural === 'daemonsets' && event.object.metadata.name === DS && event.type !== 'DELETED') {
      const strategy = event.object.spec.updateStrategy;
      if (!isDeepStrictEqual(strategy, CHART_STRATEGY) && !isDeepStrictEqual(strategy, { type: 'OnDelete' }))
        violations.push(`strategy ${JSON.stringify(strategy)}`);
      if ((event.object.spec.template.spec.readinessGates ?? []).some((g: { conditionType: string }) => g.conditionType === GATE))
        violations.push('readiness gate in the template');
    }
    if (plural !== 'pods' && plural !== 'daemonsets') return;
    if (plural === 'pods' && event.type === 'ADDED' && event.object.metadata.namespace === NS) {
      const node = event.object.spec?.nodeName ?? '(unscheduled)';
      created.set(node, (created.get(node) ?? 0) + 1);
    }
    const withoutReady = NODES.filter((n) => !agentsOn(n).some(serving));
    if (withoutReady.length > allowedWithoutReady)
      violations.push(`rev ${event.object.metadata.resourceVersion}: no Ready agent on ${withoutReady.join(', ')}`);
    const nowBusy = new Set(
      NODES.filter((n) => {
        const agents = agentsOn(n);
        return agents.length !== 1 || !serving(agents[0]!) || peersOn(n).some((p) => !serving(p));
      }),
    );
    if (nowBusy.size > 1) violations.push(`rev ${event.object.metadata.resourceVersion}: ${[...nowBusy].join(', ')} busy at once`);
    for (const n of nowBusy) if (!busy.has(n)) busyOrder.push(n);
    busy = nowBusy;
  };
  const unsubscribe = sim.store.subscribe(check);
  return { violations, busyOrder, created, unsubscribe };
}

async function waitState(id: string, states: string[]) {
  return until(`rollout ${id} in ${states.join('|')}`, async () => {
    const r = await gql(app!.url, STATE, { id });
    return states.includes(r.data?.rollout?.state) ? r.data.rollout : undefined;
  });
}

/** The DaemonSet controller has seen the latest spec and every agent is on the current template and available. */
async function settled() {
  await until('the DaemonSet settled', () => {
    const d = daemonSet();
    return (
      d.status?.observedGeneration === d.metadata.generation && d.status?.updatedNumberScheduled === NODES.length && d.status?.numberAvailable === NODES.length
    );
  });
}

beforeEach(async () => {
  sim = await startSimulator({ delays: DELAYS, fleet: 'nodes=3,upstream=caa' });
  await until('the chart agents and peer pods Ready', () =>
    NODES.every((n) => agentsOn(n).length === 1 && agentsOn(n).every(serving) && peersOn(n).length === 2 && peersOn(n).every(serving)),
  );
  app = await startTestApp({ env: { ROLLPLANE_KUBE: 'kubeconfig', KUBECONFIG: sim.kubeconfigPath, ROLLPLANE_CONTROLLERS: 'on' } });
});

afterEach(async () => {
  await app?.close();
  app = undefined;
  await sim.stop();
});

describe('node agents beside the cloud-api-adaptor chart', () => {
  it('by default on the chart (SURGE, issue 27): no node is ever without a Ready agent; strategy and template come back exactly', async () => {
    const original = structuredClone(daemonSet());
    expect(original.spec.updateStrategy).toEqual(CHART_STRATEGY);
    const watch = watchCluster({ everyNodeReady: true });
    try {
      const plan = await gql(
        app!.url,
        `mutation ($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { rollout { strategy { mode progressDeadlineSeconds } } plan { reason } } }`,
        {
          input: { namespace: NS, name: DS, image: NEW, dryRun: true },
        },
      );
      // The chart's startupProbe budget (20 s + 20 s × 30) plus the pull: the chart's 620 s fit in a node's deadline.
      expect(plan.data.bumpNodeAgentImage.rollout.strategy).toEqual({ mode: 'SURGE', progressDeadlineSeconds: 740 });
      expect(plan.data.bumpNodeAgentImage.plan.map((p: { reason: string | null }) => p.reason)).toEqual(NODES.map(() => null));
      const run = await gql(app!.url, BUMP, { input: { namespace: NS, name: DS, image: NEW } });
      expect(run.errors).toBeUndefined();
      expect(run.data.bumpNodeAgentImage.rollout.strategy.mode).toBe('SURGE');
      expect((await waitState(run.data.bumpNodeAgentImage.rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      await until('the chart strategy back', () => isDeepStrictEqual(daemonSet().spec.updateStrategy, CHART_STRATEGY));
      await until('no retiring agent left', () => NODES.every((n) => agentsOn(n).length === 1));
      await settled();
    } finally {
      watch.unsubscribe();
    }
    expect(watch.violations).toEqual([]);
    expect(watch.busyOrder).toEqual(NODES);
    expect(daemonSet().spec.updateStrategy).toEqual(original.spec.updateStrategy);
    const expected = structuredClone(original.spec.template);
    expected.spec.containers[0].image = NEW;
    expect(daemonSet().spec.template).toEqual(expected);
    expect(Object.keys(daemonSet().metadata.annotations ?? {}).filter((k) => k.startsWith('rollplane.io/'))).toEqual([]);
  });

  it('rolls node by node when asked, never two nodes without a Ready agent, and leaves the chart strategy and template as they were', async () => {
    const original = structuredClone(daemonSet());
    expect(original.spec.updateStrategy).toEqual(CHART_STRATEGY);
    const watch = watchCluster();
    try {
      const dry = await gql(app!.url, `mutation ($input: BumpNodeAgentImageInput!) { bumpNodeAgentImage(input: $input) { plan { reason } } }`, {
        input: { namespace: NS, name: DS, image: NEW, mode: 'NODE_BY_NODE', dryRun: true },
      });
      // The plan says NODE_BY_NODE deletes each agent first.
      for (const item of dry.data.bumpNodeAgentImage.plan) expect(item.reason).toMatch(/^deletes the node's agent first/);
      const run = await gql(app!.url, BUMP, { input: { namespace: NS, name: DS, image: NEW, mode: 'NODE_BY_NODE' } });
      expect(run.errors).toBeUndefined();
      const done = await waitState(run.data.bumpNodeAgentImage.rollout.id, ['SUCCEEDED', 'FAILED']);
      expect(done.state).toBe('SUCCEEDED');
      await until('the chart strategy back', () => isDeepStrictEqual(daemonSet().spec.updateStrategy, CHART_STRATEGY));
      await settled();
    } finally {
      watch.unsubscribe();
    }
    expect(watch.violations).toEqual([]);
    expect(watch.busyOrder).toEqual(NODES);
    // One new agent per node, made by rollplane's replacement; none by the DaemonSet after the strategy came back.
    expect(Object.fromEntries(watch.created)).toEqual(Object.fromEntries(NODES.map((n) => [n, 1])));
    const after = daemonSet();
    expect(after.spec.updateStrategy).toEqual(original.spec.updateStrategy);
    const expected = structuredClone(original.spec.template);
    expected.spec.containers[0].image = NEW;
    expect(after.spec.template).toEqual(expected);
    expect(Object.keys(after.metadata.annotations ?? {}).filter((k) => k.startsWith('rollplane.io/'))).toEqual([]);
    for (const n of NODES) expect(agentsOn(n).map((p) => [p.spec.containers[0].image, serving(p), p.spec.readinessGates ?? []])).toEqual([[NEW, true, []]]);
  });

  it('a failed rollout keeps the set OnDelete without a gate; its rollback restores the chart strategy and template exactly', async () => {
    const original = structuredClone(daemonSet());
    const watch = watchCluster();
    try {
      const run = await gql(app!.url, BUMP, { input: { namespace: NS, name: DS, image: BAD } });
      const id = run.data.bumpNodeAgentImage.rollout.id as string;
      const failed = await waitState(id, ['FAILED', 'SUCCEEDED']);
      expect(failed.state).toBe('FAILED');
      expect(failed.targets.edges.map((e: { node: { state: string } }) => e.node.state)).toEqual(['FAILED', 'CANCELLED', 'CANCELLED']);
      // Mixed versions: RollingUpdate now would let the DaemonSet push the bad image to the other nodes on its own.
      await until('the rollout released the set', () => daemonSet().metadata.annotations?.['rollplane.io/rollout'] === undefined);
      expect(daemonSet().spec.updateStrategy).toEqual({ type: 'OnDelete' });
      expect(daemonSet().spec.template.spec.readinessGates).toBeUndefined();
      expect(JSON.parse(daemonSet().metadata.annotations!['rollplane.io/original-update-strategy']!)).toEqual(CHART_STRATEGY);

      const back = await gql(app!.url, ROLLBACK, { id });
      expect(back.errors).toBeUndefined();
      expect((await waitState(back.data.rollbackRollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      await until('the chart strategy back', () => isDeepStrictEqual(daemonSet().spec.updateStrategy, CHART_STRATEGY));
      await settled();
    } finally {
      watch.unsubscribe();
    }
    expect(watch.violations).toEqual([]);
    // sim-node-1 got the bad agent, then the old image back; the other nodes were never touched.
    expect(Object.fromEntries(watch.created)).toEqual({ 'sim-node-1': 2 });
    const after = daemonSet();
    expect(after.spec.updateStrategy).toEqual(original.spec.updateStrategy);
    expect(after.spec.template).toEqual(original.spec.template);
    expect(Object.keys(after.metadata.annotations ?? {}).filter((k) => k.startsWith('rollplane.io/'))).toEqual([]);
    for (const n of NODES) expect(agentsOn(n).map((p) => [p.spec.containers[0].image, serving(p)])).toEqual([[OLD, true]]);
  });

  it('abort keeps the nodes as they are (OnDelete, no gate); the rollback restores the chart strategy and template exactly', async () => {
    const original = structuredClone(daemonSet());
    const watch = watchCluster();
    try {
      const run = await gql(app!.url, BUMP, { input: { namespace: NS, name: DS, image: NEW } });
      const id = run.data.bumpNodeAgentImage.rollout.id as string;
      await until('the first node done', async () => {
        const r = await gql(app!.url, STATE, { id });
        return r.data.rollout.targets.edges[0].node.state === 'SUCCEEDED';
      });
      const abort = await gql(app!.url, `mutation ($id: ID!) { abortRollout(id: $id, reason: "test") { id } }`, { id });
      expect(abort.errors).toBeUndefined();
      await waitState(id, ['ABORTED']);
      // The admitted node finishes; finish() then releases the set.
      await until('the rollout released the set', () => daemonSet().metadata.annotations?.['rollplane.io/rollout'] === undefined);
      const aborted = (await gql(app!.url, STATE, { id })).data.rollout;
      const changed = aborted.targets.edges
        .filter((e: { node: { state: string } }) => e.node.state === 'SUCCEEDED')
        .map((e: { node: { name: string } }) => e.node.name);
      expect(changed.length).toBeGreaterThanOrEqual(1);
      if (changed.length < NODES.length) expect(daemonSet().spec.updateStrategy).toEqual({ type: 'OnDelete' });
      expect(daemonSet().spec.template.spec.readinessGates).toBeUndefined();
      // Nothing moves after the abort: the nodes not reached keep their old agent.
      for (const n of NODES) expect(agentsOn(n).map((p) => p.spec.containers[0].image)).toEqual([changed.includes(n) ? NEW : OLD]);

      const back = await gql(app!.url, ROLLBACK, { id });
      expect(back.errors).toBeUndefined();
      expect((await waitState(back.data.rollbackRollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      await until('the chart strategy back', () => isDeepStrictEqual(daemonSet().spec.updateStrategy, CHART_STRATEGY));
      await settled();
    } finally {
      watch.unsubscribe();
    }
    expect(watch.violations).toEqual([]);
    const after = daemonSet();
    expect(after.spec.updateStrategy).toEqual(original.spec.updateStrategy);
    expect(after.spec.template).toEqual(original.spec.template);
    for (const n of NODES) expect(agentsOn(n).map((p) => [p.spec.containers[0].image, serving(p)])).toEqual([[OLD, true]]);
  });

  it('a helm upgrade of the chart mid-rollout takes the set back: rollplane fails the rollout and does not fight the DaemonSet', async () => {
    const CHART_NEXT = 'quay.io/confidential-containers/cloud-api-adaptor:v0.12.0';
    const watch = watchCluster();
    let helmAt = -1;
    const strategiesAfterHelm: unknown[] = [];
    const unsubscribe = sim.store.subscribe((event) => {
      if (helmAt >= 0 && event.resource.plural === 'daemonsets' && event.object.metadata.name === DS)
        strategiesAfterHelm.push(event.object.spec.updateStrategy);
    });
    try {
      const run = await gql(app!.url, BUMP, { input: { namespace: NS, name: DS, image: NEW } });
      const id = run.data.bumpNodeAgentImage.rollout.id as string;
      await until('the first node done', async () => (await gql(app!.url, STATE, { id })).data.rollout.targets.edges[0].node.state === 'SUCCEEDED');
      // Helm's three-way merge: the chart's strategy and image are set again; annotations it does not own stay.
      const live = structuredClone(daemonSet());
      live.spec.updateStrategy = CHART_STRATEGY;
      live.spec.template.spec.containers[0].image = CHART_NEXT;
      helmAt = Number(sim.store.update(types().daemonsets, live).metadata.resourceVersion);
      const failed = await waitState(id, ['FAILED', 'SUCCEEDED']);
      expect(failed.state).toBe('FAILED');
      await until('the rollout released the set', () => daemonSet().metadata.annotations?.['rollplane.io/rollout'] === undefined);
      // The DaemonSet's own surge rolling update brings every node to the chart's image.
      await until('every node on the chart image', () =>
        NODES.every((n) => agentsOn(n).length === 1 && agentsOn(n).every((p) => serving(p) && p.spec.containers[0].image === CHART_NEXT)),
      );
      await settled();
    } finally {
      unsubscribe();
      watch.unsubscribe();
    }
    // Never two nodes without a Ready agent (maxUnavailable 0 does the rest); the DaemonSet never went back to OnDelete.
    expect(watch.violations.filter((v) => !v.includes('busy at once'))).toEqual([]);
    expect(strategiesAfterHelm.length).toBeGreaterThan(0);
    for (const strategy of strategiesAfterHelm) expect(strategy).toEqual(CHART_STRATEGY);
    const after = daemonSet();
    expect(after.spec.updateStrategy).toEqual(CHART_STRATEGY);
    expect(after.spec.template.spec.containers[0].image).toBe(CHART_NEXT);
    expect(Object.keys(after.metadata.annotations ?? {}).filter((k) => k.startsWith('rollplane.io/'))).toEqual([]);
    const rollout = await gql(app!.url, `query { rollouts(first: 1) { edges { node { targets { edges { node { state error } } } } } } }`);
    const errors = (rollout.data?.rollouts?.edges?.[0]?.node?.targets?.edges ?? [])
      .map((e: { node: { error: string | null } }) => e.node.error)
      .filter(Boolean);
    expect(errors.join(' ')).toMatch(/switched to RollingUpdate .*outside rollplane/);
    // The history has the chart's change as unplanned, and every agent the DaemonSet replaced on its own as unplanned,
    // once per node and never as the rollout's.
    const HISTORY = `{ events(filter: { kind: NODE_AGENT, types: [UpstreamControllerChanged, NodeAgentReplaced] }) { edges { node { type rolloutId payload } } } }`;
    type Entry = { type: string; rolloutId: string | null; payload: Record<string, unknown> };
    const unplanned = (events: Entry[]) => events.filter((e) => e.type === 'NodeAgentReplaced' && e.payload.newImage === CHART_NEXT);
    const events = await until('one replacement to the chart image per node', async () => {
      const r = await gql(app!.url, HISTORY);
      const list = (r.data?.events?.edges ?? []).map((e: { node: Entry }) => e.node) as Entry[];
      return unplanned(list).length >= NODES.length ? list : undefined;
    });
    expect(
      events.filter((e) => e.type === 'UpstreamControllerChanged').map((e) => [e.rolloutId, e.payload.oldImage, e.payload.newImage, e.payload.planned]),
    ).toEqual([[null, NEW, CHART_NEXT, false]]);
    expect(
      unplanned(events)
        .map((e) => e.payload.node)
        .sort(),
    ).toEqual(NODES);
    for (const e of unplanned(events)) expect([e.rolloutId, e.payload.planned, e.payload.reason]).toEqual([null, false, 'unplanned']);
  });

  it('SURGE: the old agent serves each node until the new one is Ready; the chart strategy and template come back', async () => {
    const original = structuredClone(daemonSet());
    const watch = watchCluster();
    try {
      const run = await gql(app!.url, BUMP, { input: { namespace: NS, name: DS, image: NEW, mode: 'SURGE' } });
      expect(run.errors).toBeUndefined();
      expect(run.data.bumpNodeAgentImage.rollout.strategy.mode).toBe('SURGE');
      expect((await waitState(run.data.bumpNodeAgentImage.rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      await until('the chart strategy back', () => isDeepStrictEqual(daemonSet().spec.updateStrategy, CHART_STRATEGY));
      await until('no retiring agent left', () => NODES.every((n) => agentsOn(n).length === 1));
      await settled();
    } finally {
      watch.unsubscribe();
    }
    // One node at a time (two agents there while it hands over), never a node without a Ready agent.
    expect(watch.violations).toEqual([]);
    expect(watch.busyOrder).toEqual(NODES);
    const expected = structuredClone(original.spec.template);
    expected.spec.containers[0].image = NEW;
    expect(daemonSet().spec.template).toEqual(expected);
    expect(daemonSet().spec.updateStrategy).toEqual(CHART_STRATEGY);
    for (const n of NODES)
      expect(agentsOn(n).map((p) => [p.spec.containers[0].image, serving(p), p.metadata.labels?.app])).toEqual([[NEW, true, 'cloud-api-adaptor']]);
  });
});
