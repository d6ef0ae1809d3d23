import type { StoredEvent } from '../domain/events.js';
import type { Route } from '../domain/notifications/model.js';
import {
  type ClusterFacts,
  clusterFactsWanted,
  clustersToLabel,
  NO_CLUSTER_FACTS,
  type OutboxEntry,
  type RoutableEvent,
} from '../domain/notifications/routing.js';
import { routeOf } from './notificationRows.js';
import { sqlDate, type Sql } from './Sql.js';
import { READ_GENERATION, READ_ROUTES } from './notificationRows.js';

/** A row of READ_ROUTES: the generation, and one subscription (null columns when there is none). */
export interface RouteRow {
  generation: number;
  id: string | null;
  sinkKind: string | null;
  filter: string | null;
  oncePer: string | null;
}

/**
 * The subscriptions a writer of events routes by, as of a generation of NotificationRouting. Every change of the
 * subscriptions bumps the generation in its own transaction, so a transaction that reads the generation (SQLite: in
 * the transaction; PostgreSQL: in the round trip of its BEGIN) knows whether these routes are current without reading
 * the subscriptions: a subscription committed before the transaction began routes its events (docs/adr/0035).
 */
export class RouteCache {
  private generation = -1;
  private routes: readonly Route[] = [];

  /** Whether the routes are older than `generation` (read them again with READ_ROUTES and `update`). */
  isStale(generation: number | undefined): boolean {
    return generation !== undefined && generation > this.generation;
  }

  /** Takes the routes READ_ROUTES read, unless newer ones are here already (concurrent transactions read in any order). */
  update(rows: readonly RouteRow[]): void {
    const generation = rows[0]?.generation;
    if (generation === undefined || generation <= this.generation) return;
    this.generation = generation;
    this.routes = rows.filter((r) => r.id !== null).map((r) => routeOf(r as { id: string; sinkKind: string; filter: string; oncePer: string }));
  }

  current(): readonly Route[] {
    return this.routes;
  }
}

/** SQLite, inside the transaction (one writer: the generation read here is the one this transaction commits under). */
export function currentRoutes(sql: Sql, cache: RouteCache): readonly Route[] {
  const generation = sql.get<{ generation: number }>(READ_GENERATION)?.generation;
  if (cache.isStale(generation)) cache.update(sql.all<RouteRow>(READ_ROUTES));
  return cache.current();
}

/**
 * SQLite: the outbox rows of the events just inserted, in the same transaction. A repeat of a once-per key already
 * in the table is ignored (the unique index on (subscriptionId, onceKey)). Due at once.
 */
export function insertDeliveries(sql: Sql, entries: readonly OutboxEntry[], stored: readonly StoredEvent[], now: Date): void {
  if (entries.length === 0) return;
  const at = sqlDate(now);
  for (const entry of entries) {
    sql.run(
      `INSERT OR IGNORE INTO "NotificationDelivery" ("subscriptionId", "eventId", "onceKey", "lane", "state", "attempts", "nextAttemptAt", "createdAt")
       VALUES (?, ?, ?, ?, 'PENDING', 0, ?, ?)`,
      entry.subscriptionId,
      stored[entry.eventIndex]!.id,
      entry.onceKey,
      entry.lane,
      at,
      at,
    );
  }
}

/** The rows ClusterFacts are made of (both stores read the same two statements). */
export interface RolloutClusterRow {
  rolloutId: string;
  cluster: string;
}
export interface ClusterLabelsRow {
  name: string;
  labels: string;
}

/** `SELECT` of the distinct clusters of the rollouts' targets; `list` is the placeholders of the rollout ids. */
export const rolloutClustersSql = (list: string) => `SELECT DISTINCT "rolloutId", "cluster" FROM "RolloutTarget" WHERE "rolloutId" IN (${list})`;
/** `SELECT` of the clusters' labels; `list` is the placeholders of their names. */
export const clusterLabelsSql = (list: string) => `SELECT "name", "labels" FROM "MemberCluster" WHERE "name" IN (${list})`;

/** The clusters of each rollout, from RolloutClusterRow rows. */
export function clustersByRollout(rows: readonly RolloutClusterRow[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const row of rows) out.set(row.rolloutId, [...(out.get(row.rolloutId) ?? []), row.cluster]);
  return out;
}

export function labelsByCluster(rows: readonly ClusterLabelsRow[]): Map<string, Record<string, string>> {
  return new Map(rows.map((r) => [r.name, JSON.parse(r.labels) as Record<string, string>]));
}

/**
 * SQLite, inside the transaction: what routing by cluster needs (routing.ts ClusterFacts), read only when a
 * subscription selects clusters — two small reads, by RolloutTarget's (rolloutId, …) index and MemberCluster's key.
 */
export function clusterFactsOn(sql: Sql, events: readonly RoutableEvent[], routes: readonly Route[]): ClusterFacts {
  const wanted = clusterFactsWanted(events, routes);
  if (!wanted) return NO_CLUSTER_FACTS;
  const placeholders = (values: readonly string[]) => values.map(() => '?').join(', ');
  const clustersOfRollout =
    wanted.rolloutIds.length > 0
      ? clustersByRollout(sql.all<RolloutClusterRow>(rolloutClustersSql(placeholders(wanted.rolloutIds)), ...wanted.rolloutIds))
      : new Map();
  const clusters = wanted.labels ? clustersToLabel(events, clustersOfRollout) : [];
  const labelsOf = clusters.length > 0 ? labelsByCluster(sql.all<ClusterLabelsRow>(clusterLabelsSql(placeholders(clusters)), ...clusters)) : new Map();
  return { clustersOfRollout, labelsOf };
}
