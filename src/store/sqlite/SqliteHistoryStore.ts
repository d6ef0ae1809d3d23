import type { EventFilter, NewEvent } from '../../domain/events.js';
import { UnavailableError } from '../../errors.js';
import { insertEvents, lastEventId, listEventsAfter, listEventsBefore } from '../events.js';
import { allInFlight, deleteInFlight, putInFlight } from '../inFlightRows.js';
import type { HistoryReads, HistoryStore, HistoryTx } from '../port.js';
import { countRollouts, countTargets, listRollouts, targetPage, targetStateCounts, type RolloutPosition, type RolloutQueryFilter } from '../rolloutQueries.js';
import {
  cancelPendingTargets,
  findRollout,
  findRolloutByIdempotencyKey,
  findTarget,
  insertRevision,
  insertRolloutIfKeyFree,
  insertTargets,
  latestRevision,
  targetsInState,
  targetsOf,
  updateEngineState,
  updateRolloutState,
  updateTarget,
} from '../rolloutRows.js';
import { isBusy, type Sql } from '../Sql.js';
import { checkDatabaseWritable } from '../writeProbe.js';

/** How long a transaction waits for another connection's write lock before it fails UNAVAILABLE. */
const LOCK_WAIT_MS = 5_000;

function readsOf(sql: Sql): HistoryReads {
  return {
    findRollout: async (id) => findRollout(sql, id),
    findRolloutByIdempotencyKey: async (key) => findRolloutByIdempotencyKey(sql, key),
    targetsOf: async (rolloutId) => targetsOf(sql, rolloutId),
    targetsInState: async (rolloutId, state) => targetsInState(sql, rolloutId, state),
    findTarget: async (rolloutId, namespace, name) => findTarget(sql, rolloutId, namespace, name),
    latestRevision: async (kind, namespace, name) => latestRevision(sql, kind, namespace, name),
    allInFlight: async () => allInFlight(sql),
    listEventsAfter: async (filter: EventFilter, afterId, limit) => listEventsAfter(sql, filter, afterId, limit),
    listEventsBefore: async (filter: EventFilter, beforeId, limit) => listEventsBefore(sql, filter, beforeId, limit),
    lastEventId: async () => lastEventId(sql),
    listRollouts: async (filter: RolloutQueryFilter, before: RolloutPosition | undefined, limit) => listRollouts(sql, filter, before, limit),
    countRollouts: async (filter) => countRollouts(sql, filter),
    targetStateCounts: async (rolloutId) => targetStateCounts(sql, rolloutId),
    targetPage: async (rolloutId, state, afterOrdinal, limit) => targetPage(sql, rolloutId, state, afterOrdinal, limit),
    countTargets: async (rolloutId, state) => countTargets(sql, rolloutId, state),
  };
}

/**
 * The SQLite implementation of the history port, over rollplane's prepared-statement connection (Sql.ts, ADR 9):
 * every method runs its statement synchronously. SQLite has one writer at a time, so transactions are queued in the
 * process (one BEGIN IMMEDIATE at a time on the connection) and a lock held by another connection is waited for on a
 * timer, never on the event loop. Event ids are ordered by that single writer.
 *
 * Caveat (ADR 20): the body is async, so other code's microtasks can run while the write lock is held; a Prisma
 * *write* among them would wait synchronously (busy_timeout) for a lock only this thread can release. The domain still
 * uses Sql.transaction's synchronous bodies for that reason until Prisma's writes are queued behind the same mutex.
 */
export class SqliteHistoryStore implements HistoryStore {
  readonly provider = 'sqlite' as const;
  readonly read: HistoryReads;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly sql: Sql) {
    this.read = readsOf(sql);
  }

  transaction<T>(body: (tx: HistoryTx) => Promise<T>): Promise<T> {
    const run = this.queue.then(() => this.runTransaction(body));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async runTransaction<T>(body: (tx: HistoryTx) => Promise<T>): Promise<T> {
    const started = Date.now();
    let delay = 1;
    for (;;) {
      try {
        this.sql.db.exec('BEGIN IMMEDIATE');
        break;
      } catch (error) {
        if (!isBusy(error)) throw new UnavailableError(`the history database cannot be written: ${(error as Error).message}`, { cause: error });
        if (Date.now() - started > LOCK_WAIT_MS) throw new UnavailableError(`the history database stayed locked for ${LOCK_WAIT_MS} ms`, { cause: error });
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(50, delay * 2);
      }
    }
    try {
      const result = await body(this.txOf());
      this.sql.db.exec('COMMIT');
      return result;
    } catch (error) {
      if (this.sql.db.inTransaction) this.sql.db.exec('ROLLBACK');
      throw error;
    }
  }

  private txOf(): HistoryTx {
    const sql = this.sql;
    return {
      ...this.read,
      lockRollout: async (id) => findRollout(sql, id),
      insertRollout: async (row, now) => insertRolloutIfKeyFree(sql, row, now),
      updateRolloutState: async (id, change, now) => updateRolloutState(sql, id, change, now),
      updateEngineState: async (id, engineState, now) => updateEngineState(sql, id, engineState, now),
      insertTargets: async (rows, now) => insertTargets(sql, rows, now),
      updateTarget: async (id, change, now) => updateTarget(sql, id, change, now),
      cancelPendingTargets: async (rolloutId, now) => cancelPendingTargets(sql, rolloutId, now),
      insertRevision: async (revision, now) => insertRevision(sql, revision, now),
      putInFlight: async (row, now) => putInFlight(sql, row, now),
      deleteInFlight: async (kind, namespace, name) => deleteInFlight(sql, kind, namespace, name),
      insertEvents: async (events: readonly NewEvent[], now) => insertEvents(sql, events, now),
    };
  }

  async checkWritable(): Promise<void> {
    checkDatabaseWritable(this.sql);
  }

  async close(): Promise<void> {
    this.sql.close();
  }
}
