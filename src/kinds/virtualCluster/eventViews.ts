import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
import { readPayload } from '../../domain/eventPayloads.js';
import { clusterUpgradeObserved } from './events.js';
import type { StoredEvent } from '../../domain/events.js';

/**
 * A ClusterUpgradeObserved event as the API shows it (`ClusterUpgradeObservation`, mapped in codegen): the
 * `clusterUpgradeObserved` subscription and `VirtualCluster.lastUpgrade`.
 */
export function clusterUpgradeView(event: StoredEvent) {
  const p = readPayload(clusterUpgradeObserved.type, event.payload);
  return {
    eventId: String(event.id),
    cluster: event.cluster ?? LOCAL_CLUSTER,
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

/** Its values come from rollplane's own history rows, so GraphQL's output coercion checks them as they pass. */
export type ClusterUpgradeView = ReturnType<typeof clusterUpgradeView>;

/** Whether a ClusterUpgradeObserved event's payload names `clusterVersion` (the subscription's filter). */
export function upgradeIsTo(event: StoredEvent, clusterVersion: string): boolean {
  return readPayload(clusterUpgradeObserved.type, event.payload).clusterVersion === clusterVersion;
}
