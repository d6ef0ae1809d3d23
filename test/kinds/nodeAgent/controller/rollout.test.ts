import { afterEach, describe, expect, it } from 'vitest';
import { EventType } from '../../../../src/domain/events.js';
import type { StoreEvent } from '../../../../src/sim/types.js';
import { agentImage, agentsByNode, BAD_IMAGE, DS_NAME, DS_NS, isReadyPod, NEW_IMAGE, OLD_IMAGE, peerPodsOn, startHarness, type Harness } from './harness.js';
import { waitQuiet } from '../../../helpers/quiet.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const NODES = ['sim-node-1', 'sim-node-2', 'sim-node-3'];
/** Small but non-zero: a restarted peer pod is NotReady for a while, so the gate has something to wait for. */
const DELAYS = { podScheduleMs: 0, podStartMs: 10, podReadyMs: 40, podTerminateMs: 10, controllerMs: 0 };

/** Nodes that have no Ready agent right now, from the simulator's store. */
function nodesWithoutReadyAgent(harness: Harness, nodes: readonly string[]): string[] {
  const byNode = agentsByNode(harness.pods());
  return nodes.filter((n) => !(byNode.get(n) ?? []).some(isReadyPod));
}

describe('node-agent rollout, NODE_BY_NODE on three nodes', () => {
  it('never has two nodes without a Ready agent and starts a node only after the previous one is back', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    const violations: string[] = [];
    const started: string[] = [];
    let checks = 0;
    const unsubscribe = harness.sim.store.subscribe((event: StoreEvent) => {
      checks++;
      const down = nodesWithoutReadyAgent(harness, NODES);
      if (down.length > 1) violations.push(`rv ${event.object.metadata.resourceVersion}: ${down.join(', ')} without a Ready agent`);
      const pod = event.object;
      if (event.type === 'ADDED' && event.resource.plural === 'pods' && pod.metadata.namespace === DS_NS && agentImage(pod) === NEW_IMAGE) {
        const node = pod.spec.nodeName as string;
        const pods = harness.pods();
        for (const previous of started) {
          const peers = peerPodsOn(pods, previous);
          const notBack = peers.filter((p) => !isReadyPod(p)).map((p) => p.metadata.name);
          if (notBack.length > 0 || peers.length === 0) violations.push(`${node} started while ${previous} had peer pods not Ready: ${notBack.join(', ')}`);
          const agentReady = (agentsByNode(pods).get(previous) ?? []).some((a) => isReadyPod(a) && agentImage(a) === NEW_IMAGE);
          if (!agentReady) violations.push(`${node} started before the new agent on ${previous} was Ready`);
        }
        if (!started.includes(node)) started.push(node);
      }
    });
    try {
      const rollout = await harness.bump({ mode: 'NODE_BY_NODE', canaryNodeSelector: 'kubernetes.io/hostname=sim-node-2' });
      expect(rollout.state).toBe('PENDING');
      const done = await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED']);
      expect(done.state).toBe('SUCCEEDED');
      expect(violations).toEqual([]);
      expect(checks).toBeGreaterThan(20);
      // The canary node first, then by name.
      expect(started).toEqual(['sim-node-2', 'sim-node-1', 'sim-node-3']);

      const byNode = agentsByNode(harness.pods());
      for (const node of NODES) {
        const agents = byNode.get(node) ?? [];
        expect(agents).toHaveLength(1);
        expect(agentImage(agents[0]!)).toBe(NEW_IMAGE);
        expect(isReadyPod(agents[0]!)).toBe(true);
        // Peer pods were restarted by the agent replacement and are back.
        for (const peer of peerPodsOn(harness.pods(), node)) {
          expect(isReadyPod(peer)).toBe(true);
          expect(peer.status.containerStatuses[0].restartCount).toBe(1);
        }
      }

      // One NodeAgentReplaced per node, in order, with the pods and images.
      const replaced = await harness.events.listAfter({ rolloutId: rollout.id, types: [EventType.NodeAgentReplaced] }, undefined, 100);
      expect(replaced.map((e) => e.payload.node)).toEqual(['sim-node-2', 'sim-node-1', 'sim-node-3']);
      for (const event of replaced) {
        expect(event.payload).toMatchObject({ oldImage: OLD_IMAGE, newImage: NEW_IMAGE, peerPodsRestarted: 2, daemonSet: `${DS_NS}/${DS_NAME}` });
        expect(event.payload.oldPod).toMatch(/^cloud-api-adaptor-daemonset-/);
        expect(event.payload.newPod).not.toBe(event.payload.oldPod);
        expect(typeof event.payload.seconds).toBe('number');
      }

      // The DaemonSet is as before, with the new image: OnDelete (the fleet's original), no readiness gate, no marks.
      const ds = harness.daemonSet();
      expect(ds.spec.updateStrategy).toEqual({ type: 'OnDelete' });
      expect(ds.spec.template.spec.readinessGates ?? []).toEqual([]);
      expect(ds.spec.template.spec.containers[0].image).toBe(NEW_IMAGE);
      expect(Object.keys(ds.metadata.annotations ?? {}).filter((k) => k.startsWith('rollplane.io/'))).toEqual([]);

      // The query port sees it.
      const set = harness.runtime.queries.getSet(DS_NS, DS_NAME)!;
      expect(set.desiredImage).toBe(NEW_IMAGE);
      expect(set.nodes.map((n) => [n.node, n.upToDate, n.ready, n.peerPods, n.peerPodsReady])).toEqual(NODES.map((n) => [n, true, true, 2, 2]));
      expect(await harness.runtime.queries.driftItems()).toEqual([]);
    } finally {
      unsubscribe();
    }
  });
});

