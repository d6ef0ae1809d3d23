import { afterEach, describe, expect, it } from 'vitest';
import { ManualScheduler } from '../../../src/sim/behaviour/index.js';
import { Resources } from '../../../src/sim/store/resources.js';
import type { KubeObject } from '../../../src/sim/types.js';
import { activePods, type Harness, isReady, patchSpec, podsWith, setImage, startHarness, template } from './harness.js';

let h: Harness | undefined;
afterEach(() => {
  h?.stop();
  h = undefined;
});

const image = (p: KubeObject) => p.spec.containers[0].image as string;

describe('Deployment controller', () => {
  function deployment(name: string, replicas: number, strategy: Record<string, unknown>, extra: Record<string, unknown> = {}): KubeObject {
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: 'default' },
      spec: { replicas, selector: { matchLabels: { app: name } }, strategy, template: template({ app: name }, 'app:v1'), ...extra },
    };
  }

  /** Rolls app:v1 → app:v2 and records, at every store event, available and total (non-terminating) pods. */
  async function roll(name: string, replicas: number, strategy: Record<string, unknown>, delays = {}) {
    h = startHarness({ nodes: 3, delays });
    h.store.create(Resources.deployments, deployment(name, replicas, strategy));
    const status = () => h!.store.get(Resources.deployments, 'default', name)!.status;
    await h.until(() => status()?.availableReplicas === replicas, 'the first version to be available');
    const seen = { minAvailable: Infinity, maxTotal: 0, events: 0 };
    h.onEvent(() => {
      const pods = activePods(podsWith(h!.store, 'default', { app: name }));
      seen.minAvailable = Math.min(seen.minAvailable, pods.filter(isReady).length);
      seen.maxTotal = Math.max(seen.maxTotal, pods.length);
      seen.events++;
    });
    setImage(h.store, Resources.deployments, 'default', name, 'app:v2');
    await h.until(() => {
      const s = status();
      return s.observedGeneration === 2 && s.updatedReplicas === replicas && s.replicas === replicas && s.availableReplicas === replicas;
    }, 'the rollout to finish');
    await h.until(() => podsWith(h!.store, 'default', { app: name }).length === replicas, 'old pods to be gone');
    return { seen, status: status(), pods: podsWith(h.store, 'default', { app: name }) };
  }

  it('RollingUpdate maxUnavailable=1 maxSurge=0: never fewer than n-1 available, never more than n pods', async () => {
    const { seen, status, pods } = await roll('web', 5, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } });
    expect(seen.minAvailable).toBe(4);
    expect(seen.maxTotal).toBe(5);
    expect(pods.map(image)).toEqual(Array(5).fill('app:v2'));
    expect(status).toMatchObject({ replicas: 5, updatedReplicas: 5, readyReplicas: 5, availableReplicas: 5, unavailableReplicas: 0 });
    const progressing = status.conditions.find((c: { type: string }) => c.type === 'Progressing');
    expect(progressing).toMatchObject({ status: 'True', reason: 'NewReplicaSetAvailable' });
    expect(status.conditions.find((c: { type: string }) => c.type === 'Available')).toMatchObject({ status: 'True', reason: 'MinimumReplicasAvailable' });
  });

  it('RollingUpdate maxSurge=2 maxUnavailable=0: never below n available, never above n+2 pods', async () => {
    const { seen } = await roll('surge', 4, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 2 } });
    expect(seen.minAvailable).toBe(4);
    expect(seen.maxTotal).toBe(6);
  });

  it('rounds percentages as Kubernetes: 25% of 10 is a surge of 3 (up) and 2 unavailable (down)', async () => {
    const { seen } = await roll('pct', 10, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } });
    expect(seen.maxTotal).toBe(13);
    expect(seen.minAvailable).toBe(8);
  });

  it('keeps both bounds with real (small) delays interleaving kubelet and controllers', async () => {
    const { seen } = await roll(
      'slowroll',
      6,
      { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2, maxSurge: 1 } },
      { podStartMs: 3, podReadyMs: 5, podTerminateMs: 4, controllerMs: 2 },
    );
    expect(seen.minAvailable).toBeGreaterThanOrEqual(4);
    expect(seen.maxTotal).toBeLessThanOrEqual(7);
  });

  it('treats maxSurge=0 with maxUnavailable=0 as one unavailable', async () => {
    const { seen } = await roll('zero', 3, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 0 } });
    expect(seen.minAvailable).toBe(2);
    expect(seen.maxTotal).toBe(3);
  });

  it('Recreate: no new pod exists while any old pod (even terminating) remains', async () => {
    h = startHarness({ nodes: 2 });
    h.store.create(Resources.deployments, deployment('batch', 3, { type: 'Recreate' }));
    const status = () => h!.store.get(Resources.deployments, 'default', 'batch')!.status;
    await h.until(() => status()?.availableReplicas === 3, 'v1 available');
    let overlap = false;
    h.onEvent(() => {
      const pods = podsWith(h!.store, 'default', { app: 'batch' });
      if (pods.some((p) => image(p) === 'app:v1') && pods.some((p) => image(p) === 'app:v2')) overlap = true;
    });
    setImage(h.store, Resources.deployments, 'default', 'batch', 'app:v2');
    await h.until(() => status().updatedReplicas === 3 && status().availableReplicas === 3 && status().replicas === 3, 'v2 available');
    expect(overlap).toBe(false);
  });

  it('keeps one ReplicaSet per template (pod-template-hash, ownerReferences, revision) and reuses the old one on rollback', async () => {
    h = startHarness({ nodes: 2 });
    const created = h.store.create(Resources.deployments, deployment('rb', 2, { type: 'RollingUpdate' }));
    const done = (img: string) => () => {
      const s = h!.store.get(Resources.deployments, 'default', 'rb')!;
      return (
        s.status?.observedGeneration === s.metadata.generation &&
        s.status?.updatedReplicas === 2 &&
        s.status?.availableReplicas === 2 &&
        s.status?.replicas === 2 &&
        podsWith(h!.store, 'default', { app: 'rb' }).every((p) => image(p) === img)
      );
    };
    await h.until(done('app:v1'), 'v1');
    const [first] = h.store.list(Resources.replicasets, 'default');
    expect(first!.metadata.ownerReferences![0]).toMatchObject({ kind: 'Deployment', name: 'rb', uid: created.metadata.uid, controller: true });
    expect(first!.metadata.name).toBe(`rb-${first!.metadata.labels!['pod-template-hash']}`);
    expect(first!.spec.selector.matchLabels['pod-template-hash']).toBe(first!.metadata.labels!['pod-template-hash']);
    for (const p of podsWith(h.store, 'default', { app: 'rb' }))
      expect(p.metadata.labels!['pod-template-hash']).toBe(first!.metadata.labels!['pod-template-hash']);

    setImage(h.store, Resources.deployments, 'default', 'rb', 'app:v2');
    await h.until(done('app:v2'), 'v2');
    setImage(h.store, Resources.deployments, 'default', 'rb', 'app:v1');
    await h.until(done('app:v1'), 'back to v1');
    const sets = h.store.list(Resources.replicasets, 'default');
    expect(sets).toHaveLength(2);
    const reused = sets.find((rs) => rs.metadata.uid === first!.metadata.uid)!;
    expect(reused.spec.replicas).toBe(2);
    expect(reused.metadata.annotations!['deployment.kubernetes.io/revision']).toBe('3');
    expect(h.store.get(Resources.deployments, 'default', 'rb')!.metadata.annotations!['deployment.kubernetes.io/revision']).toBe('3');
  });

  it('scales, and a deleted Deployment takes its ReplicaSets and pods along', async () => {
    h = startHarness({ nodes: 2 });
    h.store.create(Resources.deployments, deployment('scale', 2, {}));
    await h.until(() => h!.store.get(Resources.deployments, 'default', 'scale')!.status?.availableReplicas === 2, '2 available');
    patchSpec(h.store, Resources.deployments, 'default', 'scale', (spec) => (spec.replicas = 5));
    await h.until(() => h!.store.get(Resources.deployments, 'default', 'scale')!.status?.availableReplicas === 5, '5 available');
    patchSpec(h.store, Resources.deployments, 'default', 'scale', (spec) => (spec.replicas = 1));
    await h.until(() => podsWith(h!.store, 'default', { app: 'scale' }).length === 1, 'scaled down to 1');
    h.store.delete(Resources.deployments, 'default', 'scale');
    await h.until(
      () => podsWith(h!.store, 'default', { app: 'scale' }).length === 0 && h!.store.list(Resources.replicasets, 'default').length === 0,
      'everything gone',
    );
  });

  it('reports ProgressDeadlineExceeded when a rollout stops progressing (bad image), and recovers on rollback', async () => {
    const scheduler = new ManualScheduler();
    h = startHarness({ nodes: 2, scheduler });
    h.store.create(
      Resources.deployments,
      deployment('stuck', 2, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } }, { progressDeadlineSeconds: 30 }),
    );
    const progressing = () =>
      h!.store.get(Resources.deployments, 'default', 'stuck')!.status?.conditions?.find((c: { type: string }) => c.type === 'Progressing');
    await h.until(() => progressing()?.reason === 'NewReplicaSetAvailable', 'v1 complete');
    setImage(h.store, Resources.deployments, 'default', 'stuck', 'app:bad-1');
    await h.until(() => progressing()?.reason === 'ReplicaSetUpdated', 'the rollout to start');
    scheduler.advance(29_000);
    await h.behaviour.idle();
    expect(progressing()?.reason).toBe('ReplicaSetUpdated');
    scheduler.advance(1_000);
    await h.behaviour.idle();
    expect(progressing()).toMatchObject({ status: 'False', reason: 'ProgressDeadlineExceeded' });
    expect(h.store.get(Resources.deployments, 'default', 'stuck')!.status.availableReplicas).toBe(2);
    setImage(h.store, Resources.deployments, 'default', 'stuck', 'app:v1');
    await h.until(
      () => progressing()?.reason === 'NewReplicaSetAvailable' && podsWith(h!.store, 'default', { app: 'stuck' }).length === 2,
      'the rollback to complete',
    );
  });

  it('waits minReadySeconds before counting a pod available', async () => {
    const scheduler = new ManualScheduler();
    h = startHarness({ nodes: 1, scheduler });
    h.store.create(Resources.deployments, deployment('slow', 1, {}, { minReadySeconds: 5 }));
    const available = () => h!.store.get(Resources.deployments, 'default', 'slow')!.status?.availableReplicas;
    await h.until(() => podsWith(h!.store, 'default', { app: 'slow' }).some(isReady), 'ready');
    expect(available()).toBe(0);
    scheduler.advance(4_999);
    await h.behaviour.idle();
    expect(available()).toBe(0);
    scheduler.advance(1);
    await h.behaviour.idle();
    expect(available()).toBe(1);
  });
});

