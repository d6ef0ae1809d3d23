/** The simulated controllers as a client sees them: @kubernetes/client-node over HTTP, watching pods while rolling. */
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, Watch, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zeroDelays } from '../../../src/sim/behaviour/index.js';
import { nodeObject } from '../../../src/sim/fleet.js';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { Resources } from '../../../src/sim/store/resources.js';
import { until } from '../../helpers/until.js';

let sim: Simulator;
let core: CoreV1Api;
let apps: AppsV1Api;

beforeAll(async () => {
  // Small real delays so that kubelet steps and controller steps interleave as they would in a cluster.
  sim = await startSimulator({ delays: { ...zeroDelays, podStartMs: 5, podReadyMs: 10, podTerminateMs: 5, controllerMs: 2 } });
  for (let i = 0; i < 3; i++) sim.store.create(Resources.nodes, nodeObject(`node-${i + 1}`, i));
  core = sim.kubeConfig.makeApiClient(CoreV1Api);
  apps = sim.kubeConfig.makeApiClient(AppsV1Api);
});

afterAll(async () => {
  await sim?.stop();
});

const isReady = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** Mirrors the pods with `app=<app>` through client-node (list + watch) and calls `check` after every event. */
async function watchPods(app: string, check: (pods: V1Pod[]) => void): Promise<{ stop: () => void }> {
  // List, then watch from the list's resourceVersion, as an informer does: checks start from a complete picture.
  const list = await core.listNamespacedPod({ namespace: 'default', labelSelector: `app=${app}` });
  const pods = new Map<string, V1Pod>(list.items.map((p) => [p.metadata!.name!, p]));
  const request = await new Watch(sim.kubeConfig).watch(
    '/api/v1/namespaces/default/pods',
    { labelSelector: `app=${app}`, resourceVersion: list.metadata!.resourceVersion! },
    (type: string, pod: V1Pod) => {
      if (type === 'DELETED') pods.delete(pod.metadata!.name!);
      else pods.set(pod.metadata!.name!, pod);
      check([...pods.values()]);
    },
    () => undefined,
  );
  return { stop: () => request.abort() };
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const strategicPatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

describe('workload controllers over HTTP', () => {
  it('a Deployment rolls within maxUnavailable/maxSurge as observed through a watch', async () => {
    const labels = { app: 'web' };
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 4,
          selector: { matchLabels: labels },
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
          template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'web:v1' }] } },
        },
      },
    });
    await until('v1 available', () => sim.store.get(Resources.deployments, 'default', 'web')?.status?.availableReplicas === 4, 10_000);
    let minAvailable = Infinity;
    let maxActive = 0;
    const watch = await watchPods('web', (pods) => {
      const active = pods.filter((p) => !p.metadata?.deletionTimestamp);
      minAvailable = Math.min(minAvailable, active.filter(isReady).length);
      maxActive = Math.max(maxActive, active.length);
    });
    try {
      await apps.patchNamespacedDeployment(
        { name: 'web', namespace: 'default', body: { spec: { template: { spec: { containers: [{ name: 'web', image: 'web:v2' }] } } } } },
        strategicPatch,
      );
      await until(
        'the rollout',
        () => {
          const d = sim.store.get(Resources.deployments, 'default', 'web')!;
          return (
            d.status.observedGeneration === d.metadata.generation &&
            d.status.updatedReplicas === 4 &&
            d.status.availableReplicas === 4 &&
            d.status.replicas === 4
          );
        },
        10_000,
      );
      const d = await apps.readNamespacedDeployment({ name: 'web', namespace: 'default' });
      expect(d.status?.conditions?.find((c) => c.type === 'Progressing')?.reason).toBe('NewReplicaSetAvailable');
      expect(minAvailable).toBeGreaterThanOrEqual(3);
      expect(maxActive).toBeLessThanOrEqual(5);
      const rs = await apps.listNamespacedReplicaSet({ namespace: 'default', labelSelector: 'app=web' });
      expect(rs.items.map((r) => r.spec?.replicas).sort()).toEqual([0, 4]);
    } finally {
      watch.stop();
    }
  });

  it('a StatefulSet partition, moved by merge patches, updates ordinals top-down', async () => {
    const labels = { app: 'db' };
    await apps.createNamespacedStatefulSet({
      namespace: 'default',
      body: {
        metadata: { name: 'db' },
        spec: {
          replicas: 3,
          serviceName: 'db',
          selector: { matchLabels: labels },
          updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } },
          template: { metadata: { labels }, spec: { containers: [{ name: 'db', image: 'db:v1' }] } },
        },
      },
    });
    const images = async () => {
      const pods = await core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=db' });
      return Object.fromEntries(pods.items.map((p) => [p.metadata!.name!, p.spec!.containers[0]!.image]));
    };
    await until('db ready', () => sim.store.get(Resources.statefulsets, 'default', 'db')?.status?.readyReplicas === 3, 10_000);
    await apps.patchNamespacedStatefulSet(
      { name: 'db', namespace: 'default', body: { spec: { template: { spec: { containers: [{ name: 'db', image: 'db:v2' }] } } } } },
      strategicPatch,
    );
    await until(
      'ordinal 2',
      () =>
        sim.store.get(Resources.statefulsets, 'default', 'db')?.status?.updatedReplicas === 1 &&
        sim.store.get(Resources.statefulsets, 'default', 'db')?.status?.readyReplicas === 3,
      10_000,
    );
    expect(await images()).toEqual({ 'db-0': 'db:v1', 'db-1': 'db:v1', 'db-2': 'db:v2' });

    await apps.patchNamespacedStatefulSet(
      { name: 'db', namespace: 'default', body: { spec: { updateStrategy: { rollingUpdate: { partition: 0 } } } } },
      mergePatch,
    );
    await until(
      'the rest',
      () => {
        const s = sim.store.get(Resources.statefulsets, 'default', 'db')!.status;
        return s.updatedReplicas === 3 && s.readyReplicas === 3 && s.currentRevision === s.updateRevision;
      },
      10_000,
    );
    expect(await images()).toEqual({ 'db-0': 'db:v2', 'db-1': 'db:v2', 'db-2': 'db:v2' });
  });

  it('a DaemonSet with maxSurge=1 never leaves a node without a Ready pod', async () => {
    const labels = { app: 'agent' };
    await apps.createNamespacedDaemonSet({
      namespace: 'default',
      body: {
        metadata: { name: 'agent' },
        spec: {
          selector: { matchLabels: labels },
          updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
          template: { metadata: { labels }, spec: { containers: [{ name: 'agent', image: 'agent:v1' }] } },
        },
      },
    });
    await until('agents', () => sim.store.get(Resources.daemonsets, 'default', 'agent')?.status?.numberAvailable === 3, 10_000);
    let uncovered = 0;
    const watch = await watchPods('agent', (pods) => {
      for (const node of ['node-1', 'node-2', 'node-3']) {
        if (!pods.some((p) => p.spec?.nodeName === node && !p.metadata?.deletionTimestamp && isReady(p))) uncovered++;
      }
    });
    try {
      await apps.patchNamespacedDaemonSet(
        { name: 'agent', namespace: 'default', body: { spec: { template: { spec: { containers: [{ name: 'agent', image: 'agent:v2' }] } } } } },
        strategicPatch,
      );
      await until(
        'the DaemonSet roll',
        () => {
          const s = sim.store.get(Resources.daemonsets, 'default', 'agent')!.status;
          return (
            s.observedGeneration === 2 &&
            s.updatedNumberScheduled === 3 &&
            s.numberAvailable === 3 &&
            sim.store.list(Resources.pods, 'default').filter((p) => p.metadata.labels?.app === 'agent').length === 3
          );
        },
        10_000,
      );
      expect(uncovered).toBe(0);
    } finally {
      watch.stop();
    }
  });
});
