import type { PrismaClient } from './db.js';
import { sqlDate, type Sql } from './Sql.js';
import type { EventFilter, NewEvent, RolloutKind, StoredEvent, EventType } from '../domain/events.js';

/** Transaction client or the full client: both have the model delegates used here. */
export type Tx = Pick<PrismaClient, 'event' | 'rollout' | 'rolloutTarget' | 'revision' | 'idempotencyKey' | 'job'>;

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

function whereFor(filter: EventFilter, afterId: number | undefined) {
  return {
    ...(afterId !== undefined ? { id: { gt: afterId } } : {}),
    ...(filter.types && filter.types.length > 0 ? { type: { in: [...filter.types] } } : {}),
    ...(filter.rolloutId !== undefined ? { rolloutId: filter.rolloutId } : {}),
    ...(filter.kind !== undefined ? { kind: filter.kind } : {}),
    ...(filter.namespace !== undefined ? { namespace: filter.namespace } : {}),
    ...(filter.name !== undefined ? { name: filter.name } : {}),
    ...(filter.since !== undefined ? { createdAt: { gte: filter.since } } : {}),
  };
}

/** Events after `afterId` (exclusive), oldest first. */
export async function listEventsAfter(prisma: Tx, filter: EventFilter, afterId: number | undefined, limit: number): Promise<StoredEvent[]> {
  const rows = await prisma.event.findMany({ where: whereFor(filter, afterId), orderBy: { id: 'asc' }, take: limit });
  return rows.map(toStoredEvent);
}

/** Events before `beforeId` (exclusive), newest first. */
export async function listEventsBefore(prisma: Tx, filter: EventFilter, beforeId: number | undefined, limit: number): Promise<StoredEvent[]> {
  const where = { ...whereFor(filter, undefined), ...(beforeId !== undefined ? { id: { lt: beforeId } } : {}) };
  const rows = await prisma.event.findMany({ where, orderBy: { id: 'desc' }, take: limit });
  return rows.map(toStoredEvent);
}

export async function lastEventId(prisma: Tx): Promise<number> {
  const row = await prisma.event.findFirst({ orderBy: { id: 'desc' }, select: { id: true } });
  return row?.id ?? 0;
}