describe('DaemonSet controller', () => {
  function daemonSet(name: string, updateStrategy: Record<string, unknown>, extra: Record<string, unknown> = {}): KubeObject {
    return {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name, namespace: 'default' },
      spec: { selector: { matchLabels: { app: name } }, updateStrategy, template: template({ app: name }, 'agent:v1', extra) },
    };
  }
  const status = (name: string) => h!.store.get(Resources.daemonsets, 'default', name)!.status;

  async function rollDaemonSet(nodes: number, updateStrategy: Record<string, unknown>) {
    h = startHarness({ nodes });
    h.store.create(Resources.daemonsets, daemonSet('agent', updateStrategy));
    await h.until(() => status('agent')?.numberAvailable === nodes, 'v1 on every node');
    const seen = { minAvailableNodes: Infinity, maxPodsOnANode: 0, maxNodesWithTwo: 0 };
    h.onEvent(() => {
      const pods = activePods(podsWith(h!.store, 'default', { app: 'agent' }));
      const perNode = new Map<string, KubeObject[]>();
      for (const p of pods) perNode.set(p.spec.nodeName, [...(perNode.get(p.spec.nodeName) ?? []), p]);
      seen.minAvailableNodes = Math.min(seen.minAvailableNodes, [...perNode.values()].filter((ps) => ps.some(isReady)).length);
      seen.maxPodsOnANode = Math.max(seen.maxPodsOnANode, ...[...perNode.values()].map((ps) => ps.length));
      seen.maxNodesWithTwo = Math.max(seen.maxNodesWithTwo, [...perNode.values()].filter((ps) => ps.length > 1).length);
    });
    setImage(h.store, Resources.daemonsets as typeof Resources.deployments, 'default', 'agent', 'agent:v2');
    await h.until(() => {
      const s = status('agent');
      const pods = podsWith(h!.store, 'default', { app: 'agent' });
      return (
        s.observedGeneration === 2 &&
        s.updatedNumberScheduled === nodes &&
        s.numberAvailable === nodes &&
        pods.length === nodes &&
        pods.every((p) => image(p) === 'agent:v2')
      );
    }, 'the DaemonSet to roll');
    return seen;
  }

  it('puts one pod named <ds>-<5 chars> on every eligible node, with status counts', async () => {
    h = startHarness({ nodes: 4, nodeLabels: (i) => (i < 3 ? { role: 'worker' } : {}) });
    h.store.create(Resources.daemonsets, daemonSet('sel', { type: 'RollingUpdate' }, { nodeSelector: { role: 'worker' } }));
    await h.until(() => status('sel')?.numberAvailable === 3, 'three pods');
    const pods = podsWith(h.store, 'default', { app: 'sel' });
    expect(pods.map((p) => p.spec.nodeName).sort()).toEqual(['node-1', 'node-2', 'node-3']);
    for (const p of pods) {
      expect(p.metadata.name).toMatch(/^sel-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
      expect(p.metadata.labels!['controller-revision-hash']).toBeTruthy();
    }
    expect(status('sel')).toMatchObject({
      desiredNumberScheduled: 3,
      currentNumberScheduled: 3,
      numberReady: 3,
      updatedNumberScheduled: 3,
      numberAvailable: 3,
      numberUnavailable: 0,
      numberMisscheduled: 0,
      observedGeneration: 1,
    });
    const revisions = h.store.list(Resources.controllerrevisions, 'default');
    expect(revisions).toHaveLength(1);
    expect(revisions[0]!.metadata.name).toBe(`sel-${pods[0]!.metadata.labels!['controller-revision-hash']}`);

    const node = structuredClone(h.store.get(Resources.nodes, undefined, 'node-4')!);
    node.metadata.labels!.role = 'worker';
    h.store.update(Resources.nodes, node);
    await h.until(() => status('sel').numberAvailable === 4, 'the newly eligible node to get a pod');
  });

  it('removes the pod from a node that stops matching', async () => {
    h = startHarness({ nodes: 2, nodeLabels: () => ({ role: 'worker' }) });
    h.store.create(Resources.daemonsets, daemonSet('mis', { type: 'RollingUpdate' }, { nodeSelector: { role: 'worker' } }));
    await h.until(() => status('mis')?.numberAvailable === 2, 'two pods');
    const node = structuredClone(h.store.get(Resources.nodes, undefined, 'node-2')!);
    delete node.metadata.labels!.role;
    h.store.update(Resources.nodes, node);
    await h.until(() => podsWith(h!.store, 'default', { app: 'mis' }).length === 1 && status('mis').desiredNumberScheduled === 1, 'node-2 emptied');
    expect(podsWith(h.store, 'default', { app: 'mis' })[0]!.spec.nodeName).toBe('node-1');
  });

  it('RollingUpdate maxUnavailable=1: at most one node without an available agent', async () => {
    const seen = await rollDaemonSet(4, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
    expect(seen.minAvailableNodes).toBe(3);
    expect(seen.maxPodsOnANode).toBe(1);
  });

  it('RollingUpdate maxUnavailable=50% of 4: two nodes at a time', async () => {
    const seen = await rollDaemonSet(4, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '50%' } });
    expect(seen.minAvailableNodes).toBe(2);
  });

  it('RollingUpdate maxSurge=1 maxUnavailable=0: the new pod starts beside the old, one node at a time, none unavailable', async () => {
    const seen = await rollDaemonSet(3, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    expect(seen.minAvailableNodes).toBe(3);
    expect(seen.maxPodsOnANode).toBe(2);
    expect(seen.maxNodesWithTwo).toBe(1);
  });

  it('surge works on a single-node cluster', async () => {
    const seen = await rollDaemonSet(1, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    expect(seen.minAvailableNodes).toBe(1);
  });

  it('rolls a node agent with maxSurge=1 non-disruptively: each new agent waits for its restarted peer pods', async () => {
    h = startHarness({ nodes: 2 });
    const labels = { app: 'caa', 'rollplane.io/node-agent': 'true' };
    h.store.create(Resources.daemonsets, {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'caa', namespace: 'default', labels },
      spec: {
        selector: { matchLabels: { app: 'caa' } },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
        template: template(labels, 'caa:v1'),
      },
    });
    for (const node of ['node-1', 'node-2']) {
      h.store.create(Resources.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `peer-${node}`, namespace: 'default', labels: { app: 'peer' } },
        spec: { nodeName: node, runtimeClassName: 'kata-remote', containers: [{ name: 'app', image: 'nginx:1.27' }] },
      });
    }
    await h.until(() => status('caa')?.numberAvailable === 2 && podsWith(h!.store, 'default', { app: 'peer' }).every(isReady), 'agents and peers ready');
    let nodesWithoutReadyAgent = 0;
    h.onEvent(() => {
      const agents = activePods(podsWith(h!.store, 'default', { app: 'caa' }));
      for (const node of ['node-1', 'node-2']) if (!agents.some((a) => a.spec.nodeName === node && isReady(a))) nodesWithoutReadyAgent++;
    });
    setImage(h.store, Resources.daemonsets as typeof Resources.deployments, 'default', 'caa', 'caa:v2');
    await h.until(() => {
      const agents = podsWith(h!.store, 'default', { app: 'caa' });
      return (
        status('caa').updatedNumberScheduled === 2 &&
        agents.length === 2 &&
        agents.every((a) => image(a) === 'caa:v2' && isReady(a)) &&
        podsWith(h!.store, 'default', { app: 'peer' }).every(isReady)
      );
    }, 'the agents to roll');
    expect(nodesWithoutReadyAgent).toBe(0);
    for (const peer of podsWith(h.store, 'default', { app: 'peer' })) expect(peer.status.containerStatuses[0].restartCount).toBe(1);
  });

  it('OnDelete: a template change replaces nothing until a pod is deleted, then only that one', async () => {
    h = startHarness({ nodes: 3 });
    h.store.create(Resources.daemonsets, daemonSet('od', { type: 'OnDelete' }));
    await h.until(() => status('od')?.numberAvailable === 3, 'v1 everywhere');
    const before = podsWith(h.store, 'default', { app: 'od' });
    setImage(h.store, Resources.daemonsets as typeof Resources.deployments, 'default', 'od', 'agent:v2');
    await h.until(() => status('od').observedGeneration === 2, 'the change to be observed');
    await h.behaviour.idle();
    expect(
      podsWith(h.store, 'default', { app: 'od' })
        .map((p) => p.metadata.uid)
        .sort(),
    ).toEqual(before.map((p) => p.metadata.uid).sort());
    expect(status('od').updatedNumberScheduled).toBe(0);

    const victim = before.find((p) => p.spec.nodeName === 'node-2')!;
    h.store.delete(Resources.pods, 'default', victim.metadata.name);
    await h.until(() => status('od').updatedNumberScheduled === 1 && status('od').numberAvailable === 3, 'node-2 replaced');
    const after = podsWith(h.store, 'default', { app: 'od' });
    expect(after.filter((p) => image(p) === 'agent:v2').map((p) => p.spec.nodeName)).toEqual(['node-2']);
    expect(after.filter((p) => image(p) === 'agent:v1')).toHaveLength(2);
  });
});

