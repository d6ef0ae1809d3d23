import { dateOf, sqlDate, type Sql, type SqlValue } from './Sql.js';
import { clusterOfEvent, type EventFilter, type NewEvent, type RolloutKind, type StoredEvent, type EventType } from '../domain/events.js';
import type { EventPage } from '../domain/historyPort.js';
import { readEventsAfter, readEventsBefore, type EventRead } from './eventReads.js';

interface EventRow {
  id: number;
  type: string;
  rolloutId: string | null;
  kind: string | null;
  namespace: string | null;
  name: string | null;
  cluster: string | null;
  payload: string;
  createdAt: Date;
}

export function toStoredEvent(row: EventRow): StoredEvent {
  return {
    id: row.id,
    type: row.type as EventType,
    rolloutId: row.rolloutId,
    kind: row.kind as RolloutKind | null,
    namespace: row.namespace,
    name: row.name,
    cluster: row.cluster,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    createdAt: row.createdAt,
  };
}

/**
 * Inserts the events in order on rollplane's own connection (inside the caller's transaction); ids come back in
 * insertion order (AUTOINCREMENT, one writer at a time). Stamped no earlier than the last event, so that createdAt
 * never decreases as ids grow even when the clock is set back: a `since` filter is read as a starting id
 * (store/eventReads.ts).
 */
export function insertEvents(sql: Sql, events: readonly NewEvent[], clock = new Date()): StoredEvent[] {
  if (events.length === 0) return [];
  const latest = sql.get<{ createdAt: string }>('SELECT "createdAt" FROM "Event" ORDER BY "id" DESC LIMIT 1')?.createdAt;
  const latestAt = latest === undefined ? undefined : dateOf(latest);
  const now = latestAt !== undefined && latestAt > clock ? latestAt : clock;
  const createdAt = sqlDate(now);
  return events.map((event) => {
    const payload = JSON.stringify(event.payload ?? {});
    const cluster = clusterOfEvent(event);
    const { lastInsertRowid } = sql.run(
      'INSERT INTO "Event" ("type", "rolloutId", "kind", "namespace", "name", "cluster", "payload", "createdAt") VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      event.type,
      event.rolloutId ?? null,
      event.kind ?? null,
      event.namespace ?? null,
      event.name ?? null,
      cluster,
      payload,
      createdAt,
    );
    return {
      id: Number(lastInsertRowid),
      type: event.type,
      rolloutId: event.rolloutId ?? null,
      kind: event.kind ?? null,
      namespace: event.namespace ?? null,
      name: event.name ?? null,
      cluster,
      // The stored form, so that a live event and its replay from the store are alike.
      payload: JSON.parse(payload) as Record<string, unknown>,
      createdAt: now,
    };
  });
}

/** A row of `SELECT ${EVENT_COLUMNS}` in raw mode (`Sql.rawAll`): a page is built straight from the arrays. */
function eventFromRaw(v: readonly unknown[]): StoredEvent {
  return {
    id: v[0] as number,
    type: v[1] as EventType,
    rolloutId: v[2] as string | null,
    kind: v[3] as RolloutKind | null,
    namespace: v[4] as string | null,
    name: v[5] as string | null,
    cluster: v[8] as string | null,
    payload: JSON.parse(v[6] as string) as Record<string, unknown>,
    createdAt: dateOf(v[7] as string),
  };
}

/**
 * Runs a read of store/eventReads.ts on rollplane's own connection: prepared SQL, synchronously (ADR 9). Each of its
 * statements is bounded (EVENT_SCAN_WINDOW rows at most), so one read holds the event loop for about a millisecond
 * at most.
 */
function runRead(sql: Sql, read: EventRead): EventPage {
  let step = read.next();
  while (!step.done) {
    const query = step.value;
    // No arrays: they are PostgreSQL's alone (eventReads.ts builds none for SQLite).
    const params = query.params.map((p) => (p instanceof Date ? sqlDate(p) : (p as SqlValue)));
    step = read.next(
      query.returns === 'events' ? sql.rawAll(query.text, params).map(eventFromRaw) : (sql.get<{ id: number | null }>(query.text, ...params)?.id ?? null),
    );
  }
  return step.value;
}

/** One bounded read of the events after `afterId` (exclusive), oldest first. */
export function listEventsAfter(sql: Sql, filter: EventFilter, afterId: number | undefined, limit: number): EventPage {
  return runRead(sql, readEventsAfter(filter, afterId, limit, 'sqlite'));
}

/** One bounded read of the events before `beforeId` (exclusive; the newest when undefined), newest first. */
export function listEventsBefore(sql: Sql, filter: EventFilter, beforeId: number | undefined, limit: number): EventPage {
  return runRead(sql, readEventsBefore(filter, beforeId, limit, 'sqlite'));
}

export function lastEventId(sql: Sql): number {
  return sql.get<{ id: number | null }>('SELECT MAX("id") AS id FROM "Event"')!.id ?? 0;
}
