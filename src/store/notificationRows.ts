import type { EventType, RolloutKind, StoredEvent } from '../domain/events.js';
import type { DeliveryRecord, DeliveryState, NotificationFilter, OncePerField, Route, SinkKind, SubscriptionRecord } from '../domain/notifications/model.js';
import type { DeliveryCounts, DeliveryFilter } from '../domain/notifications/NotificationStore.js';

/**
 * The notification tables' statements and row mapping, shared by the SQLite and PostgreSQL stores: the statements are
 * written with `?` placeholders (PostgreSQL numbers them, pool.ts `numbered`), and every date is bound as text (ISO
 * 8601 in UTC), which sorts as time does on both.
 */

/** The routing generation's row (NotificationRouting). */
export const ROUTING_ID = 'subscriptions';
export const READ_GENERATION = `SELECT "generation" FROM "NotificationRouting" WHERE "id" = '${ROUTING_ID}'`;
export const BUMP_GENERATION = `UPDATE "NotificationRouting" SET "generation" = "generation" + 1 WHERE "id" = '${ROUTING_ID}'`;
/** The routes and the generation they are at, read together (one snapshot). */
export const READ_ROUTES = `SELECT g."generation", s."id", s."sinkKind", s."filter", s."oncePer"
  FROM "NotificationRouting" g LEFT JOIN "NotificationSubscription" s ON s."deletedAt" IS NULL
 WHERE g."id" = '${ROUTING_ID}' ORDER BY s."id"`;

export const SUBSCRIPTION_COLUMNS =
  '"id", "name", "sinkKind", "url", "secret", "channel", "filter", "oncePer", "createdBy", "createdAt", "updatedAt", "deletedAt", "lastAttemptAt", "lastStatusCode", "lastError", "lastDeliveredAt"';
export const DELIVERY_COLUMNS =
  '"id", "subscriptionId", "eventId", "onceKey", "lane", "state", "attempts", "nextAttemptAt", "lastAttemptAt", "lastStatusCode", "lastError", "deliveredAt", "createdAt"';
const D_COLUMNS = DELIVERY_COLUMNS.split(', ')
  .map((c) => `d.${c}`)
  .join(', ');
const E_COLUMNS = `e."type" AS "e_type", e."rolloutId" AS "e_rolloutId", e."kind" AS "e_kind", e."namespace" AS "e_namespace", e."name" AS "e_name",
  e."payload" AS "e_payload", e."createdAt" AS "e_createdAt", e."cluster" AS "e_cluster"`;

export type DateValue = Date | string;

export interface SubscriptionRow {
  id: string;
  name: string;
  sinkKind: string;
  url: string;
  secret: string;
  channel: string;
  filter: string;
  oncePer: string;
  createdBy: string | null;
  createdAt: DateValue;
  updatedAt: DateValue;
  deletedAt: DateValue | null;
  lastAttemptAt: DateValue | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastDeliveredAt: DateValue | null;
}

export interface DeliveryRow {
  id: number;
  subscriptionId: string;
  eventId: number;
  onceKey: string | null;
  lane: string | null;
  state: string;
  attempts: number;
  nextAttemptAt: DateValue | null;
  lastAttemptAt: DateValue | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: DateValue | null;
  createdAt: DateValue;
}

export interface DeliveryEventRow extends DeliveryRow {
  e_type: string;
  e_rolloutId: string | null;
  e_kind: string | null;
  e_namespace: string | null;
  e_name: string | null;
  e_cluster: string | null;
  e_payload: string;
  e_createdAt: DateValue;
  threadTs?: string | null;
}

export function parseFilter(text: string): NotificationFilter {
  const raw = JSON.parse(text) as Partial<NotificationFilter>;
  return {
    types: raw.types ?? [],
    kinds: raw.kinds ?? [],
    clusters: raw.clusters ?? [],
    clusterSelector: raw.clusterSelector ?? '',
    states: raw.states ?? [],
    rolloutIds: raw.rolloutIds ?? [],
  };
}

