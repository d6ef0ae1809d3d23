import type { EventFilter, NewEvent, StoredEvent } from './events.js';

/**
 * Ids one read of the history may look at when no index of Event serves its filter exactly (docs/adr/0032): such a
 * read walks the table's own id order through a window of this many ids and stops at its end, whatever it found. On
 * SQLite, about 1 ms of the event loop (the read is synchronous).
 */
export const EVENT_SCAN_WINDOW = 10_000;
/** Rows looked at that cost as much as one event sent, where a caller is charged for what its reads look at. */
export const SCANNED_ROWS_PER_EVENT = 100;

/** What looking at `rows` rows of the history is charged, in events (see SCANNED_ROWS_PER_EVENT). */
export function scanCharge(rows: number): number {
  return Math.ceil(rows / SCANNED_ROWS_PER_EVENT);
}

/**
 * One read of the history. A filter that an index of Event serves exactly (every row the index walk meets matches)
 * is read to `limit` events or to the end; any other filter is read through at most EVENT_SCAN_WINDOW ids, so the page
 * may hold fewer than `limit` events although more match further on (`more`). Either way the next read starts from
 * `scannedTo`: every id between the previous position and it has been looked at.
 */
export interface EventPage {
  /** The matching events, in the read's order (oldest first after a position, newest first before one). */
  events: StoredEvent[];
  /**
   * The last id the read looked at (reading after: the highest; reading before: the lowest), or the position it
   * started from when it looked at nothing. The last event's id when the page is full.
   */
  scannedTo: number;
  /** More may match past `scannedTo`: the page is full, or its window stopped before the end of the history. */
  more: boolean;
  /** At most this many rows were looked at: the window's span, or the events returned when an index served the read. */
  scannedRows: number;
}

/** The rows the port reads and writes, shaped as the schema's models (prisma/models), so that both stores map them alike. */
export interface RolloutRow {
  id: string;
  kind: string;
  state: string;
  fromVersion: string | null;
  /** Null: each target goes back to its own previous version (a rollback; see Rollout.toVersion). */
  toVersion: string | null;
  selector: string;
  strategy: string;
  causeActor: string | null;
  causeRunUrl: string | null;
  causeCommit: string | null;
  causeMessage: string | null;
  idempotencyKey: string | null;
  rollbackOfId: string | null;
  message: string | null;
  engineState: string;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Who `idempotencyKey` belongs to (see IdempotencyKeyRef); '' for keys written before keys were scoped. */
  idempotencyScope: string;
  /** Who started the rollout (token id, `anonymous`, `rollplane`); null for rollouts written before it was kept. */
  startedBy: string | null;
}

export interface TargetRow {
  id: string;
  rolloutId: string;
  kind: string;
  namespace: string;
  name: string;
  ordinal: number;
  state: string;
  fromVersion: string | null;
  toVersion: string;
  attempts: number;
  skipReason: string | null;
  error: string | null;
  admittedAt: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
  /** The member cluster the target is in (ADR 0054). */
  cluster: string;
}

export type NewRolloutRow = Omit<RolloutRow, 'state' | 'message' | 'engineState' | 'createdAt' | 'updatedAt' | 'startedAt' | 'finishedAt'>;

/** `cluster` absent: `local` (every caller that predates member clusters). */
export type NewTargetRow = Omit<TargetRow, 'attempts' | 'error' | 'admittedAt' | 'updatedAt' | 'cluster'> & { cluster?: string };

export interface RevisionRow {
  n: number;
  version: string;
}

/** The InFlightChange table (see prisma/models/history.prisma): one row of work in flight per (cluster, kind, namespace, name). */
export interface InFlightRow {
  cluster: string;
  kind: string;
  namespace: string;
  name: string;
  payload: string;
  createdAt: Date;
}

