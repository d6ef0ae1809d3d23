import type { EventType, RolloutKind } from '../events.js';

/**
 * Notifications (docs/adr/0035-notifications-outbox.md): subscriptions to the event log, delivered through a
 * transactional outbox by the leader. The domain's vocabulary; no GraphQL, HTTP or SQL here.
 */

export const SINK_KINDS = ['WEBHOOK', 'SLACK'] as const;
export type SinkKind = (typeof SINK_KINDS)[number];

/**
 * The stable fields "once per" may use: identifiers that never carry a time, a duration or a message, so that the same
 * occurrence always gives the same key (argo-cd notifications' `oncePer` over rendered text sent duplicates).
 * WAVE and GATE are read from an event's payload (`wave`, `gate`) by the staged rollouts that write them; CLUSTER is
 * the member cluster (`payload.cluster`, `local` until events carry one); TARGET the pool, cluster or node.
 */
export const ONCE_PER_FIELDS = ['ROLLOUT', 'WAVE', 'CLUSTER', 'GATE', 'TARGET'] as const;
export type OncePerField = (typeof ONCE_PER_FIELDS)[number];

/** The rollout and target states a filter may name (RolloutState ∪ TargetState). */
export const NOTIFIABLE_STATES = ['PENDING', 'PROGRESSING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK', 'SKIPPED', 'CANCELLED'] as const;
export type NotifiableState = (typeof NOTIFIABLE_STATES)[number];

/** Which events a subscription gets; each list, when not empty, must contain the event's value. */
export interface NotificationFilter {
  types: readonly EventType[];
  kinds: readonly RolloutKind[];
  /**
   * Member clusters by name (issue 29). With `clusterSelector`, the union: an event matches when a cluster it is in is
   * named or has matching labels. An event is in the cluster of the object it is about; a rollout's own event is in
   * every cluster its rollout has targets in (routing.ts, ADR 0060). Both empty: every event.
   */
  clusters: readonly string[];
  /** A Kubernetes label selector over the clusters' labels (`tier=edge,region in (eu)`); '' for none. */
  clusterSelector: string;
  /** The state a rollout or target moved to (RolloutStateChanged, TargetStateChanged; FAILED for TargetFailed). */
  states: readonly NotifiableState[];
  rolloutIds: readonly string[];
}

export const EMPTY_FILTER: NotificationFilter = { types: [], kinds: [], clusters: [], clusterSelector: '', states: [], rolloutIds: [] };

/** What the outbox routes by: the part of a subscription that decides which events get a delivery row. */
export interface Route {
  subscriptionId: string;
  sinkKind: SinkKind;
  filter: NotificationFilter;
  oncePer: readonly OncePerField[];
}

/** A subscription as the store keeps it, secret included: only the dispatcher and the store ever see `secret`. */
export interface SubscriptionRecord extends Route {
  id: string;
  name: string;
  url: string;
  /** WEBHOOK: the signing key. SLACK: a bot token for chat.postMessage, or ''. */
  secret: string;
  /** SLACK with a bot token: the channel; '' otherwise. */
  channel: string;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
  /** The last attempt of any of its deliveries: the "last dispatch or error" a subscription's status shows. */
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastDeliveredAt: Date | null;
}

export const DELIVERY_STATES = ['PENDING', 'DELIVERED', 'DEAD_LETTER', 'CANCELLED'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** One row of the outbox. */
export interface DeliveryRecord {
  id: number;
  subscriptionId: string;
  eventId: number;
  onceKey: string | null;
  lane: string | null;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

/** The longest `lastError` kept: a sink's response body is never stored beyond this prefix. */
export const MAX_ERROR_CHARS = 300;
