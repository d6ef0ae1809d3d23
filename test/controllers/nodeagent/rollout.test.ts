import { afterEach, describe, expect, it } from 'vitest';
import { EventType } from '../../../src/domain/events.js';
import type { StoreEvent } from '../../../src/sim/types.js';
import {
  agentImage,
  agentsByNode,
  BAD_IMAGE,
  DS_NAME,
  DS_NS,
  isReadyPod,
  NEW_IMAGE,
  OLD_IMAGE,
  peerPodsOn,
  startHarness,
  type Harness,
} from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const NODES = ['sim-node-1', 'sim-node-2', 'sim-node-3'];

/** Nodes that have no Ready agent right now, from the simulator's store. */
function nodesWithoutReadyAgent(harness: Harness, nodes: readonly string[]): string[] {
  const byNode = agentsByNode(harness.pods());
  return nodes.filter((n) => !(byNode.get(n) ?? []).some(isReadyPod));
}

describe('node-agent rollout, NODE_BY_NODE on three nodes', () => {
  it('never has two nodes without a Ready agent and starts a node only after the previous one is back', async () => {
    h = await startHarness();
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
      expect(harness.runtime.queries.drift()).toEqual([]);
    } finally {
      unsubscribe();
    }
  });
});