export interface RolloutQueryFilter {
  kind?: string;
  states?: readonly string[];
  targetName?: string;
  /** Only rollouts with a target in any of these member clusters (ADR 0058). */
  clusters?: readonly string[];
  /** Only rollouts whose toVersion or fromVersion is exactly this. */
  version?: string;
  /** Only staged rollouts with a wave of this name. */
  wave?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  /** Case-insensitive (ASCII) substring of the versions, actor, commit, message or id; `%` and `_` are literal. */
  search?: string;
}

/** Which of a rollout's targets a page holds beyond its state: those in some clusters, or to or from one version. */
export interface TargetsOnly {
  clusters?: readonly string[];
  version?: string;
}

/** Newest first: `createdAt` then `id`, both descending (ids of one millisecond sort by creation). */
export interface RolloutPosition {
  createdAt: Date;
  id: string;
}

/**
 * An idempotency key as the store keeps it: unique per scope, the caller that sent it (`token:<id>`, `anonymous`) or
 * the engine (`rollplane`). A caller can neither reuse another caller's key nor claim one of the engine's (issue 34).
 */
export interface IdempotencyKeyRef {
  scope: string;
  key: string;
}

/** An idempotency key's record: which request (by hash) made which rollout. */
export interface IdempotencyRecord {
  scope: string;
  key: string;
  operation: string;
  requestHash: string;
  rolloutId: string;
  createdAt: Date;
}

/** One revision of a target, as the API lists them. */
export interface RevisionEntry {
  n: number;
  version: string;
  rolloutId: string | null;
  appliedAt: Date;
}

/** A target of an active rollout (the overlap rule of RolloutLauncher). */
export interface CoveredTarget {
  rolloutId: string;
  /** Absent: `local` (the stores always say). */
  cluster?: string;
  namespace: string;
  name: string;
}

/** A staged rollout's frozen strategy (issue 30; ADR 0065). JSON columns are text here; the domain parses them. */
export interface RunRow {
  rolloutId: string;
  strategy: string;
  excluded: string;
  failurePolicy: string;
  /** WAIT | SKIP | FAIL. */
  unreachable: string;
  startedBy: string | null;
  createdAt: Date;
}

