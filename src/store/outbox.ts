import type { StoredEvent } from '../domain/events.js';
import type { Route } from '../domain/notifications/model.js';
import type { OutboxEntry } from '../domain/notifications/routing.js';
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
