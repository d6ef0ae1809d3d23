import type { V1Deployment, V1Node, V1Pod } from '@kubernetes/client-node';
import type { Predicate } from '../../../controller/sources.js';
import { ANNOTATION_HELD_BY, ANNOTATION_HOLD } from './names.js';
import { isPodReady, podImage, podReadySince, pullFailure } from './podFacts.js';
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

/**
 * What the driver's observe() reads of each object: a change elsewhere cannot change an observation. AgentReady is
 * in it because the reconciler writes it True right after it recorded the recreation (observe's last condition).
 */
export function poolSignature(pool: IPPool): string {
  const s = pool.status ?? {};
  const a = pool.metadata?.annotations ?? {};
  const agentReady = s.conditions?.find((c) => c.type === 'AgentReady')?.status;
  return JSON.stringify([s.agentPodRef, agentReady, a[ANNOTATION_HOLD] ?? null, a[ANNOTATION_HELD_BY] !== undefined, pool.spec?.paused === true]);
}

export function podSignature(pod: V1Pod): string {
  return JSON.stringify([pod.metadata?.uid, podImage(pod), isPodReady(pod), pullFailure(pod) ?? null]);
}

/** What rollplane reads of the vm-dhcp-controller Deployment: whether it runs and its containers' args. */
export function controllerSignature(deployment: V1Deployment): string {
  return JSON.stringify([
    deployment.metadata?.uid,
    deployment.metadata?.deletionTimestamp,
    deployment.spec?.replicas,
    deployment.spec?.template?.spec?.containers?.map((c) => c.args),
  ]);
}

/** A node's Ready condition status: its changes move agents stuck Terminating on it. */
export function readyOf(node: V1Node): string | undefined {
  return node.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}
