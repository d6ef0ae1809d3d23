import { KIND_CONTRACTS } from '../../../../src/kinds/index.js';
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { agentName, splitNetworkName } from '../../../../src/kinds/agentPool/controller/names.js';
import { safeAgentName } from '../../../../src/sim/behaviour/upstream/vmDhcpChart.js';
import type { AdmittedTarget } from '../../../../src/domain/ports.js';
import type { Rollout } from '../../../../src/domain/RolloutService.js';
import { AGENT_NS, condition, startHarness, type Harness } from './harness.js';
import { defaultStrategy } from '../../../../src/domain/kinds/index.js';
import { notQuiet } from '../../../helpers/quiet.js';

const NEW = 'rancher/harvester-vm-dhcp-agent:v0.3.1';

function rollout(id = 'ro_test'): Rollout {
  const now = new Date();
  return {
    id,
    kind: 'AGENT_POOL',
    state: 'PROGRESSING',
    fromVersion: null,
    toVersion: NEW,
    selector: {},
    strategy: defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
    cause: {},
    idempotencyKey: null,
    rollbackOfId: null,
    message: null,
    engineState: {},
    createdAt: now,
    updatedAt: now,
    startedAt: now,
    finishedAt: null,
  } as Rollout;
}

function target(name: string, image = NEW): AdmittedTarget {
  return { rolloutId: 'ro_test', kind: 'AGENT_POOL', namespace: 'default', name, ordinal: 0, fromVersion: null, toVersion: image, admittedAt: new Date() };
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('agent pool reconciler, Pod mode', () => {
  it('names agents as upstream, hashing long names', () => {
    expect(agentName('default', 'net-48')).toBe('default-net-48-agent');
    const base = 'a-very-long-namespace-name-for-pools-and-an-even-longer-pool-name-here';
    const long = agentName('a-very-long-namespace-name-for-pools', 'and-an-even-longer-pool-name-here');
    expect(long).toBe(`${base.slice(0, 51)}-${createHash('sha256').update(base).digest('hex').slice(0, 5)}-agent`);
    expect(long.length).toBeLessThanOrEqual(63);
    // Upstream's second branch: the 51st character is a `-`, so the cut keeps 50 characters and 6 digest digits.
    const dashBase = `${'n'.repeat(20)}-${'p'.repeat(29)}-tail-of-a-long-pool-name`;
    expect(dashBase[50]).toBe('-');
    const dashed = agentName('n'.repeat(20), `${'p'.repeat(29)}-tail-of-a-long-pool-name`);
    expect(dashed).toBe(`${dashBase.slice(0, 50)}-${createHash('sha256').update(dashBase).digest('hex').slice(0, 6)}-agent`);
    expect(dashed.length).toBeLessThanOrEqual(63);
  });

  it('gives every pool the same agent name as the simulated upstream controller', () => {
    for (let ns = 1; ns <= 40; ns++) {
      for (const name of ['a', 'x'.repeat(30), `${'y'.repeat(28)}-z`, `${'q'.repeat(ns)}.w-${'e'.repeat(40 - ns)}`]) {
        const namespace = `ns${'-'.repeat(ns % 3)}${'m'.repeat(ns)}`;
        expect(agentName(namespace, name), `${namespace}/${name}`).toBe(safeAgentName(namespace, name));
      }
    }
  });

  it('splits networkName at the last slash, as upstream does', () => {
    expect(splitNetworkName('default/vlan/7', 'pools')).toEqual({ namespace: 'default/vlan', name: '7' });
    expect(splitNetworkName('harvester-public/vlan7', 'pools')).toEqual({ namespace: 'harvester-public', name: 'vlan7' });
    expect(splitNetworkName('vlan7', 'pools')).toEqual({ namespace: 'pools', name: 'vlan7' });
  });

  it('leaves a converged fleet alone: no pod is recreated and the configured image does not overwrite recorded ones', async () => {
    h = await startHarness({ agent: { agentImage: NEW } });
    const before = h.pod(agentName('default', 'net-1'))!.metadata.uid;
    // Every pool was reconciled at start (the controller resyncs its sources) and nothing is left to do.
    // Quiet: every informer has seen the simulator's latest events and no key is queued, in progress or delayed, so
    // whatever the controller would do about the converged fleet (recreate a pod, rewrite an image) has been done.
    await h.waitFor(
      'pools reconciled and the controllers quiet',
      () => h!.runtime.controller.queue !== undefined && notQuiet(h!.manager.manager, h!.sim.store) === undefined,
    );
    expect(h.writes).toEqual({ create: 0, update: 0, patch: 0, delete: 0 });
    expect(h.pod(agentName('default', 'net-1'))!.metadata.uid).toBe(before);
    expect(h.pool('net-1')!.status.agentPodRef.image).toBe('rancher/harvester-vm-dhcp-agent:v0.3.0');
    expect(h.writes.delete).toBe(0);
    expect(h.writes.create).toBe(0);
  });

  it('recreates the agent after admission, records new uid and image, and emits one AgentRecreated event', async () => {
    h = await startHarness();
    const podName = agentName('default', 'net-2');
    const oldUid = h.pod(podName)!.metadata.uid;
    const writesBefore = { ...h.writes };
    await h.runtime.driver.admit(target('net-2'), rollout(), new AbortController().signal);
    const pool = await h.waitFor('net-2 on the new agent', () => {
      const p = h!.pool('net-2');
      const pod = h!.pod(podName);
      return (
        p?.status.agentPodRef.uid === pod?.metadata.uid &&
        pod?.metadata.uid !== oldUid &&
        condition(p, 'AgentReady')?.status === 'True' &&
        !h!.manager.inFlight.get('AGENT_POOL', 'default', 'net-2') &&
        p
      );
    });
    expect(pool.status.agentPodRef).toMatchObject({ namespace: AGENT_NS, name: podName, image: NEW });
    const pod = h.pod(podName)!;
    expect(pod.spec.containers[0].image).toBe(NEW);
    expect(pod.spec.initContainers[0].image).toBe(NEW);
    expect(pod.spec.containers[0].args).toEqual(['--ippool-ref', 'default/net-2']);
    expect(pod.metadata.labels).toMatchObject({
      'network.harvesterhci.io/vm-dhcp-controller': 'agent',
      'network.harvesterhci.io/ippool-namespace': 'default',
      'network.harvesterhci.io/ippool-name': 'net-2',
    });
    expect(JSON.parse(pod.metadata.annotations!['k8s.v1.cni.cncf.io/networks']!)).toEqual([{ namespace: 'default', name: 'net-2', interface: 'eth1' }]);
    expect(pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]).toEqual({
      key: 'network.harvesterhci.io/mgmt',
      operator: 'In',
      values: ['true'],
    });
    // Other pools untouched.
    expect(h.pool('net-1')!.status.agentPodRef.image).toBe('rancher/harvester-vm-dhcp-agent:v0.3.0');

    const events = await h.events.listAfter({ types: ['AgentRecreated'] }, 0, 10);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ rolloutId: 'ro_test', namespace: 'default', name: 'net-2' });
    expect(events[0]!.payload).toMatchObject({
      pool: 'default/net-2',
      oldImage: 'rancher/harvester-vm-dhcp-agent:v0.3.0',
      newImage: NEW,
      oldPodUid: oldUid,
      newPodUid: pod.metadata.uid,
      reason: 'drift',
    });
    expect(typeof events[0]!.payload.seconds).toBe('number');
    expect(await h.runtime.driver.observe(target('net-2'), rollout())).toEqual({ phase: 'succeeded' });
    const metrics = await h.registry.getSingleMetricAsString('rollplane_agent_recreations_total');
    expect(metrics).toContain('reason="drift"} 1');
    const used = {
      create: h.writes.create - writesBefore.create,
      delete: h.writes.delete - writesBefore.delete,
      update: h.writes.update - writesBefore.update,
      patch: h.writes.patch - writesBefore.patch,
    };
    // Six writes per recreated agent: admission, delete, create, and three status writes (purged, new uid, ready).
    expect(used).toEqual({ create: 1, delete: 1, update: 4, patch: 0 });
  });

  it('keeps held pools on their image: the driver does not write and reports the hold', async () => {
    h = await startHarness();
    const type = h.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    const pool = structuredClone(h.pool('net-1')!);
    pool.metadata.annotations = { 'network.harvesterhci.io/hold-ippool-agent-upgrade': '' };
    h.sim.store.update(type, pool);
    await h.waitFor(
      'cache sees the hold',
      () => h!.runtime.informers.pools.get('default', 'net-1')?.metadata?.annotations?.['network.harvesterhci.io/hold-ippool-agent-upgrade'] !== undefined,
    );
    await h.runtime.driver.admit(target('net-1'), rollout(), new AbortController().signal);
    expect(h.pool('net-1')!.status.agentPodRef.image).toBe('rancher/harvester-vm-dhcp-agent:v0.3.0');
    expect(await h.runtime.driver.observe(target('net-1'), rollout())).toMatchObject({ phase: 'failed' });
  });

  it('recreates a deleted agent and handles a uid mismatch', async () => {
    h = await startHarness();
    const podType = h.sim.store.resourceType('', 'pods')!;
    const name = agentName('default', 'net-3');
    const original = h.pod(name)!;
    h.sim.store.delete(podType, AGENT_NS, name, { gracePeriodSeconds: 0 });
    const recreated = await h.waitFor('agent recreated', () => {
      const pod = h!.pod(name);
      return (
        pod &&
        pod.metadata.uid !== original.metadata.uid &&
        h!.pool('net-3')!.status.agentPodRef.uid === pod.metadata.uid &&
        condition(h!.pool('net-3'), 'AgentReady')?.status === 'True' &&
        pod
      );
    });
    expect(recreated.spec.containers[0].image).toBe('rancher/harvester-vm-dhcp-agent:v0.3.0');

    // Someone replaces the pod behind the controller's back: uid mismatch → purged → recreated.
    const impostor = structuredClone(recreated);
    h.sim.store.delete(podType, AGENT_NS, name, { gracePeriodSeconds: 0 });
    delete impostor.metadata.uid;
    delete impostor.metadata.resourceVersion;
    const foreign = h.sim.store.create(podType, impostor);
    await h.waitFor('impostor replaced', () => {
      const pod = h!.pod(name);
      const pool = h!.pool('net-3')!;
      return (
        pod &&
        pod.metadata.uid !== foreign.metadata.uid &&
        pod.metadata.uid !== recreated.metadata.uid &&
        pool.status.agentPodRef.uid === pod.metadata.uid &&
        condition(pool, 'AgentReady')?.status === 'True'
      );
    });
    const reasons = (await h.events.listAfter({ types: ['AgentRecreated'], name: 'net-3' }, 0, 10)).map((e) => e.payload.reason);
    expect(reasons.length).toBeGreaterThanOrEqual(2);
    expect(reasons[0]).toBe('missing');
  });

  it('stops the agent of a paused pool and deletes the agent of a deleted pool', async () => {
    h = await startHarness();
    const type = h.sim.store.resourceType('network.harvesterhci.io', 'ippools')!;
    const pool = structuredClone(h.pool('net-1')!);
    pool.spec.paused = true;
    h.sim.store.update(type, pool);
    const stopped = await h.waitFor('paused', () => {
      const p = h!.pool('net-1');
      return condition(p, 'Stopped')?.status === 'True' && !h!.pod(agentName('default', 'net-1')) && p;
    });
    expect(stopped.status.agentPodRef).toBeUndefined();
    // As upstream writes a paused pool: all three status handlers fail with the same error.
    for (const type of ['Registered', 'CacheReady', 'AgentReady']) {
      expect(condition(stopped, type)).toMatchObject({ status: 'False', reason: 'Error', message: 'ippool default/net-1 was administratively disabled' });
    }

    h.sim.store.delete(type, 'default', 'net-2');
    await h.waitFor('agent of deleted pool gone', () => !h!.pod(agentName('default', 'net-2')));
  });

  it('reports a missing NAD as a Registered error with the text', async () => {
    h = await startHarness();
    const nadType = h.sim.store.resourceType('k8s.cni.cncf.io', 'network-attachment-definitions')!;
    h.sim.store.delete(nadType, 'default', 'net-1');
    const pool = await h.waitFor('Registered False', () => {
      const p = h!.pool('net-1');
      return condition(p, 'Registered')?.status === 'False' && p;
    });
    // Upstream's text: the API server's NotFound names the object by its name only.
    expect(condition(pool, 'Registered')).toMatchObject({ reason: 'Error', message: 'network-attachment-definitions.k8s.cni.cncf.io "net-1" not found' });
  });
});
