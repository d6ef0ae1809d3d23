/** The cloud-api-adaptor DaemonSet and ConfigMap as the upstream peerpods chart installs them (fleet option upstream=caa). */
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { zeroDelays } from '../../../../src/sim/behaviour/index.js';
import { startSimulator, type Simulator } from '../../../../src/sim/index.js';
import { jsonPatch, readUntil } from './helpers.js';

const NS = 'confidential-containers-system';
const DS = 'cloud-api-adaptor-daemonset';

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

describe('cloud-api-adaptor, chart-shaped', () => {
  it('is the chart DaemonSet: RollingUpdate 0/1, env from peer-pods-cm, POD_UID, capabilities, its ServiceAccount', async () => {
    sim = await startSimulator({ fleet: 'nodes=2,upstream=caa', delays: { ...zeroDelays, controllerMs: 1 } });
    const apps = sim.kubeConfig.makeApiClient(AppsV1Api);
    const core = sim.kubeConfig.makeApiClient(CoreV1Api);
    const ds = await apps.readNamespacedDaemonSet({ name: DS, namespace: NS });
    expect(ds.spec!.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    expect(ds.spec!.selector).toEqual({ matchLabels: { app: 'cloud-api-adaptor' } });
    const pod = ds.spec!.template.spec!;
    expect(pod.serviceAccountName).toBe('cloud-api-adaptor');
    expect(pod.hostNetwork).toBe(true);
    expect(pod.nodeSelector).toEqual({ 'node.kubernetes.io/worker': '' });
    const container = pod.containers[0]!;
    expect(container.name).toBe('cloud-api-adaptor-con');
    expect(container.env).toEqual([
      { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
    ]);
    expect(container.envFrom).toContainEqual({ configMapRef: { name: 'peer-pods-cm' } });
    expect(container.securityContext).toEqual({ capabilities: { add: ['NET_ADMIN', 'SYS_ADMIN'] } });
    expect(container.securityContext).not.toHaveProperty('privileged');
    expect(container.startupProbe).toMatchObject({
      httpGet: { path: '/startup', port: 8000 },
      failureThreshold: 30,
      periodSeconds: 20,
      initialDelaySeconds: 20,
    });

    const cm = await core.readNamespacedConfigMap({ name: 'peer-pods-cm', namespace: NS });
    expect(cm.data).toMatchObject({ CLOUD_PROVIDER: 'libvirt', RUNTIMECLASS_NAME: 'kata-remote' });
    await core.readNamespacedServiceAccount({ name: 'cloud-api-adaptor', namespace: NS });
    await core.readNamespacedSecret({ name: 'peer-pods-secret', namespace: NS });

    // The nodeSelector matches the fleet's workers, so there is one agent per node; an image bump surges node by node.
    await readUntil(
      'one Ready agent per node',
      () => apps.readNamespacedDaemonSet({ name: DS, namespace: NS }),
      (d) => d.status?.numberReady === 2,
    );
    await apps.patchNamespacedDaemonSet(
      {
        name: DS,
        namespace: NS,
        body: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'quay.io/confidential-containers/cloud-api-adaptor:v0.11.0' }],
      },
      jsonPatch,
    );
    let minAvailable = Infinity;
    await readUntil(
      'the rollout completes',
      async () => {
        const d = await apps.readNamespacedDaemonSet({ name: DS, namespace: NS });
        minAvailable = Math.min(minAvailable, d.status?.numberAvailable ?? 0);
        return d;
      },
      (d) => d.status?.updatedNumberScheduled === 2 && d.status?.numberAvailable === 2 && d.status?.observedGeneration === d.metadata?.generation,
    );
    expect(minAvailable).toBe(2); // maxUnavailable 0, as observed
  });

  it('keeps the default fleet DaemonSet (rollplane-driven, OnDelete) when caa is not selected', async () => {
    sim = await startSimulator({ fleet: 'nodes=1', delays: zeroDelays });
    const ds = await sim.kubeConfig.makeApiClient(AppsV1Api).readNamespacedDaemonSet({ name: DS, namespace: NS });
    expect(ds.spec!.updateStrategy).toEqual({ type: 'OnDelete' });
  });
});
