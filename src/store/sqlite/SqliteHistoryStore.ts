import type { EventFilter } from '../../domain/events.js';
import type { TargetsOnly } from '../../domain/historyPort.js';
import { insertEvents, lastEventId, listEventsAfter, listEventsBefore } from '../events.js';
import { allInFlight, deleteInFlight, putInFlight } from '../inFlightRows.js';
import {
  activeRolloutIdsInCluster,
  clustersOfRollout,
  coveredTargets,
  findIdempotencyRecord,
  insertIdempotencyRecord,
  revisionPage,
  rolloutIdsNeedingEngine,
} from '../launchRows.js';
import type { Committed, HistoryReads, HistoryStore, HistoryTx, Step, WithEvents } from '../port.js';
import {
  countRollouts,
  countTargets,
  listRollouts,
  targetPage,
  targetPageOf,
  targetStateCounts,
  targetStateCountsOf,
  type RolloutPosition,
  type RolloutQueryFilter,
} from '../rolloutQueries.js';
import {
  cancelPendingTargets,
  noteWaiting,
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
import type { Sql } from '../Sql.js';
import {
  deleteWindowPolicy,
  gateAttempts,
  gateDecisions,
  gatesOf,
  insertGate,
  insertGateAttempt,
  extendGateAttempt,
  insertGateDecision,
  insertRun,
  insertWindowPolicy,
  runOf,
  updateGate,
  updateWave,
  updateWindowPolicy,
  announceWindow,
  windowPolicies,
} from '../runRows.js';
import { insertRevisions, latestRevisions, updateTargets } from '../targetBatches.js';
import { checkDatabaseWritable } from '../writeProbe.js';
import { routeEvents } from '../../domain/notifications/routing.js';
import { clusterFactsOn, currentRoutes, insertDeliveries, RouteCache } from '../outbox.js';

function readsOf(sql: Sql): HistoryReads {
  return {
    findRollout: async (id) => findRollout(sql, id),
    findRolloutByIdempotencyKey: async (key) => findRolloutByIdempotencyKey(sql, key),
    targetsOf: async (rolloutId) => targetsOf(sql, rolloutId),
    targetsInState: async (rolloutId, state) => targetsInState(sql, rolloutId, state),
    findTarget: async (rolloutId, namespace, name, cluster) => findTarget(sql, rolloutId, namespace, name, cluster),
    latestRevision: async (kind, namespace, name, cluster) => latestRevision(sql, kind, namespace, name, cluster),
    latestRevisions: async (keys) => latestRevisions(sql, keys),
    allInFlight: async () => allInFlight(sql),
    listEventsAfter: async (filter: EventFilter, afterId, limit) => listEventsAfter(sql, filter, afterId, limit),
    listEventsBefore: async (filter: EventFilter, beforeId, limit) => listEventsBefore(sql, filter, beforeId, limit),
    lastEventId: async () => lastEventId(sql),
    listRollouts: async (filter: RolloutQueryFilter, before: RolloutPosition | undefined, limit) => listRollouts(sql, filter, before, limit),
    countRollouts: async (filter) => countRollouts(sql, filter),
    targetStateCounts: async (rolloutId) => targetStateCounts(sql, rolloutId),
    targetStateCountsOf: async (rolloutIds) => targetStateCountsOf(sql, rolloutIds),
    listRolloutsWithCounts: async (filter, before, limit) => rolloutsWithCounts(sql, filter, before, limit),
    targetPage: async (rolloutId, state, afterOrdinal, limit) => targetPage(sql, rolloutId, state, afterOrdinal, limit),
    countTargets: async (rolloutId, state) => countTargets(sql, rolloutId, state),
    targetPageWithCount: async (rolloutId, state, afterOrdinal, limit, only) => pageWithCount(sql, rolloutId, state, afterOrdinal, limit, only),
    findIdempotencyRecord: async (key) => findIdempotencyRecord(sql, key),
    rolloutIdsNeedingEngine: async () => rolloutIdsNeedingEngine(sql),
    revisionPage: async (kind, namespace, name, beforeN, limit, cluster) => revisionPage(sql, kind, namespace, name, beforeN, limit, cluster),
    coveredTargets: async (kind, targetStates, rolloutStates) => coveredTargets(sql, kind, targetStates, rolloutStates),
    activeRolloutIdsInCluster: async (cluster) => activeRolloutIdsInCluster(sql, cluster),
    clustersOfRollout: async (rolloutId) => clustersOfRollout(sql, rolloutId),
    runOf: async (rolloutId) => runOf(sql, rolloutId),
    gatesOf: async (rolloutId) => gatesOf(sql, rolloutId),
    gateDecisions: async (gateId) => gateDecisions(sql, gateId),
    gateAttempts: async (gateId) => gateAttempts(sql, gateId),
    windowPolicies: async () => windowPolicies(sql),
  };
}

/** A page of a rollout's targets and the count it pages through, optionally some of them only (a wave's, a version's). */
function pageWithCount(sql: Sql, rolloutId: string, state: string | undefined, afterOrdinal: number | undefined, limit: number, only?: TargetsOnly) {
  if (only?.clusters || only?.version !== undefined) return targetPageOf(sql, rolloutId, state, only, afterOrdinal, limit);
  return { rows: targetPage(sql, rolloutId, state, afterOrdinal, limit), totalCount: countTargets(sql, rolloutId, state) };
}

/** A step that is already done: SQLite's statements run synchronously. */
// biome-ignore lint/correctness/useYield: a step that completes without yielding is the point (see store/port.ts, Step).
function* done<T>(value: T): Generator<never, T, unknown> {
  return value;
}

/** Runs a transaction body to its end without leaving the current synchronous step. */
function runSync<T>(body: Generator<unknown, T, unknown>): T {
  const first = body.next();
  if (!first.done) throw new Error('a SQLite transaction body yielded something other than a store step (it must touch only tx)');
  return first.value;
}

/**
 * The SQLite implementation of the history port, over rollplane's prepared-statement connection (Sql.ts, ADR 9).
 * A transaction body runs synchronously inside Sql.transaction (BEGIN IMMEDIATE … COMMIT): every step returns at once,
 * so the write lock is never held across the event loop and another connection never waits on it long; a lock held by
 * another connection is retried on a timer. One writer at a time orders the event ids, and `afterCommit` runs in the
 * same synchronous step as the commit.
 */

/** A page of rollouts and its progress counts: two statements, but no round trips on SQLite. */
function rolloutsWithCounts(sql: Sql, filter: RolloutQueryFilter, before: RolloutPosition | undefined, limit: number) {
  const rows = listRollouts(sql, filter, before, limit);
  return {
    rows,
    counts: targetStateCountsOf(
      sql,
      rows.map((row) => row.id),
    ),
  };
}

export class SqliteHistoryStore implements HistoryStore {
  readonly provider = 'sqlite' as const;
  readonly read: HistoryReads;
  private readonly tx: HistoryTx;
  private readonly routes = new RouteCache();

  constructor(readonly sql: Sql) {
    this.read = readsOf(sql);
    this.tx = txOf(sql);
  }

  transaction<T>(body: (tx: HistoryTx) => Generator<unknown, T, unknown>, afterCommit?: (result: T) => void): Promise<T> {
    return this.sql.transaction(() => runSync(body(this.tx)), afterCommit);
  }

  transactionWithEvents<T>(body: (tx: HistoryTx) => Step<WithEvents<T>>, afterCommit?: (committed: Committed<T>) => void): Promise<Committed<T>> {
    return this.sql.transaction((sql) => {
      const { result, events } = runSync(body(this.tx));
      const now = new Date();
      const stored = insertEvents(sql, events, now);
      // The outbox (docs/adr/0035): a delivery row per matching subscription, committed with the events or not at all.
      if (stored.length > 0) {
        const routes = currentRoutes(sql, this.routes);
        insertDeliveries(sql, routeEvents(events, routes, clusterFactsOn(sql, events, routes)), stored, now);
      }
      return { result, stored };
    }, afterCommit);
  }

  async checkWritable(): Promise<void> {
    checkDatabaseWritable(this.sql);
  }

  async close(): Promise<void> {
    this.sql.close();
  }
}

function txOf(sql: Sql): HistoryTx {
  return {
    findRollout: (id) => done(findRollout(sql, id)),
    findRolloutByIdempotencyKey: (key) => done(findRolloutByIdempotencyKey(sql, key)),
    targetsOf: (rolloutId) => done(targetsOf(sql, rolloutId)),
    targetsInState: (rolloutId, state) => done(targetsInState(sql, rolloutId, state)),
    findTarget: (rolloutId, namespace, name, cluster) => done(findTarget(sql, rolloutId, namespace, name, cluster)),
    latestRevision: (kind, namespace, name, cluster) => done(latestRevision(sql, kind, namespace, name, cluster)),
    latestRevisions: (keys) => done(latestRevisions(sql, keys)),
    allInFlight: () => done(allInFlight(sql)),
    listEventsAfter: (filter, afterId, limit) => done(listEventsAfter(sql, filter, afterId, limit)),
    listEventsBefore: (filter, beforeId, limit) => done(listEventsBefore(sql, filter, beforeId, limit)),
    lastEventId: () => done(lastEventId(sql)),
    listRollouts: (filter, before, limit) => done(listRollouts(sql, filter, before, limit)),
    countRollouts: (filter) => done(countRollouts(sql, filter)),
    targetStateCounts: (rolloutId) => done(targetStateCounts(sql, rolloutId)),
    targetStateCountsOf: (rolloutIds) => done(targetStateCountsOf(sql, rolloutIds)),
    listRolloutsWithCounts: (filter, before, limit) => done(rolloutsWithCounts(sql, filter, before, limit)),
    targetPage: (rolloutId, state, afterOrdinal, limit) => done(targetPage(sql, rolloutId, state, afterOrdinal, limit)),
    countTargets: (rolloutId, state) => done(countTargets(sql, rolloutId, state)),
    targetPageWithCount: (rolloutId, state, afterOrdinal, limit, only) => done(pageWithCount(sql, rolloutId, state, afterOrdinal, limit, only)),
    findIdempotencyRecord: (key) => done(findIdempotencyRecord(sql, key)),
    rolloutIdsNeedingEngine: () => done(rolloutIdsNeedingEngine(sql)),
    revisionPage: (kind, namespace, name, beforeN, limit, cluster) => done(revisionPage(sql, kind, namespace, name, beforeN, limit, cluster)),
    coveredTargets: (kind, targetStates, rolloutStates) => done(coveredTargets(sql, kind, targetStates, rolloutStates)),
    activeRolloutIdsInCluster: (cluster) => done(activeRolloutIdsInCluster(sql, cluster)),
    clustersOfRollout: (rolloutId) => done(clustersOfRollout(sql, rolloutId)),
    runOf: (rolloutId) => done(runOf(sql, rolloutId)),
    gatesOf: (rolloutId) => done(gatesOf(sql, rolloutId)),
    gateDecisions: (gateId) => done(gateDecisions(sql, gateId)),
    gateAttempts: (gateId) => done(gateAttempts(sql, gateId)),
    windowPolicies: () => done(windowPolicies(sql)),
    insertWindowPolicy: (row) => done(insertWindowPolicy(sql, row)),
    updateWindowPolicy: (row) => done(updateWindowPolicy(sql, row)),
    announceWindow: (name, from, to) => done(announceWindow(sql, name, from, to)),
    deleteWindowPolicy: (name) => done(deleteWindowPolicy(sql, name)),
    insertIdempotencyRecord: (record, now) => done(insertIdempotencyRecord(sql, record, now)),
    // The transaction already holds SQLite's only write lock (BEGIN IMMEDIATE): writers are serialized, launches too.
    lockLaunches: () => done(undefined),
    lockRollout: (id) => done(findRollout(sql, id)),
    insertRollout: (row, now) => done(insertRolloutIfKeyFree(sql, row, now)),
    updateRolloutState: (id, change, now) => done(updateRolloutState(sql, id, change, now)),
    updateEngineState: (id, engineState, now) => done(updateEngineState(sql, id, engineState, now)),
    insertTargets: (rows, now) => done(insertTargets(sql, rows, now)),
    updateTarget: (id, change, now) => done(updateTarget(sql, id, change, now)),
    updateTargets: (rolloutId, changes, now) => done(updateTargets(sql, rolloutId, changes, now)),
    cancelPendingTargets: (rolloutId, now) => done(cancelPendingTargets(sql, rolloutId, now)),
    noteWaiting: (rolloutId, cluster, target, error, now) => done(noteWaiting(sql, rolloutId, cluster, target, error, now)),
    insertRevision: (revision, now) => done(insertRevision(sql, revision, now)),
    insertRevisions: (revisions) => done(insertRevisions(sql, revisions)),
    putInFlight: (row, now) => done(putInFlight(sql, row, now)),
    deleteInFlight: (kind, namespace, name, cluster) => done(deleteInFlight(sql, kind, namespace, name, cluster)),
    insertRun: (run, waves) => done(insertRun(sql, run, waves)),
    insertGate: (gate) => done(insertGate(sql, gate)),
    updateGate: (id, state, reason, endedAt) => done(updateGate(sql, id, state, reason, endedAt)),
    insertGateDecision: (decision) => done(insertGateDecision(sql, decision)),
    insertGateAttempt: (attempt) => done(insertGateAttempt(sql, attempt)),
    extendGateAttempt: (gateId, seq, at) => done(extendGateAttempt(sql, gateId, seq, at)),
    updateWave: (rolloutId, ordinal, state, reason, startedAt, finishedAt) => done(updateWave(sql, rolloutId, ordinal, state, reason, startedAt, finishedAt)),
  };
}
