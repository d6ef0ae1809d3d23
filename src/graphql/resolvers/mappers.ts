import { clusterOfEvent, type StoredEvent } from '../../domain/events.js';
import type { RolloutTarget } from '../../domain/RolloutService.js';

/** Domain objects → the GraphQL shapes that are not one-to-one. */
export function eventToGraphQL(event: StoredEvent) {
  return {
    id: String(event.id),
    type: event.type,
    rolloutId: event.rolloutId,
    object: event.name ? { kind: event.kind, namespace: event.namespace ?? '', name: event.name } : null,
    cluster: clusterOfEvent(event),
    payload: event.payload,
    createdAt: event.createdAt,
  };
}

export function eventEdge(event: StoredEvent) {
  return { cursor: String(event.id), node: eventToGraphQL(event) };
}

export function targetDurationSeconds(target: RolloutTarget): number | null {
  if (!target.admittedAt || !target.finishedAt) return null;
  return (target.finishedAt.getTime() - target.admittedAt.getTime()) / 1000;
}