/** One wave of a staged rollout as planned at launch. */
export interface WaveRow {
  rolloutId: string;
  ordinal: number;
  name: string;
  /** JSON array of cluster names, in the order they are taken. */
  clusters: string;
  maxConcurrency: number;
  maxFailures: number;
  minSuccessMs: number;
  /** Null: the rollout strategy's. */
  progressDeadlineSeconds: number | null;
  mandatory: boolean;
  remainder: boolean;
  beforeGate: string | null;
  afterGate: string | null;
  /** PENDING | RUNNING | SUCCEEDED | FAILED. */
  state: string;
  reason: string | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A gate of a staged rollout, once opened. */
export interface GateRow {
  id: string;
  rolloutId: string;
  key: string;
  type: string;
  config: string;
  state: string;
  reason: string;
  openedAt: Date;
  endedAt: Date | null;
}

/**
 * One answer kept at a gate that asks outside (an external check's attempt, an alert gate's look; ADR 0068): numbered
 * per gate from 0, each number written once (two leaders answering at once keep one).
 */
export interface GateAttemptRow {
  gateId: string;
  seq: number;
  startedAt: Date;
  at: Date;
  /** PROCEED | WAIT | FAILURE */
  answer: string;
  afterMs: number | null;
  reason: string;
}

/** A named maintenance-window policy as stored (its definition is the checked input, as JSON). */
export interface WindowPolicyRow {
  name: string;
  kind: string;
  definition: string;
  createdAt: Date;
  updatedAt: Date;
  /** OPEN or CLOSED: the policy's own state last announced by a window event; null (or absent on insert): not yet. */
  announced?: string | null;
}

/** One decision kept at a gate. */
export interface GateDecisionRow {
  id: number;
  gateId: string;
  tokenId: string;
  role: string;
  decision: string;
  comment: string | null;
  at: Date;
}

/**
 * The history's persistence port (docs/adr/0020-persistence-port-and-postgresql.md). It lives in the domain, which
 * owns what it asks of the store; src/store implements it (and re-exports it from store/port.ts): what the domain may ask of the
 * store for rollouts, targets, revisions, in-flight work and the event log, with one implementation per database
 * (store/sqlite, store/postgres). The same contract suite (test/store/historyContract.ts) runs against both.
 *
 * Reads outside a transaction are async. Inside a transaction every method is a `Step`: a generator the body delegates
 * to with `yield*` (`const row = yield* tx.findRollout(id)`), and the body itself is a generator function. The store
 * drives it: SQLite runs the whole body synchronously inside BEGIN IMMEDIATE (its steps never yield, so the write lock
 * is never held across the event loop — ADR 9's guarantee, kept); PostgreSQL awaits each yielded query. One body,
 * written once, for both.
 */

export type RolloutStateChange = { state: string; message: string | null; startedAt?: Date; finishedAt?: Date };
export type TargetUpdate = { state: string; error?: string | null; countAttempt?: boolean; admittedAt?: Date; finishedAt?: Date };
/** `cluster` absent, in this and the keys below: `local` (ADR 0054). */
export type NewRevision = { cluster?: string; kind: string; namespace: string; name: string; n: number; version: string; rolloutId: string | null };
/** One target of a rollout named by cluster, namespace and name, and its change (updateTargets). */
export type NamedTargetUpdate = TargetUpdate & { cluster?: string; namespace: string; name: string };
/** A target after a change, with the state it had before (what a TargetStateChanged event reports as `from`). */
export type UpdatedTarget = { previousState: string; target: TargetRow };
/** A target whose revisions are asked for. */
export type RevisionKey = { cluster?: string; kind: string; namespace: string; name: string };
/** A new in-flight row; `cluster` absent: `local`. */
export type NewInFlightRow = Omit<InFlightRow, 'createdAt' | 'cluster'> & { cluster?: string };

/** Reads; outside a transaction they see the latest committed state. */
export interface HistoryReads {
  findRollout(id: string): Promise<RolloutRow | undefined>;
  findRolloutByIdempotencyKey(key: IdempotencyKeyRef): Promise<RolloutRow | undefined>;
  /** Every target of a rollout, in admission order. */
  targetsOf(rolloutId: string): Promise<TargetRow[]>;
  targetsInState(rolloutId: string, state: string): Promise<TargetRow[]>;
  /** `cluster` absent: `local` (as in latestRevision, revisionPage and deleteInFlight). */
  findTarget(rolloutId: string, namespace: string, name: string, cluster?: string): Promise<TargetRow | undefined>;
  latestRevision(kind: string, namespace: string, name: string, cluster?: string): Promise<RevisionRow | undefined>;
  /** latestRevision of several targets with one query (PostgreSQL: one round trip), in the order given. */
  latestRevisions(keys: readonly RevisionKey[]): Promise<(RevisionRow | undefined)[]>;
  allInFlight(): Promise<InFlightRow[]>;
  /** One bounded read of the events with id > afterId, oldest first (see EventPage). */
  listEventsAfter(filter: EventFilter, afterId: number | undefined, limit: number): Promise<EventPage>;
  /** One bounded read of the events with id < beforeId (the newest when undefined), newest first (see EventPage). */
  listEventsBefore(filter: EventFilter, beforeId: number | undefined, limit: number): Promise<EventPage>;
  lastEventId(): Promise<number>;
  /** Newest first (createdAt, then id). */
  listRollouts(filter: RolloutQueryFilter, before: RolloutPosition | undefined, limit: number): Promise<RolloutRow[]>;
  countRollouts(filter: RolloutQueryFilter): Promise<number>;
  targetStateCounts(rolloutId: string): Promise<Map<string, number>>;
  /** targetStateCounts of several rollouts in one query (a page's progress); rollouts without targets are absent. */
  targetStateCountsOf(rolloutIds: readonly string[]): Promise<Map<string, Map<string, number>>>;
  /**
   * listRollouts with the page's targetStateCountsOf, in one round trip on PostgreSQL (the rollouts list asks for
   * both, and waiting for the page before asking for its progress was a second round trip in sequence).
   */
  listRolloutsWithCounts(
    filter: RolloutQueryFilter,
    before: RolloutPosition | undefined,
    limit: number,
  ): Promise<{ rows: RolloutRow[]; counts: Map<string, Map<string, number>> }>;
  targetPage(rolloutId: string, state: string | undefined, afterOrdinal: number | undefined, limit: number): Promise<TargetRow[]>;
  countTargets(rolloutId: string, state: string | undefined): Promise<number>;
  /**
   * targetPage and countTargets together (a rollout's targets connection asks for both): PostgreSQL answers them in one
   * round trip instead of two in a row. `only.clusters`: only the targets in these clusters (a staged run's wave);
   * `only.version`: only those changed to or from exactly this version.
   */
  targetPageWithCount(
    rolloutId: string,
    state: string | undefined,
    afterOrdinal: number | undefined,
    limit: number,
    only?: TargetsOnly,
  ): Promise<{ rows: TargetRow[]; totalCount: number }>;
  /** The record of the request that made the key's rollout (its hash tells a retry from a different request). */
  findIdempotencyRecord(key: IdempotencyKeyRef): Promise<IdempotencyRecord | undefined>;
  /** Ids of rollouts the engine still has work for (active, or ended with their finish step not done), oldest first. */
  rolloutIdsNeedingEngine(): Promise<string[]>;
  /** Revisions of one target with n < beforeN, newest first. */
  revisionPage(kind: string, namespace: string, name: string, beforeN: number | undefined, limit: number, cluster?: string): Promise<RevisionEntry[]>;
  /** Targets of `kind` in one of `targetStates` whose rollout is in one of `rolloutStates`. */
  coveredTargets(kind: string, targetStates: readonly string[], rolloutStates: readonly string[]): Promise<CoveredTarget[]>;
  /**
   * Ids of the active rollouts (PENDING, PROGRESSING, PAUSED) with at least one target in the member cluster, oldest
   * first: what deregistering a cluster must not pull from under (issue 29).
   */
  activeRolloutIdsInCluster(cluster: string): Promise<string[]>;
  /**
   * The member clusters a rollout has targets in (every target, whatever its state), each once, by name; `local` for
   * targets written before clusters existed. Bounded by the clusters, not the targets (a launch guard asks it under
   * the launch lock for each busy rollout).
   */
  clustersOfRollout(rolloutId: string): Promise<string[]>;
  /** A staged rollout's frozen strategy and waves (in order); undefined for a rollout without waves. */
  runOf(rolloutId: string): Promise<{ run: RunRow; waves: WaveRow[] } | undefined>;
  /** The gates a staged rollout opened so far, in the order they opened. */
  gatesOf(rolloutId: string): Promise<GateRow[]>;
  /** Every decision kept at a gate, oldest first. */
  gateDecisions(gateId: string): Promise<GateDecisionRow[]>;
  /** Every attempt kept at a gate, by number. */
  gateAttempts(gateId: string): Promise<GateAttemptRow[]>;
  /** Every maintenance-window policy, by name. */
  windowPolicies(): Promise<WindowPolicyRow[]>;
}

/** One database step inside a transaction body: `yield*` it. SQLite's complete without yielding. */
export type Step<T> = Generator<unknown, T, unknown>;

/** HistoryReads as steps. */
export type TxReads = { [K in keyof HistoryReads]: (...args: Parameters<HistoryReads[K]>) => Step<Awaited<ReturnType<HistoryReads[K]>>> };

/**
 * One write transaction's view: reads see its own writes.
 *
 * Lock order (PostgreSQL; SQLite's one write lock makes it moot): a transaction that takes several locks takes them in
 * this order, so two transactions never wait for each other in a cycle:
 *   1. `lockLaunches(kind)` — at most one kind per transaction, before anything else;
 *   2. `lockRollout(id)` — row locks (transitions, engine-state merges, the aborts of a supersede);
 *   3. the event-log lock, taken when `transactionWithEvents` appends the events, the transaction's last statement.
 * Transactions that hold a rollout's row lock never ask for a launch lock, and nothing is locked after the events.
 */
export interface HistoryTx extends TxReads {
  /**
   * Serializes launches of one rollout kind across every replica until the transaction ends: a launch decides
   * "does an active rollout already cover these targets?" and creates its rollout under this lock, so two replicas
   * cannot both pass the check. Launches of different kinds do not wait for each other. Take it first (see the lock
   * order above). PostgreSQL: a transaction-scoped advisory lock; SQLite: nothing to take, the transaction already
   * holds the database's only write lock.
   */
  lockLaunches(kind: string): Step<void>;
  /**
   * The rollout, locked until the transaction ends, so a read-then-write cannot be overwritten by another writer
   * (PostgreSQL: SELECT … FOR UPDATE; SQLite: the whole database is locked by the transaction already).
   */
  lockRollout(id: string): Step<RolloutRow | undefined>;
  /**
   * Inserts the rollout in state PENDING. Returns undefined, changing nothing, when its idempotency key already belongs
   * to a rollout (committed, or committed meanwhile by a concurrent writer, which this call waits for): the caller then
   * reads that one. Never two rollouts for one key, whatever the concurrency.
   */
  insertRollout(row: NewRolloutRow, now: Date): Step<RolloutRow | undefined>;
  /** Sets state and message; `startedAt`/`finishedAt` only when given. */
  updateRolloutState(id: string, change: RolloutStateChange, now: Date): Step<RolloutRow>;
  updateEngineState(id: string, engineState: string, now: Date): Step<void>;
  insertTargets(rows: readonly NewTargetRow[], now: Date): Step<void>;
  /**
   * Records which request made the key's rollout, in the transaction that inserted it (so no replica ever sees the
   * rollout without its record). A key that has a record keeps it: nothing changes.
   */
  insertIdempotencyRecord(record: Omit<IdempotencyRecord, 'createdAt'>, now: Date): Step<void>;
  /** `error` undefined leaves it; `admittedAt`/`finishedAt` only when given; `countAttempt` adds one to `attempts`. */
  updateTarget(id: string, change: TargetUpdate, now: Date): Step<TargetRow>;
  /**
   * updateTarget for several targets of one rollout at once (PostgreSQL: one statement, one round trip, where
   * updateTarget costs one per target). Returns, in the order given, each target as it is after the change with the
   * state it had before; undefined for a name the rollout has no target of (nothing is changed for it). A name may
   * appear only once per call (throws otherwise, changing nothing): a second change of one target goes in a later call.
   */
  updateTargets(rolloutId: string, changes: readonly NamedTargetUpdate[], now: Date): Step<(UpdatedTarget | undefined)[]>;
  /**
   * Why a rollout's targets still PROGRESSING in `cluster` (all of them, or only `target`) wait: their `error` set, or
   * with null cleared, their state unchanged; a target that moved on meanwhile is left alone. How many changed.
   */
  noteWaiting(rolloutId: string, cluster: string, target: { namespace: string; name: string } | undefined, error: string | null, now: Date): Step<number>;
  /** PENDING → CANCELLED for a rollout that ended; returns the targets it cancelled (as they were). */
  cancelPendingTargets(rolloutId: string, now: Date): Step<TargetRow[]>;
  insertRevision(revision: NewRevision, now: Date): Step<void>;
  /** insertRevision of several revisions with one statement, each applied at its own `appliedAt`. */
  insertRevisions(revisions: readonly (NewRevision & { appliedAt: Date })[]): Step<void>;
  /** Inserts or replaces the row of (cluster, kind, namespace, name). */
  putInFlight(row: NewInFlightRow, now: Date): Step<void>;
  /** Removes the row of (cluster, kind, namespace, name); returns how many rows went (0: another completed it). */
  deleteInFlight(kind: string, namespace: string, name: string, cluster?: string): Step<number>;
  /** Freezes a staged rollout's strategy and waves (in the rollout's creating transaction). */
  insertRun(run: RunRow, waves: readonly WaveRow[]): Step<void>;
  /** Opens a gate; a gate already open at that key stays as it is (returns false). */
  insertGate(gate: GateRow): Step<boolean>;
  /** A gate's computed state; `endedAt` only when given. */
  updateGate(id: string, state: string, reason: string, endedAt: Date | null): Step<void>;
  insertGateDecision(decision: Omit<GateDecisionRow, 'id'>): Step<void>;
  /** Keeps a gate's attempt; false (nothing written) when its number is taken. */
  insertGateAttempt(attempt: GateAttemptRow): Step<boolean>;
  /**
   * A look that answered as the gate's latest attempt did: that row's `at` moves on to `at` (ADR 0071, the alert gate's
   * row growth). False (nothing written) unless attempt `seq` is the gate's latest and answered before `at`.
   */
  extendGateAttempt(gateId: string, seq: number, at: Date): Step<boolean>;
  /** Adds a policy; false (nothing changed) when the name is taken. */
  insertWindowPolicy(row: WindowPolicyRow): Step<boolean>;
  /** Replaces a policy's kind and definition; false when there is none of that name. */
  updateWindowPolicy(row: Omit<WindowPolicyRow, 'createdAt'>): Step<boolean>;
  /** false when there is none of that name. */
  deleteWindowPolicy(name: string): Step<boolean>;
  /** Sets the state a policy last announced if it is still `from` (compare and set); false when it was not. */
  announceWindow(name: string, from: string | null, to: string): Step<boolean>;
  /** A wave's state; `startedAt`/`finishedAt` only when given. */
  updateWave(rolloutId: string, ordinal: number, state: string, reason: string | null, startedAt: Date | null, finishedAt: Date | null): Step<void>;
}

/** What a body of `transactionWithEvents` returns: its result, and the events to append with its writes. */
export interface WithEvents<T> {
  result: T;
  events: readonly NewEvent[];
}

/** What `transactionWithEvents` committed: the body's result, and its events as stored. */
export interface Committed<T> {
  result: T;
  stored: StoredEvent[];
}

export interface HistoryStore {
  readonly provider: 'sqlite' | 'postgresql';
  readonly read: HistoryReads;
  /**
   * Runs `body` in one write transaction, committed when it resolves and rolled back when it throws. `body` may run
   * more than once (SQLite: database locked; PostgreSQL: serialization failure 40001 or deadlock 40P01), so it must
   * touch the database only through `tx` and have no other side effects. `afterCommit` runs once, after COMMIT and
   * never on failure; on SQLite synchronously with the commit (nothing else can commit in between).
   */
  transaction<T>(body: (tx: HistoryTx) => Step<T>, afterCommit?: (result: T) => void): Promise<T>;
  /**
   * As `transaction`, then appends the events `body` returns as the transaction's last statement and commits them with
   * its writes: nothing of the body can run between the events and COMMIT (PostgreSQL sends the two together).
   * Ids come back in the given order and are totally ordered across every writer, every process and every replica: an
   * event becomes visible only after every event with a smaller id, so a reader of `id > cursor` never skips one
   * (PostgreSQL: under the event-log advisory lock, held to COMMIT). `createdAt` is the time of the insertion on the
   * store's clock (SQLite: this process's; PostgreSQL: the database server's, read once the event-log lock is held, so
   * it never decreases in id order, whichever replica wrote): the nearest to the commit any store can stamp, and what
   * the live feed's commit → client latency is measured from. The notification outbox is written with the events: a
   * delivery row per matching subscription, committed with them or not at all (docs/adr/0035-notifications-outbox.md).
   */
  transactionWithEvents<T>(body: (tx: HistoryTx) => Step<WithEvents<T>>, afterCommit?: (committed: Committed<T>) => void): Promise<Committed<T>>;
  /** Throws UnavailableError when the database cannot be written right now (readiness). */
  checkWritable(): Promise<void>;
  close(): Promise<void>;
}
