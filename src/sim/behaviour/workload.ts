/** Helpers shared by the workload controllers (ReplicaSet, Deployment, DaemonSet, StatefulSet). */
import type { KubeObject, ResourceType, StoreEvent } from '../types.js';
import type { BehaviourContext } from './context.js';
import { controllerRef, isActivePod, isTerminating, jsonEqual, keyOf, ownerRefTo, podAvailability, randomSuffix, splitKey } from './kube.js';

/** The key of the object of `kind` that controls the event's object, if any (same namespace). */
export function ownerKey(event: StoreEvent, kind: string): string | undefined {
  const obj = event.object;
  const ref = controllerRef(obj) ?? (event.previous ? controllerRef(event.previous) : undefined);
  if (!ref || ref.kind !== kind) return undefined;
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${ref.name}` : ref.name;
}

/** Counts over a set of pods as workload statuses report them. */
export interface PodCounts {
  /** Active (not terminating, not finished). */
  replicas: number;
  ready: number;
  available: number;
  /** Earliest moment a Ready pod becomes available (minReadySeconds), as a delay. */
  recheckInMs: number | undefined;
}

export function countPods(pods: KubeObject[], minReadySeconds: number, now: number): PodCounts {
  const counts: PodCounts = { replicas: 0, ready: 0, available: 0, recheckInMs: undefined };
  for (const pod of pods) {
    if (!isActivePod(pod)) continue;
    counts.replicas++;
    const availability = podAvailability(pod, minReadySeconds, now);
    if (availability.available) counts.available++;
    if (availability.available || availability.recheckInMs !== undefined) counts.ready++;
    if (availability.recheckInMs !== undefined) counts.recheckInMs = Math.min(counts.recheckInMs ?? Infinity, availability.recheckInMs);
  }
  return counts;
}

/** Builds a pod from a template, controlled by `owner`. */
export function podFromTemplate(owner: KubeObject, template: any, name: string, extraLabels: Record<string, string>, nodeName?: string): KubeObject {
  const meta = template?.metadata ?? {};
  const spec = { restartPolicy: 'Always', terminationGracePeriodSeconds: 30, dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', ...template?.spec };
  if (nodeName) spec.nodeName = nodeName;
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: owner.metadata.namespace,
      labels: { ...meta.labels, ...extraLabels },
      ownerReferences: [ownerRefTo(owner)],
    },
    spec,
    status: { phase: 'Pending' },
  };
  if (meta.annotations) pod.metadata.annotations = { ...meta.annotations };
  return pod;
}

/** Creates a pod named `<prefix>-<5 random chars>`, retrying on the (rare) name collision. */
export function createGeneratedPod(
  ctx: BehaviourContext,
  owner: KubeObject,
  template: any,
  prefix: string,
  extraLabels: Record<string, string>,
  nodeName?: string,
): KubeObject {
  for (let attempt = 0; ; attempt++) {
    try {
      const pod = podFromTemplate(owner, template, `${prefix}-${randomSuffix()}`, extraLabels, nodeName);
      pod.metadata.generateName = `${prefix}-`;
      return ctx.store.create(ctx.types.pods, pod);
    } catch (error) {
      if ((error as { code?: number }).code !== 409 || attempt >= 5) throw error;
    }
  }
}

/** Graceful delete (the pod's default grace period): the kubelet finishes it, unless its node is down. */
export function deletePod(ctx: BehaviourContext, pod: KubeObject): void {
  if (isTerminating(pod)) return;
  const { namespace, name } = splitKey(keyOf(pod));
  try {
    ctx.store.delete(ctx.types.pods, namespace, name, { preconditions: { uid: pod.metadata.uid ?? '' } });
  } catch (error) {
    if ((error as { code?: number }).code !== 404 && (error as { code?: number }).code !== 409) throw error;
  }
}

/** Writes `status` through the status subresource unless it is unchanged. */
export function writeStatus(ctx: BehaviourContext, type: ResourceType | undefined, obj: KubeObject, status: Record<string, unknown>): void {
  if (!type || jsonEqual(obj.status ?? {}, status)) return;
  const subresource = type.subresources.includes('status') ? 'status' : undefined;
  ctx.store.update(type, { ...obj, status }, subresource);
}

/** Ranks pods for deletion on scale-down as the ReplicaSet controller does: unscheduled, pending, not ready first. */
export function deletionRank(pod: KubeObject): number {
  if (!pod.spec?.nodeName) return 0;
  if (pod.status?.phase !== 'Running') return 1;
  const ready = (pod.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready')?.status === 'True';
  return ready ? 3 : 2;
}

export function minReadySecondsOf(obj: KubeObject): number {
  return Number(obj.spec?.minReadySeconds ?? 0) || 0;
}
