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
import { dateOf, sqlDate, sqlDateOrNull, type Sql } from '../Sql.js';

const date = (value: Date | string) => (typeof value === 'string' ? dateOf(value) : value);

function withEvent(row: DeliveryEventRow): DeliveryWithEvent {
  return { ...deliveryOf(row, date), event: eventOfDelivery(row, date) };
}

/** Subscriptions and the outbox on SQLite, on rollplane's prepared-statement connection (Sql.ts). */
export class SqliteNotificationStore implements NotificationStore {
  constructor(private readonly sql: Sql) {}

  private findNow(id: string): SubscriptionRecord | undefined {
    const row = this.sql.get<SubscriptionRow>(`SELECT ${SUBSCRIPTION_COLUMNS} FROM "NotificationSubscription" WHERE "id" = ?`, id);
    return row && subscriptionOf(row, date);
  }

  async insertSubscription(row: NewSubscription, now: Date): Promise<SubscriptionRecord> {
    return this.sql.transaction((sql) => {
      sql.run(
        `INSERT INTO "NotificationSubscription" ("id", "name", "sinkKind", "url", "secret", "channel", "filter", "oncePer", "createdBy", "createdAt", "updatedAt")
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        row.id,
        row.name,
        row.sinkKind,
        row.url,
        row.secret,
        row.channel,
        JSON.stringify(row.filter),
        JSON.stringify(row.oncePer),
        row.createdBy,
        sqlDate(now),
        sqlDate(now),
      );
      sql.run(BUMP_GENERATION);
      return this.findNow(row.id)!;
    });
  }

  async updateSubscription(id: string, change: SubscriptionChange, now: Date): Promise<SubscriptionRecord | undefined> {
    return this.sql.transaction((sql) => {
      const current = this.findNow(id);
      if (!current || current.deletedAt) return undefined;
      const next = { ...current, ...change };
      sql.run(
        `UPDATE "NotificationSubscription" SET "name" = ?, "sinkKind" = ?, "url" = ?, "secret" = ?, "channel" = ?, "filter" = ?, "oncePer" = ?, "updatedAt" = ?
          WHERE "id" = ?`,
        next.name,
        next.sinkKind,
        next.url,
        next.secret,
        next.channel,
        JSON.stringify(next.filter),
        JSON.stringify(next.oncePer),
        sqlDate(now),
        id,
      );
      sql.run(BUMP_GENERATION);
      return this.findNow(id);
    });
  }

  async deleteSubscription(id: string, now: Date): Promise<SubscriptionRecord | undefined> {
    return this.sql.transaction((sql) => {
      const changed = sql.run(
        'UPDATE "NotificationSubscription" SET "deletedAt" = ?, "updatedAt" = ? WHERE "id" = ? AND "deletedAt" IS NULL',
        sqlDate(now),
        sqlDate(now),
        id,
      );
      if (changed.changes === 0) return undefined;
      sql.run(CANCEL_PENDING, id);
      sql.run(BUMP_GENERATION);
      return this.findNow(id);
    });
  }

  async findSubscription(id: string): Promise<SubscriptionRecord | undefined> {
    return this.findNow(id);
  }

  async listSubscriptions(afterId: string | undefined, limit: number): Promise<SubscriptionRecord[]> {
    return this.sql
      .all<SubscriptionRow>(
        `SELECT ${SUBSCRIPTION_COLUMNS} FROM "NotificationSubscription" WHERE "deletedAt" IS NULL AND "id" > ? ORDER BY "id" LIMIT ?`,
        afterId ?? '',
        limit,
      )
      .map((row) => subscriptionOf(row, date));
  }

  async countSubscriptions(): Promise<number> {
    return this.sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM "NotificationSubscription" WHERE "deletedAt" IS NULL')!.n;
  }

  async subscriptionIds(): Promise<string[]> {
    return this.sql.all<{ id: string }>('SELECT "id" FROM "NotificationSubscription" WHERE "deletedAt" IS NULL ORDER BY "id"').map((r) => r.id);
  }

  async deliveryCounts(ids: readonly string[]): Promise<Map<string, DeliveryCounts>> {
    const out = new Map<string, DeliveryCounts>();
    if (ids.length === 0) return out;
    for (const row of this.sql.all<{ subscriptionId: string; state: string; n: number }>(countsByState(ids), ...ids)) {
      const counts = out.get(row.subscriptionId) ?? { ...NO_DELIVERIES };
      addCount(counts, row.state, row.n);
      out.set(row.subscriptionId, counts);
    }
    return out;
  }

  async listDeliveries(filter: DeliveryFilter, beforeId: number | undefined, limit: number): Promise<DeliveryWithEvent[]> {
    const { text, params } = deliveryListStatement(filter, beforeId, limit);
    return this.sql.all<DeliveryEventRow>(text, ...params).map(withEvent);
  }

  async findDelivery(id: number): Promise<DeliveryWithEvent | undefined> {
    const row = this.sql.get<DeliveryEventRow>(FIND_DELIVERY, id);
    return row && withEvent(row);
  }

  async dueDeliveries(subscriptionId: string, now: Date, limit: number): Promise<DueDelivery[]> {
    return this.sql
      .all<DeliveryEventRow>(DUE_DELIVERIES, subscriptionId, sqlDate(now), limit)
      .map((row) => ({ ...withEvent(row), threadTs: row.threadTs ?? null }));
  }

  async nextAttemptAt(subscriptionId: string): Promise<Date | undefined> {
    const at = this.sql.get<{ at: string | null }>(NEXT_ATTEMPT_AT, subscriptionId)?.at;
    return at ? dateOf(at) : undefined;
  }

  async recordAttempt(id: number, attempts: number, outcome: AttemptOutcome): Promise<boolean> {
    return this.sql.transaction((sql) => {
      const at = sqlDate(outcome.at);
      const changed = sql.run(
        RECORD_ATTEMPT,
        outcome.state,
        at,
        outcome.statusCode,
        outcome.error,
        sqlDateOrNull(outcome.nextAttemptAt),
        outcome.state,
        at,
        id,
        attempts,
      ).changes;
      if (changed === 0) return false;
      const subscriptionId = sql.get<{ subscriptionId: string }>('SELECT "subscriptionId" FROM "NotificationDelivery" WHERE "id" = ?', id)!.subscriptionId;
      sql.run(NOTE_ATTEMPT, at, outcome.statusCode, outcome.error, outcome.state, at, subscriptionId);
      if (outcome.thread) {
        sql.run(
          'INSERT OR IGNORE INTO "NotificationThread" ("subscriptionId", "rolloutId", "threadTs", "createdAt") VALUES (?, ?, ?, ?)',
          subscriptionId,
          outcome.thread.rolloutId,
          outcome.thread.ts,
          at,
        );
      }
      return true;
    });
  }

  async replay(selection: ReplaySelection, now: Date): Promise<number> {
    return this.sql.transaction((sql) => {
      if ('ids' in selection) {
        if (selection.ids.length === 0) return 0;
        return sql.run(`${REPLAY_RANGE_PREFIX} AND "id" IN (${selection.ids.map(() => '?').join(', ')})`, sqlDate(now), ...selection.ids).changes;
      }
      if (selection.states.length === 0) return 0;
      return sql.run(
        `${REPLAY_RANGE_PREFIX} AND "subscriptionId" = ? AND "eventId" >= ? AND "eventId" <= ? AND "state" IN (${selection.states.map(() => '?').join(', ')})`,
        sqlDate(now),
        selection.subscriptionId,
        selection.fromEventId,
        selection.toEventId,
        ...selection.states,
      ).changes;
    });
  }

  async queueStats(): Promise<{ pending: number; oldestCreatedAt: Date | undefined }> {
    const row = this.sql.get<{ n: number; oldest: string | null }>(QUEUE_STATS)!;
    return { pending: row.n, oldestCreatedAt: row.oldest ? dateOf(row.oldest) : undefined };
  }

  async pruneBefore(cutoff: Date): Promise<number> {
    return this.sql.transaction((sql) => sql.run(`DELETE FROM "NotificationDelivery" WHERE "state" <> 'PENDING' AND "createdAt" < ?`, sqlDate(cutoff)).changes);
  }
}
