import { dateOf, sqlDate, type Sql, type SqlValue } from './Sql.js';
import type { EventFilter, NewEvent, RolloutKind, StoredEvent, EventType } from '../domain/events.js';

interface EventRow {
  id: number;
  type: string;
  rolloutId: string | null;
  kind: string | null;
  namespace: string | null;
  name: string | null;
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
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    createdAt: row.createdAt,
  };
}

/**
 * Inserts the events in order on rollplane's own connection (inside the caller's transaction); ids come back in
 * insertion order (AUTOINCREMENT, one writer at a time).
 */
export function insertEvents(sql: Sql, events: readonly NewEvent[], now = new Date()): StoredEvent[] {
  const createdAt = sqlDate(now);
  return events.map((event) => {
    const payload = JSON.stringify(event.payload ?? {});
    const { lastInsertRowid } = sql.run(
      'INSERT INTO "Event" ("type", "rolloutId", "kind", "namespace", "name", "payload", "createdAt") VALUES (?, ?, ?, ?, ?, ?, ?)',
      event.type,
      event.rolloutId ?? null,
      event.kind ?? null,
      event.namespace ?? null,
      event.name ?? null,
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
      // The stored form, so that a live event and its replay from the store are alike.
      payload: JSON.parse(payload) as Record<string, unknown>,
      createdAt: now,
    };
  });
}

function whereOf(filter: EventFilter): { conditions: string[]; params: SqlValue[] } {
  const conditions: string[] = [];
  const params: SqlValue[] = [];
  if (filter.types && filter.types.length > 0) {
    conditions.push(`"type" IN (${filter.types.map(() => '?').join(', ')})`);
    params.push(...filter.types);
  }
  for (const column of ['rolloutId', 'kind', 'namespace', 'name'] as const) {
    const value = filter[column];
    if (value !== undefined) {
      conditions.push(`"${column}" = ?`);
      params.push(value);
    }
  }
  if (filter.since !== undefined) {
    conditions.push('"createdAt" >= ?');
    params.push(sqlDate(filter.since));
  }
  return { conditions, params };
}

/**
 * The Event columns in StoredEvent's order. Named rather than `*`, and read in raw mode (`Sql.rawAll`): a page is built
 * straight from the arrays, without better-sqlite3's row object and a spread of it.
 */
export const EVENT_COLUMNS = '"id", "type", "rolloutId", "kind", "namespace", "name", "payload", "createdAt"';

/** A row of `SELECT ${EVENT_COLUMNS}` in raw mode. */
function eventFromRaw(v: readonly unknown[]): StoredEvent {
  return {
    id: v[0] as number,
    type: v[1] as EventType,
    rolloutId: v[2] as string | null,
    kind: v[3] as RolloutKind | null,
    namespace: v[4] as string | null,
    name: v[5] as string | null,
    payload: JSON.parse(v[6] as string) as Record<string, unknown>,
    createdAt: dateOf(v[7] as string),
  };
}

/**
 * Events after `afterId` (exclusive), oldest first. Prepared SQL on rollplane's own connection (Prisma would compile
 * each query on the event loop); every filter is served by an index of Event (test/store/queryPlans.test.ts).
 */
export function listEventsAfter(sql: Sql, filter: EventFilter, afterId: number | undefined, limit: number): StoredEvent[] {
  const { text, params } = eventListStatement(filter, startAfter(sql, filter, afterId), limit);
  return sql.rawAll(text, params).map(eventFromRaw);
}

/**
 * With `since`, starts the id range at the first event at or after it (found through the createdAt index), so that a
 * page of recent history does not walk every older event in id order. Exact: any event created at or after `since` has
 * an id at least that first one's.
 */
function startAfter(sql: Sql, filter: EventFilter, afterId: number | undefined): number | undefined {
  if (filter.since === undefined) return afterId;
  const first = sql.get<{ id: number | null }>('SELECT MIN("id") AS id FROM "Event" WHERE "createdAt" >= ?', sqlDate(filter.since))!.id;
  if (first === null) return Number.MAX_SAFE_INTEGER;
  return Math.max(afterId ?? 0, first - 1);
}

/**
 * The statement behind listEventsAfter (exported for the query-plan test). Several types become one ordered, limited
 * branch per type (each walks the (type, id) index), merged and cut again: an `IN` over types would sort every match.
 */
export function eventListStatement(filter: EventFilter, afterId: number | undefined, limit: number): { text: string; params: SqlValue[] } {
  const types = filter.types ?? [];
  if (types.length > 1) {
    const branches = types.map((type) => eventListStatement({ ...filter, types: [type] }, afterId, limit));
    return {
      // Each branch is aliased: PostgreSQL (before 16) requires a name for a subquery in FROM; SQLite accepts one.
      text: `${branches.map((b, i) => `SELECT * FROM (${b.text}) AS b${i}`).join(' UNION ALL ')} ORDER BY "id" ASC LIMIT ?`,
      params: [...branches.flatMap((b) => b.params), limit],
    };
  }
  const { conditions, params } = whereOf(filter);
  conditions.push('"id" > ?');
  params.push(afterId ?? 0);
  return { text: `SELECT ${EVENT_COLUMNS} FROM "Event" WHERE ${conditions.join(' AND ')} ORDER BY "id" ASC LIMIT ?`, params: [...params, limit] };
}

/** Events before `beforeId` (exclusive), newest first. */
export function listEventsBefore(sql: Sql, filter: EventFilter, beforeId: number | undefined, limit: number): StoredEvent[] {
  const { text, params } = eventListBeforeStatement(filter, beforeId, limit);
  return sql.rawAll(text, params).map(eventFromRaw);
}

/** The statement behind listEventsBefore (exported for the query-plan test). */
export function eventListBeforeStatement(filter: EventFilter, beforeId: number | undefined, limit: number): { text: string; params: SqlValue[] } {
  const { conditions, params } = whereOf(filter);
  if (beforeId !== undefined) {
    conditions.push('"id" < ?');
    params.push(beforeId);
  }
  const where = conditions.length ? `WHERE ${conditions.join(' AND ')}` : '';
  return { text: `SELECT ${EVENT_COLUMNS} FROM "Event" ${where} ORDER BY "id" DESC LIMIT ?`, params: [...params, limit] };
}

export function lastEventId(sql: Sql): number {
  return sql.get<{ id: number | null }>('SELECT MAX("id") AS id FROM "Event"')!.id ?? 0;
}
