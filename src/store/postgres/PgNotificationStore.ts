import type pg from 'pg';
import type { SubscriptionRecord } from '../../domain/notifications/model.js';
import {
  type AttemptOutcome,
  type DeliveryCounts,
  type DeliveryFilter,
  type DeliveryWithEvent,
  type DueDelivery,
  type NewSubscription,
  NO_DELIVERIES,
  type NotificationStore,
  type ReplaySelection,
  type SubscriptionChange,
} from '../../domain/notifications/NotificationStore.js';
import {
  addCount,
  BUMP_GENERATION,
  CANCEL_PENDING,
  countsByState,
  type DeliveryEventRow,
  deliveryListStatement,
  deliveryOf,
  DUE_DELIVERIES,
  eventOfDelivery,
  FIND_DELIVERY,
  NEXT_ATTEMPT_AT,
  NOTE_ATTEMPT,
  QUEUE_STATS,
  RECORD_ATTEMPT,
  REPLAY_RANGE_PREFIX,
  SUBSCRIPTION_COLUMNS,
  type SubscriptionRow,
  subscriptionOf,
} from '../notificationRows.js';
import { unavailable } from './PgHistoryStore.js';
import { isoOf, numbered, watchLentConnection } from './pool.js';

const date = (value: Date | string) => (typeof value === 'string' ? new Date(value) : value);
const FIND_SUBSCRIPTION = `SELECT ${SUBSCRIPTION_COLUMNS} FROM "NotificationSubscription" WHERE "id" = $1`;

function withEvent(row: DeliveryEventRow): DeliveryWithEvent {
  return { ...deliveryOf(row, date), event: eventOfDelivery(row, date) };
}

type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

async function rows<T extends pg.QueryResultRow>(db: Queryable, text: string, params: unknown[] = []): Promise<T[]> {
  try {
    return (await db.query<T>(numbered(text), params)).rows;
  } catch (error) {
    throw unavailable(error);
  }
}

async function changes(db: Queryable, text: string, params: unknown[]): Promise<number> {
  try {
    return (await db.query(numbered(text), params)).rowCount ?? 0;
  } catch (error) {
    throw unavailable(error);
  }
}

/** Subscriptions and the outbox on PostgreSQL, on the history's pg pool. */
export class PgNotificationStore implements NotificationStore {
  constructor(private readonly pool: pg.Pool) {}

