import { readPayload } from '../../domain/eventPayloads.js';
import { EventType, type StoredEvent } from '../../domain/events.js';
import type { RolloutTarget } from '../../domain/RolloutService.js';

/** Domain objects → the GraphQL shapes that are not one-to-one. */
export function eventToGraphQL(event: StoredEvent) {
  return {
    id: String(event.id),
    type: event.type,
    rolloutId: event.rolloutId,
    object: event.name ? { kind: event.kind, namespace: event.namespace ?? '', name: event.name } : null,
    payload: event.payload,
    createdAt: event.createdAt,
  };
}

/** A NodeAgentReplaced event's payload read through its schema; the node is the event's object when the payload lacks it. */
export function nodeAgentReplacementToGraphQL(event: { payload: unknown; object?: { name: string } | null }) {
  const p = readPayload(EventType.NodeAgentReplaced, event.payload);
  return {
    node: p.node ?? event.object?.name ?? '',
    daemonSet: p.daemonSet ?? null,
    oldPod: p.oldPod ?? null,
    newPod: p.newPod ?? null,
    oldImage: p.oldImage ?? null,
    newImage: p.newImage ?? null,
    peerPodsRestarted: p.peerPodsRestarted ?? null,
    seconds: p.seconds ?? null,
    planned: p.planned ?? null,
    reason: p.reason ?? null,
  };
}

export function eventEdge(event: StoredEvent) {
  return { cursor: String(event.id), node: eventToGraphQL(event) };
}

export function targetDurationSeconds(target: RolloutTarget): number | null {
  if (!target.admittedAt || !target.finishedAt) return null;
  return (target.finishedAt.getTime() - target.admittedAt.getTime()) / 1000;
}

/** AgentRecreated event → the typed subscription payload. */
export function agentRecreatedToGraphQL(event: StoredEvent) {
  const p = readPayload(EventType.AgentRecreated, event.payload);
  return {
    eventId: String(event.id),
    rolloutId: event.rolloutId,
    poolNamespace: event.namespace ?? '',
    poolName: event.name ?? '',
    oldImage: p.oldImage ?? null,
    newImage: p.newImage,
    oldPodUid: p.oldPodUid ?? null,
    newPodUid: p.newPodUid ?? null,
    reason: p.reason ?? 'drift',
    deletedAt: p.deletedAt ?? null,
    readyAt: p.readyAt ?? null,
    seconds: p.seconds ?? null,
  };
}

/** ClusterUpgradeObserved event → the typed subscription payload. */
export function clusterUpgradeToGraphQL(event: StoredEvent) {
  const p = readPayload(EventType.ClusterUpgradeObserved, event.payload);
  return {
    eventId: String(event.id),
    rolloutId: event.rolloutId,
    clusterNamespace: event.namespace ?? '',
    clusterName: event.name ?? '',
    clusterVersion: p.clusterVersion,
    resourceVersion: p.resourceVersion,
    seconds: p.seconds,
    outcome: p.outcome,
    components: p.components ?? [],
    error: p.error ?? null,
    observedAt: event.createdAt,
  };
}
