/** rollplane's writes to node-agent DaemonSets and pods. Each one is idempotent and safe to repeat after a crash. */
import { PatchStrategy, setHeaderOptions, type V1DaemonSet, type V1Pod } from '@kubernetes/client-node';
import { ConflictError, NotFoundError } from '../../../errors.js';
import { kubeCall, mergePatchOptions, type KubeClients } from '../../../kube/index.js';
import { PEER_PODS_READY, RETIRING_LABEL, RETIRING_LABELS_ANNOTATION } from './names.js';

const strategicMergePatchOptions = () => setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

export async function readDaemonSet(clients: KubeClients, namespace: string, name: string): Promise<V1DaemonSet> {
  return kubeCall(`read daemonset ${namespace}/${name}`, () => clients.apps.readNamespacedDaemonSet({ namespace, name }));
}

/** Strategic merge patch: containers merge by name, `null` removes a field. */
export async function patchDaemonSet(clients: KubeClients, ds: V1DaemonSet, body: object): Promise<V1DaemonSet> {
  const namespace = ds.metadata!.namespace!;
  const name = ds.metadata!.name!;
  return kubeCall(`patch daemonset ${namespace}/${name}`, () =>
    clients.apps.patchNamespacedDaemonSet({ namespace, name, body, fieldManager: 'rollplane-node-agent' }, strategicMergePatchOptions()),
  );
}

/** Deletes one pod incarnation (uid precondition); gone or replaced already counts as done. */
export async function deletePod(clients: KubeClients, pod: V1Pod): Promise<void> {
  const namespace = pod.metadata!.namespace!;
  const name = pod.metadata!.name!;
  try {
    await kubeCall(`delete pod ${namespace}/${name}`, () =>
      clients.core.deleteNamespacedPod({ namespace, name, body: { preconditions: { uid: pod.metadata!.uid! } } }),
    );
  } catch (error) {
    if (!(error instanceof NotFoundError) && !(error instanceof ConflictError)) throw error;
  }
}

/**
 * Sets the readiness-gate condition True through the status subresource (strategic merge keys conditions by type, so
 * the kubelet's own conditions are untouched). The kubelet then turns the pod Ready.
 */
export async function openGate(clients: KubeClients, pod: V1Pod, message: string): Promise<void> {
  const namespace = pod.metadata!.namespace!;
  const name = pod.metadata!.name!;
  const body = {
    status: {
      conditions: [
        { type: PEER_PODS_READY, status: 'True', reason: 'PeerPodsReady', message, lastTransitionTime: new Date().toISOString(), lastProbeTime: null },
      ],
    },
  };
  try {
    await kubeCall(`set ${PEER_PODS_READY} on pod ${namespace}/${name}`, () =>
      clients.core.patchNamespacedPodStatus({ namespace, name, body, fieldManager: 'rollplane-node-agent' }, strategicMergePatchOptions()),
    );
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
  }
}

/**
 * SURGE hand-over: the old agent leaves the DaemonSet (its selector labels and owner reference go, so the controller
 * neither counts nor re-adopts it) and keeps running; the DaemonSet then starts the new agent beside it on the same
 * node. rollplane deletes the retiring pod once the new one is Ready. `resourceVersion` makes a stale view fail.
 */
export async function retirePod(clients: KubeClients, pod: V1Pod, ds: V1DaemonSet): Promise<void> {
  const namespace = pod.metadata!.namespace!;
  const name = pod.metadata!.name!;
  const labels: Record<string, string | null> = {};
  for (const key of Object.keys(ds.spec?.selector?.matchLabels ?? {})) labels[key] = null;
  labels[RETIRING_LABEL] = ds.metadata!.name!;
  const body = {
    metadata: {
      resourceVersion: pod.metadata!.resourceVersion,
      labels,
      annotations: { [RETIRING_LABELS_ANNOTATION]: JSON.stringify(pod.metadata?.labels ?? {}) },
      ownerReferences: null,
    },
  };
  try {
    await kubeCall(`retire pod ${namespace}/${name}`, () => clients.core.patchNamespacedPod({ namespace, name, body }, mergePatchOptions()));
  } catch (error) {
    // Gone, or changed meanwhile: the caller re-reads and decides again.
    if (!(error instanceof NotFoundError)) throw error;
  }
}