export function routeOf(row: { id: string; sinkKind: string; filter: string; oncePer: string }): Route {
  return { subscriptionId: row.id, sinkKind: row.sinkKind as SinkKind, filter: parseFilter(row.filter), oncePer: JSON.parse(row.oncePer) as OncePerField[] };
}

export function subscriptionOf(row: SubscriptionRow, date: (value: DateValue) => Date): SubscriptionRecord {
  return {
    ...routeOf(row),
    id: row.id,
    name: row.name,
    url: row.url,
    secret: row.secret,
    channel: row.channel,
    createdBy: row.createdBy,
    createdAt: date(row.createdAt),
    updatedAt: date(row.updatedAt),
    deletedAt: row.deletedAt === null ? null : date(row.deletedAt),
    lastAttemptAt: row.lastAttemptAt === null ? null : date(row.lastAttemptAt),
    lastStatusCode: row.lastStatusCode,
    lastError: row.lastError,
    lastDeliveredAt: row.lastDeliveredAt === null ? null : date(row.lastDeliveredAt),
  };
}

export function deliveryOf(row: DeliveryRow, date: (value: DateValue) => Date): DeliveryRecord {
  const orNull = (value: DateValue | null) => (value === null ? null : date(value));
  return {
    id: row.id,
    subscriptionId: row.subscriptionId,
    eventId: row.eventId,
    onceKey: row.onceKey,
    lane: row.lane,
    state: row.state as DeliveryState,
    attempts: row.attempts,
    nextAttemptAt: orNull(row.nextAttemptAt),
    lastAttemptAt: orNull(row.lastAttemptAt),
    lastStatusCode: row.lastStatusCode,
    lastError: row.lastError,
    deliveredAt: orNull(row.deliveredAt),
    createdAt: date(row.createdAt),
  };
}

export function eventOfDelivery(row: DeliveryEventRow, date: (value: DateValue) => Date): StoredEvent {
  return {
    id: row.eventId,
    type: row.e_type as EventType,
    rolloutId: row.e_rolloutId,
    kind: row.e_kind as RolloutKind | null,
    namespace: row.e_namespace,
    name: row.e_name,
    cluster: row.e_cluster,
    payload: JSON.parse(row.e_payload) as Record<string, unknown>,
    createdAt: date(row.e_createdAt),
  };
}

/** A page of deliveries with their events, newest first (the `notificationDeliveries` query). */
export function deliveryListStatement(filter: DeliveryFilter, beforeId: number | undefined, limit: number): { text: string; params: (string | number)[] } {
  const conditions: string[] = ['d."id" < ?'];
  const params: (string | number)[] = [beforeId ?? 2 ** 31 - 1];
  if (filter.subscriptionId !== undefined) {
    conditions.push('d."subscriptionId" = ?');
    params.push(filter.subscriptionId);
  }
  if (filter.states && filter.states.length > 0) {
    conditions.push(`d."state" IN (${filter.states.map(() => '?').join(', ')})`);
    params.push(...filter.states);
  }
  if (filter.eventId !== undefined) {
    conditions.push('d."eventId" = ?');
    params.push(filter.eventId);
  }
  if (filter.rolloutId !== undefined) {
    conditions.push('e."rolloutId" = ?');
    params.push(filter.rolloutId);
  }
  params.push(limit);
  return {
    text: `SELECT ${D_COLUMNS}, ${E_COLUMNS} FROM "NotificationDelivery" d JOIN "Event" e ON e."id" = d."eventId"
            WHERE ${conditions.join(' AND ')} ORDER BY d."id" DESC LIMIT ?`,
    params,
  };
}

export const FIND_DELIVERY = `SELECT ${D_COLUMNS}, ${E_COLUMNS} FROM "NotificationDelivery" d JOIN "Event" e ON e."id" = d."eventId" WHERE d."id" = ?`;

/**
 * Due deliveries of one subscription, with their events and their rollout's thread. Of a lane, only the first pending
 * delivery (by event id) is due: the NOT EXISTS walks the (lane, state, eventId) index.
 */