describe('StatefulSet controller', () => {
  function statefulSet(name: string, replicas: number, updateStrategy: Record<string, unknown>): KubeObject {
    return {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name, namespace: 'default' },
      spec: { replicas, serviceName: name, selector: { matchLabels: { app: name } }, updateStrategy, template: template({ app: name }, 'db:v1') },
    };
  }
  const status = (name: string) => h!.store.get(Resources.statefulsets, 'default', name)!.status;
  const podAt = (name: string, i: number) => h!.store.get(Resources.pods, 'default', `${name}-${i}`);
  const allUpdated = (name: string, n: number) => () => {
    const s = status(name);
    return (
      s.updatedReplicas === n &&
      s.readyReplicas === n &&
      s.currentRevision === s.updateRevision &&
      s.observedGeneration === h!.store.get(Resources.statefulsets, 'default', name)!.metadata.generation
    );
  };

  it('creates <name>-0..n-1 in order, each only once its predecessors are Ready', async () => {
    h = startHarness({ nodes: 2 });
    const violations: string[] = [];
    h.onEvent((e) => {
      if (e.type !== 'ADDED' || e.resource !== Resources.pods) return;
      const ordinal = Number(e.object.metadata.name.split('-').pop());
      for (let i = 0; i < ordinal; i++) if (!isReady(podAt('db', i))) violations.push(`db-${ordinal} created before db-${i} was Ready`);
    });
    h.store.create(Resources.statefulsets, statefulSet('db', 3, { type: 'RollingUpdate' }));
    await h.until(() => status('db')?.readyReplicas === 3, 'three ready');
    expect(violations).toEqual([]);
    const s = status('db');
    expect(s.updateRevision).toMatch(/^db-[a-z0-9]+$/);
    expect(s).toMatchObject({
      replicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
      currentReplicas: 3,
      updatedReplicas: 3,
      currentRevision: s.updateRevision,
      observedGeneration: 1,
    });
    expect(podAt('db', 0)!.metadata.labels!['controller-revision-hash']).toBe(s.updateRevision);
    expect(podAt('db', 0)!.spec).toMatchObject({ hostname: 'db-0', subdomain: 'db' });
  });

  it('RollingUpdate replaces pods from the highest ordinal down, one at a time, each Ready before the next', async () => {
    h = startHarness({ nodes: 2 });
    h.store.create(Resources.statefulsets, statefulSet('ru', 4, { type: 'RollingUpdate' }));
    await h.until(() => status('ru')?.readyReplicas === 4, 'v1 ready');
    const v1 = status('ru').currentRevision;
    const deletions: number[] = [];
    let maxDown = 0;
    h.onEvent((e) => {
      if (e.resource !== Resources.pods) return;
      if (e.type === 'MODIFIED' && e.object.metadata.deletionTimestamp && !e.previous?.metadata.deletionTimestamp)
        deletions.push(Number(e.object.metadata.name.split('-').pop()));
      const down = [0, 1, 2, 3].filter((i) => !isReady(podAt('ru', i)) || podAt('ru', i)!.metadata.deletionTimestamp).length;
      maxDown = Math.max(maxDown, down);
    });
    setImage(h.store, Resources.statefulsets as typeof Resources.deployments, 'default', 'ru', 'db:v2');
    await h.until(allUpdated('ru', 4), 'the roll to finish');
    expect(deletions).toEqual([3, 2, 1, 0]);
    expect(maxDown).toBe(1);
    expect(status('ru').currentRevision).not.toBe(v1);
    for (let i = 0; i < 4; i++) expect(image(podAt('ru', i)!)).toBe('db:v2');
  });

  it('RollingUpdate with partition updates only ordinals >= partition; a recreated lower pod keeps the current revision', async () => {
    h = startHarness({ nodes: 2 });
    h.store.create(Resources.statefulsets, statefulSet('part', 4, { type: 'RollingUpdate', rollingUpdate: { partition: 2 } }));
    await h.until(() => status('part')?.readyReplicas === 4, 'v1 ready');
    setImage(h.store, Resources.statefulsets as typeof Resources.deployments, 'default', 'part', 'db:v2');
    await h.until(() => status('part').updatedReplicas === 2 && status('part').readyReplicas === 4, 'the partitioned roll');
    await h.behaviour.idle();
    expect([0, 1, 2, 3].map((i) => image(podAt('part', i)!))).toEqual(['db:v1', 'db:v1', 'db:v2', 'db:v2']);
    expect(status('part').currentRevision).not.toBe(status('part').updateRevision);
    expect(status('part').currentReplicas).toBe(2);

    const old0 = podAt('part', 0)!;
    h.store.delete(Resources.pods, 'default', 'part-0');
    await h.until(() => podAt('part', 0)?.metadata.uid !== old0.metadata.uid && isReady(podAt('part', 0)), 'part-0 recreated');
    expect(image(podAt('part', 0)!)).toBe('db:v1');

    patchSpec(h.store, Resources.statefulsets as typeof Resources.deployments, 'default', 'part', (spec) => (spec.updateStrategy.rollingUpdate.partition = 0));
    await h.until(allUpdated('part', 4), 'the rest to roll');
    expect([0, 1, 2, 3].map((i) => image(podAt('part', i)!))).toEqual(Array(4).fill('db:v2'));
  });

  it('OnDelete: nothing rolls until a pod is deleted; it comes back at the update revision', async () => {
    h = startHarness({ nodes: 2 });
    h.store.create(Resources.statefulsets, statefulSet('od', 3, { type: 'OnDelete' }));
    await h.until(() => status('od')?.readyReplicas === 3, 'v1 ready');
    const uids = [0, 1, 2].map((i) => podAt('od', i)!.metadata.uid);
    setImage(h.store, Resources.statefulsets as typeof Resources.deployments, 'default', 'od', 'db:v2');
    await h.until(() => status('od').observedGeneration === 2, 'observed');
    await h.behaviour.idle();
    expect([0, 1, 2].map((i) => podAt('od', i)!.metadata.uid)).toEqual(uids);
    expect(status('od').updatedReplicas).toBe(0);

    h.store.delete(Resources.pods, 'default', 'od-1');
    await h.until(() => status('od').updatedReplicas === 1 && status('od').readyReplicas === 3, 'od-1 replaced');
    expect([0, 1, 2].map((i) => image(podAt('od', i)!))).toEqual(['db:v1', 'db:v2', 'db:v1']);
  });

  it('Parallel pod management creates every ordinal at once', async () => {
    h = startHarness({ nodes: 2 });
    let createdBeforeAnyReady = 0;
    h.onEvent((e) => {
      if (e.type === 'ADDED' && e.resource === Resources.pods && ![0, 1, 2].some((i) => isReady(podAt('par', i)))) createdBeforeAnyReady++;
    });
    h.store.create(Resources.statefulsets, {
      ...statefulSet('par', 3, { type: 'RollingUpdate' }),
      spec: { ...statefulSet('par', 3, { type: 'RollingUpdate' }).spec, podManagementPolicy: 'Parallel' },
    });
    await h.until(() => status('par')?.readyReplicas === 3, 'ready');
    expect(createdBeforeAnyReady).toBe(3);
  });

  it('scales down from the highest ordinal', async () => {
    h = startHarness({ nodes: 2 });
    h.store.create(Resources.statefulsets, statefulSet('sd', 3, { type: 'RollingUpdate' }));
    await h.until(() => status('sd')?.readyReplicas === 3, 'ready');
    const order: string[] = [];
    h.onEvent((e) => {
      if (e.resource === Resources.pods && e.type === 'DELETED') order.push(e.object.metadata.name);
    });
    patchSpec(h.store, Resources.statefulsets as typeof Resources.deployments, 'default', 'sd', (spec) => (spec.replicas = 1));
    await h.until(() => status('sd').replicas === 1 && podsWith(h!.store, 'default', { app: 'sd' }).length === 1, 'one left');
    expect(order).toEqual(['sd-2', 'sd-1']);
  });
});