describe('node-agent gate', () => {
  it('holds a node whose peer pod does not come back: the next node never starts and the node fails at its deadline', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    // A peer pod on sim-node-1 that never turns Ready (its image cannot be pulled).
    const pods = harness.sim.store.resourceType('', 'pods')!;
    harness.sim.store.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'stuck-peer', namespace: 'peer-workloads' },
      spec: { nodeName: 'sim-node-1', runtimeClassName: 'kata-remote', containers: [{ name: 'c', image: 'nginx:bad-peer' }] },
    });
    const rollout = await harness.bump({ nodeDeadlineSeconds: 1 });
    const done = await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED']);
    expect(done.state).toBe('FAILED');
    const targets = await harness.rollouts.allTargets(rollout.id);
    expect(targets.map((t) => [t.name, t.state])).toEqual([
      ['sim-node-1', 'FAILED'],
      ['sim-node-2', 'CANCELLED'],
      ['sim-node-3', 'CANCELLED'],
    ]);
    expect(targets[0]!.error).toMatch(/waiting for peer pods \(2\/3 back\): stuck-peer/);
    const byNode = agentsByNode(harness.pods());
    // sim-node-1's new agent runs but is held NotReady by the gate; the other nodes were never touched.
    expect(agentImage(byNode.get('sim-node-1')![0]!)).toBe(NEW_IMAGE);
    expect(isReadyPod(byNode.get('sim-node-1')![0]!)).toBe(false);
    for (const node of ['sim-node-2', 'sim-node-3']) {
      expect(byNode.get(node)!.map(agentImage)).toEqual([OLD_IMAGE]);
      expect(isReadyPod(byNode.get(node)![0]!)).toBe(true);
    }
    // The gate was removed from the template at the end; the held pod still carries it (pod specs are immutable).
    expect(harness.daemonSet().spec.template.spec.readinessGates ?? []).toEqual([]);
    expect(harness.daemonSet().spec.updateStrategy).toEqual({ type: 'OnDelete' });
  });
});

