import type { StoredEvent } from '../events.js';
import type { DeliveryRecord, DeliveryState, NotificationFilter, OncePerField, SinkKind, SubscriptionRecord } from './model.js';

/** A subscription to insert (the store stamps its times and bumps the routing generation in the same transaction). */
export interface NewSubscription {
  id: string;
  name: string;
  sinkKind: SinkKind;
  url: string;
  secret: string;
  channel: string;
  filter: NotificationFilter;
  oncePer: readonly OncePerField[];
  createdBy: string | null;
}

export type SubscriptionChange = Partial<Pick<NewSubscription, 'name' | 'sinkKind' | 'url' | 'secret' | 'channel' | 'filter' | 'oncePer'>>;

/** A delivery with the event it carries (read from the Event table, never from a cache). */
export interface DeliveryWithEvent extends DeliveryRecord {
  event: StoredEvent;
}

/** A delivery due now, with what sending it needs besides its subscription. */
export interface DueDelivery extends DeliveryWithEvent {
  /** SLACK: the thread of the event's rollout for this subscription, once its first message has one. */
  threadTs: string | null;
}

/** Which deliveries `listDeliveries` returns; every given condition must hold. */
export interface DeliveryFilter {
  subscriptionId?: string;
  states?: readonly DeliveryState[];
  eventId?: number;
  rolloutId?: string;
}

/** What one attempt came to (the dispatcher decides; the store records). */
export interface AttemptOutcome {
  state: 'PENDING' | 'DELIVERED' | 'DEAD_LETTER';
  at: Date;
  statusCode: number | null;
  error: string | null;
  /** PENDING: when to try again. */
  nextAttemptAt: Date | null;
  /** SLACK: the thread this message started (its answer's `ts`), kept for the rollout's next messages. */
  thread?: { rolloutId: string; ts: string };
}

/** Replay: deliveries by id, or a subscription's deliveries for a range of events in the given states. */
export type ReplaySelection = { ids: readonly number[] } | { subscriptionId: string; fromEventId: number; toEventId: number; states: readonly DeliveryState[] };

/** Per subscription: its deliveries counted by state. */
export interface DeliveryCounts {
  pending: number;
  delivered: number;
  deadLettered: number;
  cancelled: number;
}

export const NO_DELIVERIES: DeliveryCounts = { pending: 0, delivered: 0, deadLettered: 0, cancelled: 0 };

/**
 * Where subscriptions and the outbox are kept (store/sqlite/SqliteNotificationStore.ts,
 * store/postgres/PgNotificationStore.ts; one contract suite, test/store/notificationContract.ts). The outbox rows
 * themselves are written by HistoryStore.transactionWithEvents, in the transaction that appends their events.
 */
export interface NotificationStore {
  /** Inserts a subscription and bumps the routing generation in one transaction. */
  insertSubscription(row: NewSubscription, now: Date): Promise<SubscriptionRecord>;
  /** Changes a subscription that is not deleted (undefined when there is none) and bumps the routing generation. */
  updateSubscription(id: string, change: SubscriptionChange, now: Date): Promise<SubscriptionRecord | undefined>;
  /**
   * Marks the subscription deleted (kept, so its deliveries stay visible), cancels its pending deliveries and bumps
   * the routing generation, in one transaction. Undefined when there is no such subscription or it is deleted already.
   */
  deleteSubscription(id: string, now: Date): Promise<SubscriptionRecord | undefined>;
  /** Deleted ones too. */
  findSubscription(id: string): Promise<SubscriptionRecord | undefined>;
  /** Subscriptions not deleted with id > afterId, by id. */
  listSubscriptions(afterId: string | undefined, limit: number): Promise<SubscriptionRecord[]>;
  countSubscriptions(): Promise<number>;
  /** Ids of the subscriptions not deleted (the dispatcher's keys). */
  subscriptionIds(): Promise<string[]>;
  /** Subscriptions without deliveries are absent. */
  deliveryCounts(ids: readonly string[]): Promise<Map<string, DeliveryCounts>>;
  /** Deliveries with id < beforeId, newest first, each with its event. */
  listDeliveries(filter: DeliveryFilter, beforeId: number | undefined, limit: number): Promise<DeliveryWithEvent[]>;
  findDelivery(id: number): Promise<DeliveryWithEvent | undefined>;
  /**
   * Up to `limit` PENDING deliveries of the subscription due at `now`, soonest first; of a lane only its first (by
   * event id) pending delivery, so that a lane is sent in order, one at a time.
   */
  dueDeliveries(subscriptionId: string, now: Date, limit: number): Promise<DueDelivery[]>;
  /** When the subscription's next due delivery (of dueDeliveries: a lane's first) is due; undefined when none is pending. */
  nextAttemptAt(subscriptionId: string): Promise<Date | undefined>;
  /**
   * Records an attempt on a delivery that is still PENDING with `attempts` attempts (so a replay or a cancellation made
   * meanwhile wins); counts the attempt and notes it on the subscription (its last attempt). Returns whether it was
   * recorded.
   */
  recordAttempt(id: number, attempts: number, outcome: AttemptOutcome): Promise<boolean>;
  /** Makes the selected deliveries PENDING again, due at `now`, with no attempts; returns how many. Never CANCELLED ones. */
  replay(selection: ReplaySelection, now: Date): Promise<number>;
  /** PENDING deliveries: how many, and when the oldest was written (the queue's age). */
  queueStats(): Promise<{ pending: number; oldestCreatedAt: Date | undefined }>;
  /** Deletes deliveries that are no longer pending and were written before `cutoff`; returns how many. */
  pruneBefore(cutoff: Date): Promise<number>;
}
