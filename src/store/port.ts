import type { EventFilter, NewEvent, StoredEvent } from '../domain/events.js';
import type { InFlightRow } from './inFlightRows.js';
import type { RolloutPosition, RolloutQueryFilter } from './rolloutQueries.js';
import type { NewRolloutRow, NewTargetRow, RevisionRow, RolloutRow, TargetRow } from './rolloutRows.js';

/**
 * The history's persistence port (docs/adr/0020-persistence-port-and-postgresql.md): what the domain may ask of the
 * store for rollouts, targets, revisions, in-flight work and the event log, with one implementation per database
 * (store/sqlite, store/postgres). The same contract suite (test/store/contract) runs against both.
 *
 * Every method is async so one contract fits both; the SQLite implementation still runs each statement synchronously
 * on its prepared-statement connection and returns a settled promise.
 */
export type { InFlightRow, NewRolloutRow, NewTargetRow, RevisionRow, RolloutPosition, RolloutQueryFilter, RolloutRow, TargetRow };

export type RolloutStateChange = { state: string; message: string | null; startedAt?: Date; finishedAt?: Date };
export type TargetUpdate = { state: string; error?: string | null; countAttempt?: boolean; admittedAt?: Date; finishedAt?: Date };
export type NewRevision = { kind: string; namespace: string; name: string; n: number; version: string; rolloutId: string | null };

/** Reads; outside a transaction they see the latest committed state. */
export interface HistoryReads {
  findRollout(id: string): Promise<RolloutRow | undefined>;
  findRolloutByIdempotencyKey(key: string): Promise<RolloutRow | undefined>;
  /** Every target of a rollout, in admission order. */
  targetsOf(rolloutId: string): Promise<TargetRow[]>;
  targetsInState(rolloutId: string, state: string): Promise<TargetRow[]>;
  findTarget(rolloutId: string, namespace: string, name: string): Promise<TargetRow | undefined>;
  latestRevision(kind: string, namespace: string, name: string): Promise<RevisionRow | undefined>;
  allInFlight(): Promise<InFlightRow[]>;
  /** Events with id > afterId, oldest first. */
  listEventsAfter(filter: EventFilter, afterId: number | undefined, limit: number): Promise<StoredEvent[]>;
  /** Events with id < beforeId, newest first. */
  listEventsBefore(filter: EventFilter, beforeId: number | undefined, limit: number): Promise<StoredEvent[]>;
  lastEventId(): Promise<number>;
  /** Newest first (createdAt, then id). */
  listRollouts(filter: RolloutQueryFilter, before: RolloutPosition | undefined, limit: number): Promise<RolloutRow[]>;
  countRollouts(filter: RolloutQueryFilter): Promise<number>;
  targetStateCounts(rolloutId: string): Promise<Map<string, number>>;
  targetPage(rolloutId: string, state: string | undefined, afterOrdinal: number | undefined, limit: number): Promise<TargetRow[]>;
  countTargets(rolloutId: string, state: string | undefined): Promise<number>;
}

/** One write transaction's view: reads see its own writes. */
export interface HistoryTx extends HistoryReads {
  /**
   * The rollout, locked until the transaction ends, so a read-then-write cannot be overwritten by another writer
   * (PostgreSQL: SELECT … FOR UPDATE; SQLite: the whole database is locked by the transaction already).
   */
  lockRollout(id: string): Promise<RolloutRow | undefined>;
  /**
   * Inserts the rollout in state PENDING. Returns undefined, changing nothing, when its idempotency key already belongs
   * to a rollout (committed, or committed meanwhile by a concurrent writer, which this call waits for): the caller then
   * reads that one. Never two rollouts for one key, whatever the concurrency.
   */
  insertRollout(row: NewRolloutRow, now: Date): Promise<RolloutRow | undefined>;
  /** Sets state and message; `startedAt`/`finishedAt` only when given. */
  updateRolloutState(id: string, change: RolloutStateChange, now: Date): Promise<RolloutRow>;
  updateEngineState(id: string, engineState: string, now: Date): Promise<void>;
  insertTargets(rows: readonly NewTargetRow[], now: Date): Promise<void>;
  /** `error` undefined leaves it; `admittedAt`/`finishedAt` only when given; `countAttempt` adds one to `attempts`. */
  updateTarget(id: string, change: TargetUpdate, now: Date): Promise<TargetRow>;
  /** PENDING → CANCELLED for a rollout that ended; returns the targets it cancelled (as they were). */
  cancelPendingTargets(rolloutId: string, now: Date): Promise<TargetRow[]>;
  insertRevision(revision: NewRevision, now: Date): Promise<void>;
  /** Inserts or replaces the row of (kind, namespace, name). */
  putInFlight(row: Omit<InFlightRow, 'createdAt'>, now: Date): Promise<void>;
  deleteInFlight(kind: string, namespace: string, name: string): Promise<void>;
  /**
   * Appends events; ids come back in the given order. Ids are totally ordered across every writer, every process and
   * every replica: an event becomes visible only after every event with a smaller id, so a reader of `id > cursor`
   * never skips one (PostgreSQL: under the event-log advisory lock, held to COMMIT — call this last).
   */
  insertEvents(events: readonly NewEvent[], now: Date): Promise<StoredEvent[]>;
}

export interface HistoryStore {
  readonly provider: 'sqlite' | 'postgresql';
  readonly read: HistoryReads;
  /**
   * Runs `body` in one write transaction, committed when it resolves and rolled back when it throws. `body` may run
   * more than once (SQLite: database locked; PostgreSQL: serialization failure 40001 or deadlock 40P01), so it must
   * touch the database only through `tx` and have no other side effects.
   */
  transaction<T>(body: (tx: HistoryTx) => Promise<T>): Promise<T>;
  /** Throws UnavailableError when the database cannot be written right now (readiness). */
  checkWritable(): Promise<void>;
  close(): Promise<void>;
}
