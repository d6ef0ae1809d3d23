import type { PrismaClient } from './db.js';
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

export async function insertEvents(tx: Tx, events: readonly NewEvent[]): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  // One INSERT … RETURNING for the batch; ids come back in insertion order (AUTOINCREMENT, one writer).
  const rows = await tx.event.createManyAndReturn({
    data: events.map((event) => ({
      type: event.type,
      rolloutId: event.rolloutId ?? null,
      kind: event.kind ?? null,
      namespace: event.namespace ?? null,
      name: event.name ?? null,
      payload: JSON.stringify(event.payload ?? {}),
    })),
  });
  return rows.sort((a, b) => a.id - b.id).map(toStoredEvent);
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
