import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { CacheReader } from '../../../controller/Informer.js';
import type { IPPool, PoolCondition } from './types.js';
import { normalizeImage } from './VmDhcpControllerWatch.js';

export function isPodReady(pod: V1Pod): boolean {
  return !pod.metadata?.deletionTimestamp && (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** When the pod became Ready, if it is. */
export function podReadySince(pod: V1Pod): Date | undefined {
  const ready = (pod.status?.conditions ?? []).find((c) => c.type === 'Ready' && c.status === 'True');
  const at = ready?.lastTransitionTime;
  return at ? new Date(at) : undefined;
}

/** The image of `containers[0]`, as upstream compares it. */
export function podImage(pod: V1Pod): string | undefined {
  return pod.spec?.containers?.[0]?.image;
}

/** ImagePullBackOff / ErrImagePull of any container, with the kubelet's message. */
export function pullFailure(pod: V1Pod): string | undefined {
  for (const status of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
    const waiting = status.state?.waiting;
    if (waiting && (waiting.reason === 'ImagePullBackOff' || waiting.reason === 'ErrImagePull')) {
      return `${waiting.reason}: ${waiting.message ?? `cannot pull ${status.image}`}`;
    }
  }
  return undefined;
}

export function isNodeReady(node: V1Node | undefined): boolean {
  return (node?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/**
 * Sets a condition; `lastUpdateTime` changes only when status, reason or message do, so that an unchanged state does
 * not cost a status write.
 */
export function setCondition(
  conditions: PoolCondition[],
  type: string,
  status: PoolCondition['status'],
  now: Date,
  reason?: string,
  message?: string,
): PoolCondition[] {
  const existing = conditions.find((c) => c.type === type);
  if (existing && existing.status === status && (existing.reason ?? '') === (reason ?? '') && (existing.message ?? '') === (message ?? '')) {
    return conditions;
  }
  const next: PoolCondition = { type, status, ...(reason ? { reason } : {}), ...(message ? { message } : {}), lastUpdateTime: now.toISOString() };
  return existing ? conditions.map((c) => (c.type === type ? next : c)) : [...conditions, next];
}

export function conditionTrue(conditions: PoolCondition[] | undefined, type: string): boolean {
  return (conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

/** The pool's recorded image and its running agent (from `pods`, in `agentNamespace` unless the ref names one) are both `image`. */
export function poolRunsImage(pool: IPPool, image: string, pods: CacheReader<V1Pod>, agentNamespace: string): boolean {
  const wanted = normalizeImage(image);
  const ref = pool.status?.agentPodRef;
  if (!ref?.name || normalizeImage(ref.image ?? '') !== wanted) return false;
  const pod = pods.get(ref.namespace ?? agentNamespace, ref.name);
  return pod !== undefined && normalizeImage(podImage(pod) ?? '') === wanted;
}
