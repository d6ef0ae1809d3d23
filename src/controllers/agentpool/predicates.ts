import type { V1Pod } from '@kubernetes/client-node';
import type { Predicate } from '../../controller/sources.js';
import { isPodReady, podImage, podReadySince } from './podFacts.js';
import type { IPPool } from './types.js';

/**
 * Which informer updates can change what a pool's reconcile does. The reconciler's own condition writes come back as
 * pool updates, and the kubelet moves every new agent through several status updates before it is Ready; none of
 * those change a decision, yet each would cost a reconcile (a third of them at 10,000 pools). Creations and deletions
 * always pass.
 */

/** What a reconcile reads of its pool: everything but the conditions and lastUpdate it writes itself. */
function poolInputs(pool: IPPool): string {
  const { conditions: _conditions, lastUpdate: _lastUpdate, ...status } = pool.status ?? {};
  const m = pool.metadata ?? {};
  return JSON.stringify([m.deletionTimestamp, m.labels, m.annotations, pool.spec, status.agentPodRef]);
}

export function poolInputsChanged(): Predicate<IPPool> {
  return { update: (oldPool, newPool) => poolInputs(oldPool) !== poolInputs(newPool) };
}

/** What a reconcile reads of an agent pod: identity, deletion, node, image, readiness (and since when). */
function agentPodInputs(pod: V1Pod): string {
  const m = pod.metadata;
  return JSON.stringify([
    m?.uid,
    m?.deletionTimestamp,
    m?.deletionGracePeriodSeconds,
    pod.spec?.nodeName,
    podImage(pod),
    isPodReady(pod),
    podReadySince(pod)?.getTime(),
  ]);
}

export function agentPodInputsChanged(): Predicate<V1Pod> {
  return { update: (oldPod, newPod) => agentPodInputs(oldPod) !== agentPodInputs(newPod) };
}