export const DUE_DELIVERIES = `SELECT ${D_COLUMNS}, ${E_COLUMNS}, t."threadTs" AS "threadTs"
  FROM "NotificationDelivery" d
  JOIN "Event" e ON e."id" = d."eventId"
  LEFT JOIN "NotificationThread" t ON t."subscriptionId" = d."subscriptionId" AND t."rolloutId" = e."rolloutId"
 WHERE d."subscriptionId" = ? AND d."state" = 'PENDING' AND d."nextAttemptAt" <= ?
   AND (d."lane" IS NULL OR NOT EXISTS (
     SELECT 1 FROM "NotificationDelivery" p WHERE p."lane" = d."lane" AND p."state" = 'PENDING' AND p."eventId" < d."eventId"))
 ORDER BY d."nextAttemptAt", d."id" LIMIT ?`;

/** When the next of DUE_DELIVERIES will be due (a lane's later deliveries wait for its first, whenever they are due). */
export const NEXT_ATTEMPT_AT = `SELECT MIN(d."nextAttemptAt") AS "at" FROM "NotificationDelivery" d
 WHERE d."subscriptionId" = ? AND d."state" = 'PENDING'
   AND (d."lane" IS NULL OR NOT EXISTS (
     SELECT 1 FROM "NotificationDelivery" p WHERE p."lane" = d."lane" AND p."state" = 'PENDING' AND p."eventId" < d."eventId"))`;

export const RECORD_ATTEMPT = `UPDATE "NotificationDelivery"
   SET "state" = ?, "attempts" = "attempts" + 1, "lastAttemptAt" = ?, "lastStatusCode" = ?, "lastError" = ?, "nextAttemptAt" = ?,
       "deliveredAt" = CASE WHEN ? = 'DELIVERED' THEN ? ELSE "deliveredAt" END
 WHERE "id" = ? AND "state" = 'PENDING' AND "attempts" = ?`;

export const CANCEL_PENDING = `UPDATE "NotificationDelivery" SET "state" = 'CANCELLED', "nextAttemptAt" = NULL WHERE "subscriptionId" = ? AND "state" = 'PENDING'`;

export const REPLAY_RANGE_PREFIX = `UPDATE "NotificationDelivery" SET "state" = 'PENDING', "attempts" = 0, "nextAttemptAt" = ?, "lastError" = NULL, "lastStatusCode" = NULL
 WHERE "state" <> 'CANCELLED' AND "subscriptionId" IN (SELECT "id" FROM "NotificationSubscription" WHERE "deletedAt" IS NULL)`;

/** Per subscription: its deliveries counted by state. */
export const countsByState = (ids: readonly string[]) =>
  `SELECT "subscriptionId", "state", COUNT(*) AS n FROM "NotificationDelivery" WHERE "subscriptionId" IN (${ids.map(() => '?').join(', ')}) GROUP BY "subscriptionId", "state"`;

/** The subscription's last attempt, as recordAttempt keeps it on the subscription's row. */
export const NOTE_ATTEMPT = `UPDATE "NotificationSubscription" SET "lastAttemptAt" = ?, "lastStatusCode" = ?, "lastError" = ?,
  "lastDeliveredAt" = CASE WHEN ? = 'DELIVERED' THEN ? ELSE "lastDeliveredAt" END WHERE "id" = ?`;

export const QUEUE_STATS = `SELECT COUNT(*) AS n, MIN("createdAt") AS "oldest" FROM "NotificationDelivery" WHERE "state" = 'PENDING'`;

/** Adds a row of countsByState to a subscription's counts. */
export function addCount(counts: DeliveryCounts, state: string, n: number): void {
  if (state === 'PENDING') counts.pending += n;
  else if (state === 'DELIVERED') counts.delivered += n;
  else if (state === 'DEAD_LETTER') counts.deadLettered += n;
  else if (state === 'CANCELLED') counts.cancelled += n;
}