describe('node-agent rollout, SURGE on one node', () => {
  it('keeps a Ready agent on the node at every moment and hands over to the new agent', async () => {
    h = await startHarness({ fleet: 'nodes=1', sim: { delays: DELAYS } });
    const harness = h;
    const violations: string[] = [];
    let maxAgents = 0;
    const retiringSeen = new Set<string>();
    const unsubscribe = harness.sim.store.subscribe((event: StoreEvent) => {
      const agents = agentsByNode(harness.pods()).get('sim-node-1') ?? [];
      maxAgents = Math.max(maxAgents, agents.filter((a) => !a.metadata.deletionTimestamp).length);
      const retiring = agents.find((a) => a.metadata.labels?.['rollplane.io/retiring-agent'] && !a.metadata.deletionTimestamp);
      if (retiring) retiringSeen.add(retiring.metadata.name);
      if (!agents.some(isReadyPod)) violations.push(`rv ${event.object.metadata.resourceVersion}: no Ready agent on sim-node-1`);
    });
    try {
      const rollout = await harness.bump({ mode: 'SURGE' });
      const done = await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED']);
      expect(done.state).toBe('SUCCEEDED');
      expect(violations).toEqual([]);
      expect(maxAgents).toBe(2); // old and new side by side
      expect(retiringSeen.size).toBe(1);
      expect(harness.runtime.queries.getSet(DS_NS, DS_NAME)!.nodes[0]!.retiringPod).toBeNull();
      const agents = agentsByNode(harness.pods()).get('sim-node-1')!;
      expect(agents.map(agentImage)).toEqual([NEW_IMAGE]);
      expect(agents[0]!.metadata.ownerReferences?.[0]?.name).toBe(DS_NAME);
      const [event] = await harness.events.listAfter({ rolloutId: rollout.id, types: [EventType.NodeAgentReplaced] }, undefined, 10);
      expect(event!.payload).toMatchObject({ node: 'sim-node-1', oldImage: OLD_IMAGE, newImage: NEW_IMAGE, peerPodsRestarted: 2 });
      expect(harness.daemonSet().spec.updateStrategy).toEqual({ type: 'OnDelete' });
    } finally {
      unsubscribe();
    }
  });
});