  /** BEGIN … COMMIT on one pooled connection; rolled back when `body` throws. */
  private async transaction<T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw unavailable(error);
    }
    const giveBack = watchLentConnection(client);
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw unavailable(error);
    } finally {
      client.release(broken ?? giveBack());
    }
  }

  private async find(db: Queryable, id: string): Promise<SubscriptionRecord | undefined> {
    const [row] = await rows<SubscriptionRow>(db, FIND_SUBSCRIPTION, [id]);
    return row && subscriptionOf(row, date);
  }

  insertSubscription(row: NewSubscription, now: Date): Promise<SubscriptionRecord> {
    return this.transaction(async (client) => {
      await changes(
        client,
        `INSERT INTO "NotificationSubscription" ("id", "name", "sinkKind", "url", "secret", "channel", "filter", "oncePer", "createdBy", "createdAt", "updatedAt")
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          row.id,
          row.name,
          row.sinkKind,
          row.url,
          row.secret,
          row.channel,
          JSON.stringify(row.filter),
          JSON.stringify(row.oncePer),
          row.createdBy,
          isoOf(now),
          isoOf(now),
        ],
      );
      await changes(client, BUMP_GENERATION, []);
      return (await this.find(client, row.id))!;
    });
  }

  updateSubscription(id: string, change: SubscriptionChange, now: Date): Promise<SubscriptionRecord | undefined> {
    return this.transaction(async (client) => {
      const [locked] = await rows<SubscriptionRow>(client, `SELECT ${SUBSCRIPTION_COLUMNS} FROM "NotificationSubscription" WHERE "id" = ? FOR UPDATE`, [id]);
      if (!locked || locked.deletedAt !== null) return undefined;
      const next = { ...subscriptionOf(locked, date), ...change };
      await changes(
        client,
        `UPDATE "NotificationSubscription" SET "name" = ?, "sinkKind" = ?, "url" = ?, "secret" = ?, "channel" = ?, "filter" = ?, "oncePer" = ?, "updatedAt" = ?
          WHERE "id" = ?`,
        [next.name, next.sinkKind, next.url, next.secret, next.channel, JSON.stringify(next.filter), JSON.stringify(next.oncePer), isoOf(now), id],
      );
      await changes(client, BUMP_GENERATION, []);
      return this.find(client, id);
    });
  }

  deleteSubscription(id: string, now: Date): Promise<SubscriptionRecord | undefined> {
    return this.transaction(async (client) => {
      const changed = await changes(client, 'UPDATE "NotificationSubscription" SET "deletedAt" = ?, "updatedAt" = ? WHERE "id" = ? AND "deletedAt" IS NULL', [
        isoOf(now),
        isoOf(now),
        id,
      ]);
      if (changed === 0) return undefined;
      await changes(client, CANCEL_PENDING, [id]);
      await changes(client, BUMP_GENERATION, []);
      return this.find(client, id);
    });
  }

  findSubscription(id: string): Promise<SubscriptionRecord | undefined> {
    return this.find(this.pool, id);
  }

  async listSubscriptions(afterId: string | undefined, limit: number): Promise<SubscriptionRecord[]> {
    const found = await rows<SubscriptionRow>(
      this.pool,
      `SELECT ${SUBSCRIPTION_COLUMNS} FROM "NotificationSubscription" WHERE "deletedAt" IS NULL AND "id" > ? ORDER BY "id" LIMIT ?`,
      [afterId ?? '', limit],
    );
    return found.map((row) => subscriptionOf(row, date));
  }

  async countSubscriptions(): Promise<number> {
    return (await rows<{ n: number }>(this.pool, 'SELECT COUNT(*) AS n FROM "NotificationSubscription" WHERE "deletedAt" IS NULL'))[0]!.n;
  }

  async subscriptionIds(): Promise<string[]> {
    return (await rows<{ id: string }>(this.pool, 'SELECT "id" FROM "NotificationSubscription" WHERE "deletedAt" IS NULL ORDER BY "id"')).map((r) => r.id);
  }

  async deliveryCounts(ids: readonly string[]): Promise<Map<string, DeliveryCounts>> {
    const out = new Map<string, DeliveryCounts>();
    if (ids.length === 0) return out;
    for (const row of await rows<{ subscriptionId: string; state: string; n: number }>(this.pool, countsByState(ids), [...ids])) {
      const counts = out.get(row.subscriptionId) ?? { ...NO_DELIVERIES };
      addCount(counts, row.state, row.n);
      out.set(row.subscriptionId, counts);
    }
    return out;
  }

  async listDeliveries(filter: DeliveryFilter, beforeId: number | undefined, limit: number): Promise<DeliveryWithEvent[]> {
    const { text, params } = deliveryListStatement(filter, beforeId, limit);
    return (await rows<DeliveryEventRow>(this.pool, text, params)).map(withEvent);
  }

  async findDelivery(id: number): Promise<DeliveryWithEvent | undefined> {
    const [row] = await rows<DeliveryEventRow>(this.pool, FIND_DELIVERY, [id]);
    return row && withEvent(row);
  }

  async dueDeliveries(subscriptionId: string, now: Date, limit: number): Promise<DueDelivery[]> {
    return (await rows<DeliveryEventRow>(this.pool, DUE_DELIVERIES, [subscriptionId, isoOf(now), limit])).map((row) => ({
      ...withEvent(row),
      threadTs: row.threadTs ?? null,
    }));
  }

  async nextAttemptAt(subscriptionId: string): Promise<Date | undefined> {
    const [row] = await rows<{ at: Date | null }>(this.pool, NEXT_ATTEMPT_AT, [subscriptionId]);
    return row?.at ?? undefined;
  }

  recordAttempt(id: number, attempts: number, outcome: AttemptOutcome): Promise<boolean> {
    return this.transaction(async (client) => {
      const at = isoOf(outcome.at);
      const updated = await rows<{ subscriptionId: string }>(client, `${RECORD_ATTEMPT} RETURNING "subscriptionId"`, [
        outcome.state,
        at,
        outcome.statusCode,
        outcome.error,
        isoOf(outcome.nextAttemptAt),
        outcome.state,
        at,
        id,
        attempts,
      ]);
      if (updated.length === 0) return false;
      const subscriptionId = updated[0]!.subscriptionId;
      await changes(client, NOTE_ATTEMPT, [at, outcome.statusCode, outcome.error, outcome.state, at, subscriptionId]);
      if (outcome.thread) {
        await changes(
          client,
          'INSERT INTO "NotificationThread" ("subscriptionId", "rolloutId", "threadTs", "createdAt") VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
          [subscriptionId, outcome.thread.rolloutId, outcome.thread.ts, at],
        );
      }
      return true;
    });
  }

  async replay(selection: ReplaySelection, now: Date): Promise<number> {
    if ('ids' in selection) {
      if (selection.ids.length === 0) return 0;
      return changes(this.pool, `${REPLAY_RANGE_PREFIX} AND "id" IN (${selection.ids.map(() => '?').join(', ')})`, [isoOf(now), ...selection.ids]);
    }
    if (selection.states.length === 0) return 0;
    return changes(
      this.pool,
      `${REPLAY_RANGE_PREFIX} AND "subscriptionId" = ? AND "eventId" >= ? AND "eventId" <= ? AND "state" IN (${selection.states.map(() => '?').join(', ')})`,
      [isoOf(now), selection.subscriptionId, selection.fromEventId, selection.toEventId, ...selection.states],
    );
  }

  async queueStats(): Promise<{ pending: number; oldestCreatedAt: Date | undefined }> {
    const [row] = await rows<{ n: number; oldest: Date | null }>(this.pool, QUEUE_STATS);
    return { pending: row!.n, oldestCreatedAt: row!.oldest ?? undefined };
  }

  pruneBefore(cutoff: Date): Promise<number> {
    return changes(this.pool, `DELETE FROM "NotificationDelivery" WHERE "state" <> 'PENDING' AND "createdAt" < ?`, [isoOf(cutoff)]);
  }
}
