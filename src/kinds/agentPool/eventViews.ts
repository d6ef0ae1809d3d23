import { readPayload } from '../../domain/eventPayloads.js';
import { agentRecreated } from './events.js';
import type { StoredEvent } from '../../domain/events.js';
import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';

/** An AgentRecreated event as the `agentRecreated` subscription returns it (`AgentRecreated`, mapped in codegen). */
export function agentRecreatedView(event: StoredEvent) {
  const p = readPayload(agentRecreated.type, event.payload);
  return {
    eventId: String(event.id),
    cluster: event.cluster ?? LOCAL_CLUSTER,
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

/**
 * What the agentRecreated subscription returns: built from the event's stored payload, whose values come from
 * rollplane's own history rows (not from a caller), so GraphQL's output coercion checks them as they pass.
 */
export type AgentRecreatedView = ReturnType<typeof agentRecreatedView>;