describe('node-agent rollout failures, abort and rollback', () => {
  it('stops on the first node with a bad image; rollback leaves every node with a Ready agent on the old image', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    const rollout = await harness.bump({ image: BAD_IMAGE });
    const failed = await harness.waitForState(rollout.id, ['FAILED', 'SUCCEEDED']);
    expect(failed.state).toBe('FAILED');
    const targets = await harness.rollouts.allTargets(rollout.id);
    expect(targets.map((t) => t.state)).toEqual(['FAILED', 'CANCELLED', 'CANCELLED']);
    expect(targets[0]!.error).toMatch(/ImagePullBackOff/);
    let byNode = agentsByNode(harness.pods());
    expect(agentImage(byNode.get('sim-node-1')![0]!)).toBe(BAD_IMAGE);
    expect(byNode.get('sim-node-2')!.map(agentImage)).toEqual([OLD_IMAGE]);
    expect(byNode.get('sim-node-3')!.map(agentImage)).toEqual([OLD_IMAGE]);

    const rollback = await harness.engine.rollback(rollout.id);
    const back = await harness.waitForState(rollback.rollout.id, ['SUCCEEDED', 'FAILED']);
    expect(back.state).toBe('SUCCEEDED');
    expect((await harness.rollouts.get(rollout.id))!.state).toBe('ROLLED_BACK');
    byNode = agentsByNode(harness.pods());
    for (const node of NODES) {
      expect(byNode.get(node)!.map(agentImage)).toEqual([OLD_IMAGE]);
      expect(isReadyPod(byNode.get(node)![0]!)).toBe(true);
    }
    expect(harness.daemonSet().spec.template.spec.containers[0].image).toBe(OLD_IMAGE);
    expect(harness.daemonSet().spec.updateStrategy).toEqual({ type: 'OnDelete' });
  });

  it('SURGE with a bad image keeps the old agent serving the node; rollback hands over back to the old image', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    const rollout = await harness.bump({ image: BAD_IMAGE, mode: 'SURGE' });
    expect((await harness.waitForState(rollout.id, ['FAILED', 'SUCCEEDED'])).state).toBe('FAILED');
    // The first node runs both: the new agent in ImagePullBackOff and the retiring old one, still Ready.
    expect(nodesWithoutReadyAgent(harness, NODES)).toEqual([]);
    const first = agentsByNode(harness.pods()).get('sim-node-1')!;
    expect(first.map(agentImage).sort()).toEqual([BAD_IMAGE, OLD_IMAGE].sort());

    const rollback = await harness.engine.rollback(rollout.id);
    expect((await harness.waitForState(rollback.rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    await harness.waitFor('the retiring agent gone', () => harness.pods().every((p) => !p.metadata.labels?.['rollplane.io/retiring-agent']));
    const byNode = agentsByNode(harness.pods());
    for (const node of NODES) {
      expect(byNode.get(node)!.map(agentImage)).toEqual([OLD_IMAGE]);
      expect(isReadyPod(byNode.get(node)![0]!)).toBe(true);
      expect(byNode.get(node)![0]!.metadata.ownerReferences?.[0]?.name).toBe(DS_NAME);
    }
  });

  it('abort lets the admitted node finish, cancels the rest; every node keeps a Ready agent; rollback reverts', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    const rollout = await harness.bump({});
    await harness.waitFor(
      'the first node replaced',
      async () => (await harness.events.listAfter({ rolloutId: rollout.id, types: [EventType.NodeAgentReplaced] }, undefined, 10)).length >= 1,
    );
    await harness.rollouts.abort(rollout.id, 'test');
    const aborted = await harness.waitForState(rollout.id, ['ABORTED']);
    expect(aborted.state).toBe('ABORTED');
    // An admitted node finishes after the abort (on a loaded machine a second one may have been admitted before it).
    const targets = await harness.waitFor('the admitted nodes finished', async () => {
      const all = await harness.rollouts.allTargets(rollout.id);
      return all.some((t) => t.state === 'PROGRESSING') ? undefined : all;
    });
    expect(targets[0]!.state).toBe('SUCCEEDED');
    expect(targets.filter((t) => t.state === 'CANCELLED').length).toBeGreaterThanOrEqual(1);
    await harness.waitFor('every node with a Ready agent', () => nodesWithoutReadyAgent(harness, NODES).length === 0);
    const changed = targets.filter((t) => t.state === 'SUCCEEDED').map((t) => t.name);
    const byNode = agentsByNode(harness.pods());
    for (const node of NODES) expect(byNode.get(node)!.map(agentImage)).toEqual([changed.includes(node) ? NEW_IMAGE : OLD_IMAGE]);
    // The template keeps the new image: the nodes left on the old one are drift.
    const drift = await harness.runtime.queries.driftItems();
    expect(drift.map((d) => [d.kind, d.namespace, d.name, d.desiredVersion, d.runningVersion])).toEqual(
      NODES.filter((n) => !changed.includes(n)).map((n) => ['NODE_AGENT', '', n, NEW_IMAGE, OLD_IMAGE]),
    );

    const rollback = await harness.engine.rollback(rollout.id);
    expect((await harness.waitForState(rollback.rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    const after = agentsByNode(harness.pods());
    for (const node of NODES) {
      expect(after.get(node)!.map(agentImage)).toEqual([OLD_IMAGE]);
      expect(isReadyPod(after.get(node)![0]!)).toBe(true);
    }
  });
});

describe('node-agent rollout across a restart of rollplane', () => {
  it('resumes at the node it was on: the gate opens when rollplane is back, and no node is replaced twice', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    const created: string[] = [];
    let stopping: Promise<void> | undefined;
    const unsubscribe = harness.sim.store.subscribe((event: StoreEvent) => {
      const pod = event.object;
      if (event.type !== 'ADDED' || event.resource.plural !== 'pods' || pod.metadata.namespace !== DS_NS) return;
      created.push(pod.spec.nodeName);
      // rollplane "dies" the moment the DaemonSet starts the second node's new agent.
      if (created.length === 2 && !stopping) stopping = harness.stopService();
    });
    try {
      const rollout = await harness.bump({});
      await harness.waitFor('rollplane stopped', () => stopping !== undefined);
      await stopping;
      // Rollplane is stopped (its manager and workers have returned). Wait until the simulator has taken the second
      // node's new agent as far as it can alone, its containers Ready, and has nothing left queued: the pod's Ready
      // condition now depends on the readiness gate only, which nothing but rollplane opens.
      await harness.waitFor("the second node's new agent with its containers Ready", () =>
        agentsByNode(harness.pods())
          .get('sim-node-2')
          ?.some(
            (p) =>
              agentImage(p) === NEW_IMAGE &&
              p.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'ContainersReady' && c.status === 'True'),
          ),
      );
      await harness.sim.behaviour!.idle();
      // While rollplane is away nothing opens the gate: the second node's new agent runs but is not Ready.
      const second = agentsByNode(harness.pods()).get('sim-node-2')!;
      expect(second.map(agentImage)).toEqual([NEW_IMAGE]);
      expect(isReadyPod(second[0]!)).toBe(false);
      expect(agentsByNode(harness.pods()).get('sim-node-3')!.map(agentImage)).toEqual([OLD_IMAGE]);

      await harness.startService();
      const done = await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED']);
      expect(done.state).toBe('SUCCEEDED');
      expect(created).toEqual(['sim-node-1', 'sim-node-2', 'sim-node-3']);
      expect(nodesWithoutReadyAgent(harness, NODES)).toEqual([]);
      const replaced = await harness.events.listAfter({ rolloutId: rollout.id, types: [EventType.NodeAgentReplaced] }, undefined, 100);
      expect(replaced.map((e) => e.payload.node)).toEqual(NODES);
    } finally {
      unsubscribe();
    }
  });
});

describe('node-agent DaemonSet strategy', () => {
  it('restores an original RollingUpdate strategy and template (no readiness gate left) without the DaemonSet replacing any agent again', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    const type = harness.sim.store.resourceType('apps', 'daemonsets')!;
    const ds = harness.daemonSet();
    harness.sim.store.update(type, { ...ds, spec: { ...ds.spec, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } } } });
    const originalTemplate = structuredClone(harness.daemonSet().spec.template);
    const rollout = await harness.bump({ minReadySeconds: 0 });
    expect((await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    expect(harness.daemonSet().spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
    // The user's template, with only the image changed: no readiness gate left behind, no rollplane annotation.
    originalTemplate.spec.containers[0].image = NEW_IMAGE;
    expect(harness.daemonSet().spec.template).toEqual(originalTemplate);
    expect(Object.keys(harness.daemonSet().metadata.annotations ?? {}).filter((k) => k.startsWith('rollplane.io/'))).toEqual([]);
    // The DaemonSet controller has seen the restored strategy and counts every agent as updated: it replaces none.
    const names = () =>
      [...agentsByNode(harness.pods()).values()]
        .flat()
        .map((p) => p.metadata.name)
        .sort();
    const before = names();
    await harness.waitFor('the DaemonSet to observe the restored strategy', () => {
      const d = harness.daemonSet();
      return d.status?.observedGeneration === d.metadata.generation && d.status?.updatedNumberScheduled === 3 && d.status?.numberAvailable === 3;
    });
    expect(names()).toEqual(before);
    // An agent that dies after the rollout comes back from the user's template: no gate, Ready on its own.
    const pods = harness.sim.store.resourceType('', 'pods')!;
    const victim = agentsByNode(harness.pods()).get('sim-node-2')![0]!;
    harness.sim.store.delete(pods, DS_NS, victim.metadata.name, { gracePeriodSeconds: 0 });
    const replacement = await harness.waitFor('a new Ready agent on sim-node-2', () =>
      agentsByNode(harness.pods())
        .get('sim-node-2')
        ?.find((p) => p.metadata.name !== victim.metadata.name && isReadyPod(p)),
    );
    expect(replacement.spec.readinessGates ?? []).toEqual([]);
  });

  it('takes out a readiness gate an earlier rollplane left in a RollingUpdate template, with the image change', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    const type = harness.sim.store.resourceType('apps', 'daemonsets')!;
    const ds = harness.daemonSet();
    const leftover = {
      ...ds,
      metadata: { ...ds.metadata, annotations: { ...ds.metadata.annotations, 'rollplane.io/readiness-gate-added': 'true' } },
      spec: {
        ...ds.spec,
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
        template: { ...ds.spec.template, spec: { ...ds.spec.template.spec, readinessGates: [{ conditionType: 'rollplane.io/peer-pods-ready' }] } },
      },
    };
    harness.sim.store.update(type, leftover);
    // The leftover gate made the DaemonSet replace every agent; rollplane's gate controller opens their gates.
    await harness.waitFor('every agent on the gated template and Ready', () => {
      const d = harness.daemonSet();
      return d.status?.observedGeneration === d.metadata.generation && d.status?.updatedNumberScheduled === 3 && d.status?.numberReady === 3;
    });
    const rollout = await harness.bump({ minReadySeconds: 0 });
    expect((await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    const after = harness.daemonSet();
    expect(after.spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
    expect(after.spec.template.spec.readinessGates).toBeUndefined();
    expect(after.metadata.annotations?.['rollplane.io/readiness-gate-added']).toBeUndefined();
    for (const agents of agentsByNode(harness.pods()).values()) for (const p of agents) expect(p.spec.readinessGates ?? []).toEqual([]);
  });
});

describe('node-agent rollout, SURGE on three nodes', () => {
  it('follows the canary-first order and never leaves any node without a Ready agent', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    const violations: string[] = [];
    const surged = new Set<string>();
    const order: string[] = [];
    const unsubscribe = harness.sim.store.subscribe((event: StoreEvent) => {
      const down = nodesWithoutReadyAgent(harness, NODES);
      if (down.length > 0) violations.push(`rv ${event.object.metadata.resourceVersion}: ${down.join(', ')} without a Ready agent`);
      for (const [node, agents] of agentsByNode(harness.pods())) if (agents.filter((a) => !a.metadata.deletionTimestamp).length === 2) surged.add(node);
      const pod = event.object;
      if (event.type === 'ADDED' && event.resource.plural === 'pods' && pod.metadata.namespace === DS_NS && agentImage(pod) === NEW_IMAGE)
        order.push(pod.spec.nodeName);
    });
    try {
      const rollout = await harness.bump({ mode: 'SURGE', canaryNodeSelector: 'kubernetes.io/hostname=sim-node-3' });
      expect((await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      expect(violations).toEqual([]);
      expect(order).toEqual(['sim-node-3', 'sim-node-1', 'sim-node-2']);
      expect([...surged].sort()).toEqual(NODES);
      const byNode = agentsByNode(harness.pods());
      for (const node of NODES) expect(byNode.get(node)!.map(agentImage)).toEqual([NEW_IMAGE]);
      // No retiring agent is left behind.
      expect(harness.pods().filter((p) => p.metadata.labels?.['rollplane.io/retiring-agent'])).toEqual([]);
    } finally {
      unsubscribe();
    }
  });
});

describe('node-agent rollout pause and resume', () => {
  it('starts no node while paused and finishes after resume', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    const started: string[] = [];
    const unsubscribe = harness.sim.store.subscribe((event: StoreEvent) => {
      const pod = event.object;
      if (event.type === 'ADDED' && event.resource.plural === 'pods' && pod.metadata.namespace === DS_NS && agentImage(pod) === NEW_IMAGE)
        started.push(pod.spec.nodeName);
    });
    try {
      const rollout = await harness.bump({});
      await harness.waitFor('the first node started', () => started.length >= 1);
      await harness.rollouts.pause(rollout.id, 'looking at the canary');
      // The admitted node finishes; nothing else starts.
      await harness.waitFor(
        'the admitted node done',
        async () => (await harness.rollouts.allTargets(rollout.id)).filter((t) => t.state === 'SUCCEEDED').length >= 1,
      );
      const whilePaused = started.length;
      // The set shows who drives it and what it will get back.
      const set = harness.runtime.queries.getSet(DS_NS, DS_NAME)!;
      expect(set.drivenBy).toBe(rollout.id);
      expect(set.updateStrategy).toEqual({ type: 'OnDelete' });
      expect(set.savedUpdateStrategy).toEqual({ type: 'OnDelete' });
      // Quiet: the controllers have handled every event up to now and hold no key, so a paused rollout that still
      // admitted nodes would have started one by now.
      await waitQuiet(harness.manager.manager, harness.sim.store);
      expect(started.length).toBe(whilePaused);
      expect((await harness.rollouts.get(rollout.id))!.state).toBe('PAUSED');
      await harness.rollouts.resume(rollout.id);
      expect((await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      expect(started).toEqual(NODES);
      expect(harness.runtime.queries.getSet(DS_NS, DS_NAME)).toMatchObject({ drivenBy: null, savedUpdateStrategy: null });
    } finally {
      unsubscribe();
    }
  });
});

describe('node-agent minReadySeconds', () => {
  it('counts a node done only once its new agent has stayed Ready that long', async () => {
    h = await startHarness({ fleet: 'nodes=1', sim: { delays: DELAYS } });
    const harness = h;
    const rollout = await harness.bump({ minReadySeconds: 1 });
    expect((await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
    const [event] = await harness.events.listAfter({ rolloutId: rollout.id, types: [EventType.NodeAgentReplaced] }, undefined, 10);
    const agent = agentsByNode(harness.pods()).get('sim-node-1')![0]!;
    const readySince = Date.parse(agent.status.conditions.find((c: { type: string }) => c.type === 'Ready').lastTransitionTime);
    expect(event!.createdAt.getTime() - readySince).toBeGreaterThanOrEqual(1000);
  });
});

describe('node-agent rollout with a node down', () => {
  it('takes no agent away while another node has none, and continues once that node is back', async () => {
    h = await startHarness({ sim: { delays: DELAYS } });
    const harness = h;
    harness.sim.nodes!.crash('sim-node-3');
    await harness.waitFor('sim-node-3 agent NotReady', () => nodesWithoutReadyAgent(harness, NODES).includes('sim-node-3'));
    const violations: string[] = [];
    const unsubscribe = harness.sim.store.subscribe(() => {
      const down = nodesWithoutReadyAgent(harness, NODES);
      if (down.length > 1) violations.push(down.join(', '));
    });
    try {
      const rollout = await harness.bump({});
      await harness.waitFor('the rollout started', async () => (await harness.rollouts.get(rollout.id))?.state === 'PROGRESSING');
      // Quiet, and the rollout (which re-checks its nodes on a timer) has reconciled once more since: it saw sim-node-3
      // down and took no agent away; had it admitted a node, that target would no longer be PENDING.
      await waitQuiet(harness.manager.manager, harness.sim.store, ['rollouts']);
      expect((await harness.rollouts.allTargets(rollout.id)).map((t) => t.state)).toEqual(['PENDING', 'PENDING', 'PENDING']);
      harness.sim.nodes!.recover('sim-node-3');
      expect((await harness.waitForState(rollout.id, ['SUCCEEDED', 'FAILED'])).state).toBe('SUCCEEDED');
      expect(violations).toEqual([]);
      for (const node of NODES) expect(agentsByNode(harness.pods()).get(node)!.map(agentImage)).toEqual([NEW_IMAGE]);
    } finally {
      unsubscribe();
    }
  });
});
