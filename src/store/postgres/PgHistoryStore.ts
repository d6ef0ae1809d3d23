import type pg from 'pg';
import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
import { clusterOfEvent, type EventType, type NewEvent, type StoredEvent } from '../../domain/events.js';
import { UnavailableError } from '../../errors.js';
import { databaseUnreachableMessage, isDatabaseUnreachable } from '../../util/databaseUnreachable.js';
import { toStoredEvent } from '../events.js';
import { readEventsAfter, readEventsBefore, type EventRead } from '../eventReads.js';
import { ACTIVE_ROLLOUTS_IN_CLUSTER, CLUSTERS_OF_ROLLOUT, ROLLOUTS_NEEDING_ENGINE } from '../launchRows.js';
import type {
  Committed,
  GateAttemptRow,
  GateDecisionRow,
  GateRow,
  RunRow,
  WaveRow,
  WindowPolicyRow,
  EventPage,
  CoveredTarget,
  HistoryReads,
  HistoryStore,
  HistoryTx,
  IdempotencyRecord,
  InFlightRow,
  RevisionEntry,
  RevisionRow,
  RolloutRow,
  Step,
  TargetRow,
  TxReads,
  WithEvents,
} from '../port.js';
import { rolloutCountStatement, rolloutListStatement } from '../rolloutQueries.js';
import { newRolloutValues, rolloutColumns, TARGET_COLUMNS } from '../rolloutRows.js';
import { checkDistinctTargets } from '../targetBatches.js';
import { INSERT_REVISIONS, LATEST_REVISIONS, UPDATE_TARGETS, insertRevisionsParams, updateTargetsParams } from './targetBatchStatements.js';
import { isoOf, numbered, preparedQuery, watchLentConnection } from './pool.js';
import { HOLDER } from '../writeProbe.js';
import {
  attemptOfRow,
  attemptValues,
  decisionOfRow,
  GATE_ATTEMPTS,
  INSERT_GATE_ATTEMPT,
  EXTEND_GATE_ATTEMPT,
  FIND_RUN,
  GATE_DECISIONS,
  GATES_OF,
  gateOfRow,
  INSERT_GATE,
  INSERT_GATE_DECISION,
  INSERT_RUN,
  INSERT_WAVE,
  runOfRow,
  UPDATE_GATE,
  UPDATE_WAVE,
  WAVES_OF,
  waveOfRow,
  waveValues,
  DELETE_WINDOW,
  INSERT_WINDOW,
  UPDATE_WINDOW,
  WINDOWS,
  windowOfRow,
} from '../runRows.js';

const pgDate = (value: Date | string) => (typeof value === 'string' ? new Date(value) : value);
import type { Route } from '../../domain/notifications/model.js';
import { type ClusterFacts, clusterFactsWanted, clustersToLabel, NO_CLUSTER_FACTS, routeEvents } from '../../domain/notifications/routing.js';
import { READ_GENERATION, READ_ROUTES } from '../notificationRows.js';
import {
  type ClusterLabelsRow,
  clusterLabelsSql,
  clustersByRollout,
  labelsByCluster,
  type RolloutClusterRow,
  RouteCache,
  type RouteRow,
  rolloutClustersSql,
} from '../outbox.js';

/**
 * The PostgreSQL implementation of the history port, on a pg pool (not Prisma: each Prisma 6.19 query is compiled on
 * the event loop, ADR 9). Batches what SQLite does row by row (one round trip costs about what 15 SQLite statements
 * do), locks what it reads before writing (READ COMMITTED is not SQLite's single writer), and retries a transaction on
 * serialization failure or deadlock.
 *
 * Event ids: a sequence hands out ids at INSERT, but transactions commit in any order, so with several writers an
 * `id > cursor` reader would skip an id that commits after a larger one (7–12% of events in the spike).
 * `transactionWithEvents` therefore takes a transaction-scoped advisory lock in the statement that INSERTs
 * (INSERT_EVENTS), the transaction's last, and holds it to COMMIT, sent with it (commitWithEvents): event-writing
 * transactions commit in id order, and the lock is held only for the INSERT → COMMIT window.
 */
export const EVENT_LOG_LOCK = 7243341735;
export const EVENTS_CHANNEL = 'rollplane_events';

/**
 * Launch locks (`HistoryTx.lockLaunches`) use the two-int form of the advisory locks, `(class, kind)`: PostgreSQL keeps
 * it apart from the one-bigint form of EVENT_LOG_LOCK and of Prisma Migrate's lock (72707369), so none of them can
 * collide. The class is "RPLA" in ASCII; the kind's number is a hash of its name, the same in every replica and
 * release (two kinds sharing a number would only serialize each other's launches, never break them).
 */
export const LAUNCH_LOCK_CLASS = 0x52504c41;

/** FNV-1a (32 bits) of the kind's name, as PostgreSQL's signed int4. */
export function launchLockKey(kind: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(kind, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193);
  return hash | 0;
}

const RETRIES = 5;
type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

/** 40001 serialization_failure, 40P01 deadlock_detected: the transaction may succeed when run again. */
function isRetriable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01';
}

/**
 * The database is unreachable, shutting down or refusing connections, or it cancelled a statement that ran past the
 * pool's statement timeout (57014, see pool.ts): UNAVAILABLE, retry later (no address: clients see it).
 */
export function unavailable(error: unknown): unknown {
  if (isDatabaseUnreachable(error)) return new UnavailableError(databaseUnreachableMessage(error), { cause: error });
  if ((error as { code?: unknown } | null)?.code === '57014')
    return new UnavailableError('the database did not finish a statement in time (57014)', { cause: error });
  return error;
}

type EventRow = Omit<StoredEvent, 'payload' | 'type' | 'kind'> & { payload: string; type: string; kind: string | null };

const ROLLOUT_COLUMNS = rolloutColumns();
const FIND_ROLLOUT = `SELECT ${ROLLOUT_COLUMNS} FROM "Rollout" WHERE "id" = $1`;
const TARGETS_OF = `SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE "rolloutId" = $1 ORDER BY "ordinal"`;
const TARGETS_IN_STATE = `SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE "rolloutId" = $1 AND "state" = $2 ORDER BY "ordinal"`;
const FIND_TARGET = `SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE "rolloutId" = $1 AND "namespace" = $2 AND "name" = $3 AND "cluster" = $4`;
const TARGET_PAGE = `SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE "rolloutId" = $1 AND "ordinal" > $2 ORDER BY "ordinal" LIMIT $3`;
const TARGET_PAGE_IN_STATE = `SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE "rolloutId" = $1 AND "state" = $4 AND "ordinal" > $2 ORDER BY "ordinal" LIMIT $3`;
const COUNT_TARGETS = 'SELECT COUNT(*) AS n FROM "RolloutTarget" WHERE "rolloutId" = $1';
const COUNT_TARGETS_IN_STATE = 'SELECT COUNT(*) AS n FROM "RolloutTarget" WHERE "rolloutId" = $1 AND "state" = $2';
/**
 * A page of targets and the count of all it pages through, in one round trip. The count is the driving row, so an
 * empty page (past the end, or no such rollout) still brings it: one row whose target columns are null.
 */
const pageWithCount = (page: string, count: string) =>
  `SELECT c.n AS "totalCount", t.* FROM (${count}) c LEFT JOIN LATERAL (${page}) t ON true ORDER BY t."ordinal"`;
const TARGET_PAGE_WITH_COUNT = pageWithCount(TARGET_PAGE, COUNT_TARGETS);
const TARGET_PAGE_IN_STATE_WITH_COUNT = pageWithCount(TARGET_PAGE_IN_STATE, COUNT_TARGETS_IN_STATE.replace('$2', '$4'));
/**
 * Some of the targets only: in some clusters (a staged run's wave; $5 null: any), changed to or from one version ($6
 * null: any), in one state or any ($4 null).
 */
const SOME_TARGETS =
  '"rolloutId" = $1 AND ($4::text IS NULL OR "state" = $4) AND ($5::text[] IS NULL OR "cluster" = ANY($5::text[])) AND ($6::text IS NULL OR "toVersion" = $6 OR "fromVersion" = $6)';
const SOME_TARGETS_PAGE_WITH_COUNT = pageWithCount(
  `SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE ${SOME_TARGETS} AND "ordinal" > $2 ORDER BY "ordinal" LIMIT $3`,
  `SELECT COUNT(*) AS n FROM "RolloutTarget" WHERE ${SOME_TARGETS}`,
);

/**
 * The events of a transaction in one statement (see EVENT_LOG_LOCK): the event-log lock, the time stamp, the rows and
 * the feeds' wake-up. Holding the lock costs the writers queued behind it every round trip made under it, and each one
 * waits for this process's event loop, so the lock is taken by the same statement that inserts, and COMMIT is sent
 * with it (commitWithEvents). Order inside the statement: every row the INSERT reads is joined to `stamp`, which is
 * read from `turn`, so the lock is held before the first id is drawn; `stamp` is the database's clock once the lock is held (truncated to
 * the column's milliseconds), and never before the last event's (a clock set back), so createdAt never decreases in id
 * order, whichever replica wrote: a `since` filter is read as a starting id (store/eventReads.ts). Ids are drawn in the
 * given order (ORDER BY ord) and returned sorted (RETURNING's order is not promised). The NOTIFY payload is only a hint
 * (the last id): feeds read the table.
 */
const INSERT_EVENTS = `WITH turn AS MATERIALIZED (SELECT pg_advisory_xact_lock($7::int8) AS locked),
  stamp AS MATERIALIZED (SELECT GREATEST(date_trunc('milliseconds', clock_timestamp() AT TIME ZONE 'UTC')::timestamp(3),
    (SELECT e."createdAt" FROM "Event" e ORDER BY e."id" DESC LIMIT 1)) AS "at" FROM turn),
  inserted AS (
    INSERT INTO "Event" ("type", "rolloutId", "kind", "namespace", "name", "payload", "cluster", "createdAt")
    SELECT u.t, u.r, u.k, u.ns, u.n, u.p, u.c, stamp."at"
      FROM stamp, unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $9::text[]) WITH ORDINALITY AS u(t, r, k, ns, n, p, c, ord)
     ORDER BY u.ord
    RETURNING "id", "createdAt")
SELECT array_agg("id" ORDER BY "id") AS ids, MAX("createdAt") AS "createdAt", pg_notify($8, MAX("id")::text) AS notified FROM inserted`;

/**
 * INSERT_EVENTS with the outbox (docs/adr/0035): the delivery rows of the matching subscriptions go in the same
 * statement, so they commit with their events or not at all, and cost no round trip. Each row names its event by its
 * position among the events given (`r.ord`, from 1), matched to the ids drawn in that order. A repeat of a once-per
 * key already in the table is dropped by its unique index (ON CONFLICT DO NOTHING).
 */
const INSERT_EVENTS_ROUTED = `WITH turn AS MATERIALIZED (SELECT pg_advisory_xact_lock($7::int8) AS locked),
  stamp AS MATERIALIZED (SELECT date_trunc('milliseconds', clock_timestamp() AT TIME ZONE 'UTC')::timestamp(3) AS "at" FROM turn),
  inserted AS (
    INSERT INTO "Event" ("type", "rolloutId", "kind", "namespace", "name", "payload", "cluster", "createdAt")
    SELECT u.t, u.r, u.k, u.ns, u.n, u.p, u.c, stamp."at"
      FROM stamp, unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $9::text[]) WITH ORDINALITY AS u(t, r, k, ns, n, p, c, ord)
     ORDER BY u.ord
    RETURNING "id", "createdAt"),
  numbered AS (SELECT "id", row_number() OVER (ORDER BY "id") AS ord FROM inserted),
  routed AS (
    INSERT INTO "NotificationDelivery" ("subscriptionId", "eventId", "onceKey", "lane", "state", "attempts", "nextAttemptAt", "createdAt")
    SELECT r.s, numbered."id", r.k, r.l, 'PENDING', 0, stamp."at", stamp."at"
      FROM unnest($10::int8[], $11::text[], $12::text[], $13::text[]) AS r(ord, s, k, l)
      JOIN numbered ON numbered.ord = r.ord CROSS JOIN stamp
    ON CONFLICT DO NOTHING
    RETURNING 1)
SELECT array_agg("id" ORDER BY "id") AS ids, MAX("createdAt") AS "createdAt", pg_notify($8, MAX("id")::text) AS notified,
       (SELECT count(*) FROM routed) AS routed FROM inserted`;

function readsOn(db: Queryable): HistoryReads {
  const rows = async <T extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<T[]> => {
    try {
      return (await db.query<T>(text, params)).rows;
    } catch (error) {
      throw unavailable(error);
    }
  };
  /**
   * As `rows`, as a named prepared statement (pool.ts, preparedQuery): the API's reads and the engine's, whose texts
   * are a fixed set. Only for statements that name their columns: a prepared `*` fails once a migration adds one.
   */
  const prepared = async <T extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<T[]> => {
    try {
      return (await db.query<T>(preparedQuery(text, params))).rows;
    } catch (error) {
      throw unavailable(error);
    }
  };
  const one = async <T extends pg.QueryResultRow>(text: string, params: unknown[]) => (await rows<T>(text, params))[0];
  const preparedOne = async <T extends pg.QueryResultRow>(text: string, params: unknown[]) => (await prepared<T>(text, params))[0];
  /** Runs a read of store/eventReads.ts, one prepared statement per step (as store/events.ts does on SQLite). */
  const runRead = async (read: EventRead): Promise<EventPage> => {
    let step = read.next();
    while (!step.done) {
      const query = step.value;
      const text = numbered(query.text);
      const params = query.params.map((p) => (p instanceof Date ? isoOf(p) : p));
      step = read.next(
        query.returns === 'events'
          ? (await prepared<EventRow>(text, params)).map((r) => toStoredEvent(r as never))
          : ((await preparedOne<{ id: number | null }>(text, params))?.id ?? null),
      );
    }
    return step.value;
  };
  return {
    findRollout: (id) => preparedOne<RolloutRow>(FIND_ROLLOUT, [id]),
    findRolloutByIdempotencyKey: ({ scope, key }) =>
      one<RolloutRow>('SELECT * FROM "Rollout" WHERE "idempotencyScope" = $1 AND "idempotencyKey" = $2', [scope, key]),
    targetsOf: (rolloutId) => prepared<TargetRow>(TARGETS_OF, [rolloutId]),
    targetsInState: (rolloutId, state) => prepared<TargetRow>(TARGETS_IN_STATE, [rolloutId, state]),
    findTarget: (rolloutId, namespace, name, cluster = LOCAL_CLUSTER) => preparedOne<TargetRow>(FIND_TARGET, [rolloutId, namespace, name, cluster]),
    latestRevision: (kind, namespace, name, cluster = LOCAL_CLUSTER) =>
      one<RevisionRow>(
        'SELECT "n", "version" FROM "Revision" WHERE "cluster" = $4 AND "kind" = $1 AND "namespace" = $2 AND "name" = $3 ORDER BY "n" DESC LIMIT 1',
        [kind, namespace, name, cluster],
      ),
    async latestRevisions(keys) {
      if (keys.length === 0) return [];
      const found = await rows<RevisionRow & { ord: number }>(LATEST_REVISIONS, [
        keys.map((k) => k.kind),
        keys.map((k) => k.namespace),
        keys.map((k) => k.name),
        keys.map((k) => k.cluster ?? LOCAL_CLUSTER),
      ]);
      const byOrdinal = new Map(found.map(({ ord, ...revision }) => [ord, revision]));
      return keys.map((_, i) => byOrdinal.get(i + 1));
    },
    allInFlight: () => rows<InFlightRow>('SELECT * FROM "InFlightChange"'),
    listEventsAfter: (filter, afterId, limit) => runRead(readEventsAfter(filter, afterId, limit, 'postgresql')),
    listEventsBefore: (filter, beforeId, limit) => runRead(readEventsBefore(filter, beforeId, limit, 'postgresql')),
    async lastEventId() {
      return (await preparedOne<{ id: number | null }>('SELECT MAX("id") AS id FROM "Event"', []))!.id ?? 0;
    },
    async listRollouts(filter, before, limit) {
      const { text, params } = rolloutListStatement(filter, before, limit, 'postgresql');
      return prepared<RolloutRow>(numbered(text), params);
    },
    async countRollouts(filter) {
      const { text, params } = rolloutCountStatement(filter, 'postgresql');
      return (await preparedOne<{ n: number }>(numbered(text), params))!.n;
    },
    async targetStateCounts(rolloutId) {
      const counts = await prepared<{ state: string; n: number }>(
        'SELECT "state", COUNT(*) AS n FROM "RolloutTarget" WHERE "rolloutId" = $1 GROUP BY "state"',
        [rolloutId],
      );
      return new Map(counts.map((r) => [r.state, r.n]));
    },
    async listRolloutsWithCounts(filter, before, limit) {
      // The page, then each row's target counts by state as one JSON object, in one statement.
      const { text, params } = rolloutListStatement(filter, before, limit, 'postgresql');
      const rows = await prepared<RolloutRow & { targetCounts: Record<string, number> | null }>(
        numbered(
          `WITH page AS (${text}) SELECT page.*, (SELECT json_object_agg(c."state", c.n) FROM (SELECT t."state", COUNT(*)::int AS n FROM "RolloutTarget" t WHERE t."rolloutId" = page."id" GROUP BY t."state") c) AS "targetCounts" FROM page ORDER BY page."createdAt" DESC, page."id" DESC`,
        ),
        params,
      );
      const counts = new Map<string, Map<string, number>>();
      const page = rows.map(({ targetCounts, ...row }) => {
        if (targetCounts) counts.set(row.id, new Map(Object.entries(targetCounts)));
        return row;
      });
      return { rows: page, counts };
    },
    async targetStateCountsOf(rolloutIds) {
      const out = new Map<string, Map<string, number>>();
      if (rolloutIds.length === 0) return out;
      const counts = await prepared<{ rolloutId: string; state: string; n: number }>(
        'SELECT "rolloutId", "state", COUNT(*) AS n FROM "RolloutTarget" WHERE "rolloutId" = ANY($1::text[]) GROUP BY "rolloutId", "state"',
        [[...rolloutIds]],
      );
      for (const row of counts) {
        let byState = out.get(row.rolloutId);
        if (!byState) {
          byState = new Map();
          out.set(row.rolloutId, byState);
        }
        byState.set(row.state, row.n);
      }
      return out;
    },
    targetPage: (rolloutId, state, afterOrdinal, limit) =>
      state
        ? prepared<TargetRow>(TARGET_PAGE_IN_STATE, [rolloutId, afterOrdinal ?? -1, limit, state])
        : prepared<TargetRow>(TARGET_PAGE, [rolloutId, afterOrdinal ?? -1, limit]),
    async countTargets(rolloutId, state) {
      const row = state
        ? await preparedOne<{ n: number }>(COUNT_TARGETS_IN_STATE, [rolloutId, state])
        : await preparedOne<{ n: number }>(COUNT_TARGETS, [rolloutId]);
      return row!.n;
    },
    async targetPageWithCount(rolloutId, state, afterOrdinal, limit, only) {
      const found =
        only?.clusters || only?.version !== undefined
          ? await prepared<TargetRow & { totalCount: number }>(SOME_TARGETS_PAGE_WITH_COUNT, [
              rolloutId,
              afterOrdinal ?? -1,
              limit,
              state ?? null,
              only.clusters ? [...only.clusters] : null,
              only.version ?? null,
            ])
          : state
            ? await prepared<TargetRow & { totalCount: number }>(TARGET_PAGE_IN_STATE_WITH_COUNT, [rolloutId, afterOrdinal ?? -1, limit, state])
            : await prepared<TargetRow & { totalCount: number }>(TARGET_PAGE_WITH_COUNT, [rolloutId, afterOrdinal ?? -1, limit]);
      const totalCount = found[0]?.totalCount ?? 0;
      // An empty page is the count's row alone, its target columns null.
      const rows = found.filter((r) => r.id !== null).map(({ totalCount: _, ...target }) => target);
      return { rows, totalCount };
    },
    findIdempotencyRecord: ({ scope, key }) => one<IdempotencyRecord>('SELECT * FROM "IdempotencyKey" WHERE "scope" = $1 AND "key" = $2', [scope, key]),
    async rolloutIdsNeedingEngine() {
      return (await rows<{ id: string }>(ROLLOUTS_NEEDING_ENGINE)).map((r) => r.id);
    },
    revisionPage: (kind, namespace, name, beforeN, limit, cluster = LOCAL_CLUSTER) =>
      rows<RevisionEntry>(
        'SELECT "n", "version", "rolloutId", "appliedAt" FROM "Revision" WHERE "cluster" = $6 AND "kind" = $1 AND "namespace" = $2 AND "name" = $3 AND "n" < $4 ORDER BY "n" DESC LIMIT $5',
        [kind, namespace, name, beforeN ?? 2 ** 31 - 1, limit, cluster],
      ),
    coveredTargets: (kind, targetStates, rolloutStates) =>
      rows<CoveredTarget>(
        `SELECT t."rolloutId", t."cluster", t."namespace", t."name" FROM "RolloutTarget" t JOIN "Rollout" r ON r."id" = t."rolloutId"
          WHERE t."kind" = $1 AND t."state" = ANY($2::text[]) AND r."state" = ANY($3::text[])`,
        [kind, [...targetStates], [...rolloutStates]],
      ),
    async activeRolloutIdsInCluster(cluster) {
      return (await rows<{ id: string }>(numbered(ACTIVE_ROLLOUTS_IN_CLUSTER), [cluster])).map((r) => r.id);
    },
    async clustersOfRollout(rolloutId) {
      return (await rows<{ cluster: string }>(numbered(CLUSTERS_OF_ROLLOUT), [rolloutId, rolloutId])).map((r) => r.cluster);
    },
    async runOf(rolloutId) {
      const [run] = await rows<RunRow>(numbered(FIND_RUN), [rolloutId]);
      if (!run) return undefined;
      return { run: runOfRow(run, pgDate), waves: (await rows<WaveRow>(numbered(WAVES_OF), [rolloutId])).map((row) => waveOfRow(row, pgDate)) };
    },
    gatesOf: async (rolloutId) => (await rows<GateRow>(numbered(GATES_OF), [rolloutId])).map((row) => gateOfRow(row, pgDate)),
    gateDecisions: async (gateId) => (await rows<GateDecisionRow>(numbered(GATE_DECISIONS), [gateId])).map((row) => decisionOfRow(row, pgDate)),
    gateAttempts: async (gateId) => (await rows<GateAttemptRow>(numbered(GATE_ATTEMPTS), [gateId])).map((row) => attemptOfRow(row, pgDate)),
    windowPolicies: async () => (await rows<WindowPolicyRow>(WINDOWS)).map((row) => windowOfRow(row, pgDate)),
  };
}

/** A step that waits for one promise (the store's driver awaits what the body yields). */
function* awaited<T>(promise: () => Promise<T>): Step<T> {
  return (yield promise()) as T;
}

/** Runs a transaction body, awaiting every promise it yields and sending back the result (or throwing the error in). */
async function drive<T>(body: Generator<unknown, T, unknown>): Promise<T> {
  let step = body.next();
  while (!step.done) {
    let value: unknown;
    try {
      value = await step.value;
    } catch (error) {
      step = body.throw(error);
      continue;
    }
    step = body.next(value);
  }
  return step.value;
}

function txOn(client: pg.PoolClient): HistoryTx {
  const reads = readsOn(client);
  const txReads = Object.fromEntries(
    Object.entries(reads).map(([name, read]) => [name, (...args: unknown[]) => awaited(() => (read as (...a: unknown[]) => Promise<unknown>)(...args))]),
  ) as TxReads;
  const rows = <T extends pg.QueryResultRow>(text: string, params: unknown[]): Step<T[]> => awaited(async () => (await client.query<T>(text, params)).rows);
  const run = (text: string, params: unknown[]): Step<unknown> => awaited(() => client.query(text, params));
  return {
    ...txReads,
    *lockLaunches(kind) {
      yield* run('SELECT pg_advisory_xact_lock($1::int4, $2::int4)', [LAUNCH_LOCK_CLASS, launchLockKey(kind)]);
    },
    lockRollout: function* (id) {
      return (yield* rows<RolloutRow>('SELECT * FROM "Rollout" WHERE "id" = $1 FOR UPDATE', [id]))[0];
    },
    *insertRollout(row, now) {
      // ON CONFLICT waits for a concurrent insert of the same key to commit, then inserts nothing.
      const inserted = yield* rows<RolloutRow>(
        `INSERT INTO "Rollout" ("id", "kind", "state", "fromVersion", "toVersion", "selector", "strategy", "causeActor", "causeRunUrl",
           "causeCommit", "causeMessage", "idempotencyKey", "rollbackOfId", "idempotencyScope", "startedBy", "engineState", "createdAt",
           "updatedAt")
         VALUES ($1, $2, 'PENDING', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, '{}', $15, $15)
         ON CONFLICT ("idempotencyScope", "idempotencyKey") DO NOTHING RETURNING *`,
        [...newRolloutValues(row), isoOf(now)],
      );
      return inserted[0];
    },
    *updateRolloutState(id, change, now) {
      const updated = yield* rows<RolloutRow>(
        `UPDATE "Rollout" SET "state" = $1, "message" = $2, "startedAt" = COALESCE($3::timestamp(3), "startedAt"),
           "finishedAt" = COALESCE($4::timestamp(3), "finishedAt"), "updatedAt" = $5 WHERE "id" = $6 RETURNING *`,
        [change.state, change.message, isoOf(change.startedAt), isoOf(change.finishedAt), isoOf(now), id],
      );
      return updated[0]!;
    },
    *updateEngineState(id, engineState, now) {
      yield* run('UPDATE "Rollout" SET "engineState" = $1, "updatedAt" = $2 WHERE "id" = $3', [engineState, isoOf(now), id]);
    },
    *insertTargets(targets, now) {
      if (targets.length === 0) return;
      // One statement for the whole batch.
      yield* run(
        `INSERT INTO "RolloutTarget" ("id", "rolloutId", "kind", "namespace", "name", "ordinal", "state", "fromVersion", "toVersion", "skipReason",
           "finishedAt", "cluster", "attempts", "updatedAt")
         SELECT u.*, 0, $12::timestamp(3)
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamp(3)[], $13::text[]) AS u`,
        [
          targets.map((t) => t.id),
          targets.map((t) => t.rolloutId),
          targets.map((t) => t.kind),
          targets.map((t) => t.namespace),
          targets.map((t) => t.name),
          targets.map((t) => t.ordinal),
          targets.map((t) => t.state),
          targets.map((t) => t.fromVersion),
          targets.map((t) => t.toVersion),
          targets.map((t) => t.skipReason),
          targets.map((t) => isoOf(t.finishedAt)),
          isoOf(now),
          targets.map((t) => t.cluster ?? LOCAL_CLUSTER),
        ],
      );
    },
    *insertIdempotencyRecord(record, now) {
      // ON CONFLICT waits for a concurrent insert of the same key to commit, then keeps the first record.
      yield* run(
        'INSERT INTO "IdempotencyKey" ("scope", "key", "operation", "requestHash", "rolloutId", "createdAt") VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT ("scope", "key") DO NOTHING',
        [record.scope, record.key, record.operation, record.requestHash, record.rolloutId, isoOf(now)],
      );
    },
    *updateTarget(id, change, now) {
      const updated = yield* rows<TargetRow>(
        `UPDATE "RolloutTarget" SET "state" = $1, "error" = CASE WHEN $2::boolean THEN $3 ELSE "error" END, "attempts" = "attempts" + $4,
           "admittedAt" = COALESCE($5::timestamp(3), "admittedAt"), "finishedAt" = COALESCE($6::timestamp(3), "finishedAt"), "updatedAt" = $7
         WHERE "id" = $8 RETURNING *`,
        [
          change.state,
          change.error !== undefined,
          change.error ?? null,
          change.countAttempt ? 1 : 0,
          isoOf(change.admittedAt),
          isoOf(change.finishedAt),
          isoOf(now),
          id,
        ],
      );
      return updated[0]!;
    },
    *updateTargets(rolloutId, changes, now) {
      checkDistinctTargets(changes);
      if (changes.length === 0) return [];
      const updated = yield* rows<TargetRow & { ord: number; previousState: string }>(UPDATE_TARGETS, updateTargetsParams(rolloutId, changes, now));
      const byOrdinal = new Map(updated.map(({ ord, previousState, ...target }) => [ord, { previousState, target }]));
      return changes.map((_, i) => byOrdinal.get(i + 1));
    },
    *noteWaiting(rolloutId, cluster, target, error, now) {
      const update = `UPDATE "RolloutTarget" SET "error" = $1, "updatedAt" = $2 WHERE "rolloutId" = $3 AND "cluster" = $4 AND "state" = 'PROGRESSING'`;
      const params = [error, isoOf(now), rolloutId, cluster];
      const changed = target
        ? yield* rows<{ id: string }>(`${update} AND "namespace" = $5 AND "name" = $6 RETURNING "id"`, [...params, target.namespace, target.name])
        : yield* rows<{ id: string }>(`${update} RETURNING "id"`, params);
      return changed.length;
    },
    *cancelPendingTargets(rolloutId, now) {
      const cancelled = yield* rows<TargetRow>(
        `WITH pending AS (SELECT * FROM "RolloutTarget" WHERE "rolloutId" = $1 AND "state" = 'PENDING' FOR UPDATE)
         UPDATE "RolloutTarget" t SET "state" = 'CANCELLED', "finishedAt" = $2, "updatedAt" = $2 FROM pending WHERE t."id" = pending."id"
         RETURNING pending.*`,
        [rolloutId, isoOf(now)],
      );
      return cancelled.sort((a, b) => a.ordinal - b.ordinal);
    },
    *insertRevision(revision, now) {
      yield* run(
        'INSERT INTO "Revision" ("cluster", "kind", "namespace", "name", "n", "version", "rolloutId", "appliedAt") VALUES ($8, $1, $2, $3, $4, $5, $6, $7)',
        [revision.kind, revision.namespace, revision.name, revision.n, revision.version, revision.rolloutId, isoOf(now), revision.cluster ?? LOCAL_CLUSTER],
      );
    },
    *insertRevisions(revisions) {
      if (revisions.length === 0) return;
      yield* run(INSERT_REVISIONS, insertRevisionsParams(revisions));
    },
    *putInFlight(row, now) {
      yield* run(
        `INSERT INTO "InFlightChange" ("cluster", "kind", "namespace", "name", "payload", "createdAt") VALUES ($6, $1, $2, $3, $4, $5)
         ON CONFLICT ("cluster", "kind", "namespace", "name") DO UPDATE SET "payload" = EXCLUDED."payload", "createdAt" = EXCLUDED."createdAt"`,
        [row.kind, row.namespace, row.name, row.payload, isoOf(now), row.cluster ?? LOCAL_CLUSTER],
      );
    },
    *deleteInFlight(kind, namespace, name, cluster = LOCAL_CLUSTER) {
      const where = 'DELETE FROM "InFlightChange" WHERE "cluster" = $4 AND "kind" = $1 AND "namespace" = $2 AND "name" = $3';
      return (yield* rows<{ name: string }>(`${where} RETURNING "name"`, [kind, namespace, name, cluster])).length;
    },
    *insertRun(r, waves) {
      yield* run(numbered(INSERT_RUN), [r.rolloutId, r.strategy, r.excluded, r.failurePolicy, r.unreachable, r.startedBy, isoOf(r.createdAt)]);
      for (const wave of waves)
        yield* run(
          numbered(INSERT_WAVE),
          waveValues(wave, (b) => b),
        );
    },
    *insertGate(g) {
      const inserted = yield* rows<{ id: string }>(`${numbered(INSERT_GATE)} RETURNING "id"`, [
        g.id,
        g.rolloutId,
        g.key,
        g.type,
        g.config,
        g.state,
        g.reason,
        isoOf(g.openedAt),
        isoOf(g.endedAt),
      ]);
      return inserted.length > 0;
    },
    *updateGate(id, state, reason, endedAt) {
      yield* run(numbered(UPDATE_GATE), [state, reason, isoOf(endedAt), id]);
    },
    *updateWave(rolloutId, ordinal, state, reason, startedAt, finishedAt) {
      yield* run(numbered(UPDATE_WAVE), [state, reason, isoOf(startedAt), isoOf(finishedAt), rolloutId, ordinal]);
    },
    *insertWindowPolicy(w) {
      const inserted = yield* rows<{ name: string }>(`${numbered(INSERT_WINDOW)} RETURNING "name"`, [
        w.name,
        w.kind,
        w.definition,
        isoOf(w.createdAt),
        isoOf(w.updatedAt),
      ]);
      return inserted.length > 0;
    },
    *updateWindowPolicy(w) {
      return (yield* rows<{ name: string }>(`${numbered(UPDATE_WINDOW)} RETURNING "name"`, [w.kind, w.definition, isoOf(w.updatedAt), w.name])).length > 0;
    },
    *announceWindow(name, from, to) {
      const sql = 'UPDATE "MaintenanceWindow" SET "announced" = $1 WHERE "name" = $2 AND "announced" IS NOT DISTINCT FROM $3 RETURNING "name"';
      return (yield* rows<{ name: string }>(sql, [to, name, from])).length > 0;
    },
    *deleteWindowPolicy(name) {
      return (yield* rows<{ name: string }>(`${numbered(DELETE_WINDOW)} RETURNING "name"`, [name])).length > 0;
    },
    *insertGateDecision(d) {
      yield* run(numbered(INSERT_GATE_DECISION), [d.gateId, d.tokenId, d.role, d.decision, d.comment, isoOf(d.at)]);
    },
    *insertGateAttempt(a) {
      return (yield* rows<{ seq: number }>(`${numbered(INSERT_GATE_ATTEMPT)} RETURNING "seq"`, attemptValues(a, isoOf))).length > 0;
    },
    *extendGateAttempt(gateId, seq, at) {
      const values = [isoOf(at), gateId, seq, isoOf(at), gateId, seq];
      return (yield* rows<{ seq: number }>(`${numbered(EXTEND_GATE_ATTEMPT)} RETURNING "seq"`, values)).length > 0;
    },
  };
}

/**
 * What routing by cluster needs (routing.ts ClusterFacts), read in the transaction only when a subscription selects
 * clusters: one round trip for the rollouts' clusters (when a rollout's own event is routed), one for the labels.
 */
async function clusterFactsIn(client: pg.PoolClient, events: readonly NewEvent[], routes: readonly Route[]): Promise<ClusterFacts> {
  const wanted = clusterFactsWanted(events, routes);
  if (!wanted) return NO_CLUSTER_FACTS;
  const placeholders = (values: readonly string[]) => values.map((_, i) => `$${i + 1}`).join(', ');
  const clustersOfRollout =
    wanted.rolloutIds.length > 0
      ? clustersByRollout((await client.query<RolloutClusterRow>(rolloutClustersSql(placeholders(wanted.rolloutIds)), wanted.rolloutIds)).rows)
      : new Map<string, string[]>();
  const clusters = wanted.labels ? clustersToLabel(events, clustersOfRollout) : [];
  const labelsOf =
    clusters.length > 0 ? labelsByCluster((await client.query<ClusterLabelsRow>(clusterLabelsSql(placeholders(clusters)), clusters)).rows) : new Map();
  return { clustersOfRollout, labelsOf };
}

/**
 * Appends `events` and commits, in one round trip: INSERT_EVENTS and COMMIT go out together (the pool's connections
 * pipeline their queries), so the event-log lock is held while the server runs the two and its WAL is flushed, not
 * also while this process's event loop gets round to sending COMMIT (under load, tens of milliseconds that every
 * writer queued behind the lock waits again). When the INSERT fails, PostgreSQL ends the aborted transaction at that
 * COMMIT without an error and the INSERT's error is thrown.
 */
async function commitWithEvents(client: pg.PoolClient, events: readonly NewEvent[], routes: readonly Route[], facts: ClusterFacts): Promise<StoredEvent[]> {
  if (events.length === 0) {
    await client.query('COMMIT');
    return [];
  }
  const payloads = events.map((e) => JSON.stringify(e.payload ?? {}));
  const clusters = events.map(clusterOfEvent);
  const params: unknown[] = [
    events.map((e) => e.type),
    events.map((e) => e.rolloutId ?? null),
    events.map((e) => e.kind ?? null),
    events.map((e) => e.namespace ?? null),
    events.map((e) => e.name ?? null),
    payloads,
    EVENT_LOG_LOCK,
    EVENTS_CHANNEL,
    clusters,
  ];
  const entries = routeEvents(events, routes, facts);
  if (entries.length > 0) {
    params.push(
      entries.map((e) => e.eventIndex + 1),
      entries.map((e) => e.subscriptionId),
      entries.map((e) => e.onceKey),
      entries.map((e) => e.lane),
    );
  }
  const insert = client.query<{ ids: number[]; createdAt: Date }>(entries.length > 0 ? INSERT_EVENTS_ROUTED : INSERT_EVENTS, params);
  const commit = client.query('COMMIT');
  // Awaited below, after the INSERT: a failure of both must not go unhandled while the INSERT's is thrown.
  commit.catch(() => undefined);
  const { ids, createdAt } = (await insert).rows[0]!;
  await commit;
  return events.map((event, i) => ({
    id: ids[i]!,
    type: event.type as EventType,
    rolloutId: event.rolloutId ?? null,
    kind: event.kind ?? null,
    namespace: event.namespace ?? null,
    name: event.name ?? null,
    cluster: clusters[i]!,
    payload: JSON.parse(payloads[i]!) as Record<string, unknown>,
    createdAt,
  }));
}

export class PgHistoryStore implements HistoryStore {
  readonly provider = 'postgresql' as const;
  readonly read: HistoryReads;
  private readonly commitListeners = new Set<() => void>();
  private readonly routes = new RouteCache();
  /** The routing generation each lent connection's transaction read at BEGIN. */
  private readonly generations = new WeakMap<pg.PoolClient, number | undefined>();

  constructor(private readonly pool: pg.Pool) {
    this.read = readsOn(pool);
  }

  /** `listener` runs right after each of this store's transactions commits (the write generation: ../writeGeneration.ts). */
  onCommit(listener: () => void): () => void {
    this.commitListeners.add(listener);
    return () => this.commitListeners.delete(listener);
  }

  transaction<T>(body: (tx: HistoryTx) => Step<T>, afterCommit?: (result: T) => void): Promise<T> {
    return this.run(
      body,
      async (client, result) => {
        await client.query('COMMIT');
        return result;
      },
      afterCommit,
    );
  }

  /**
   * The outbox's routes are checked in the round trip of BEGIN (the generation is read with it, pipelined): only when
   * a subscription changed does the transaction read them, so the outbox costs no round trip (docs/adr/0035).
   */
  transactionWithEvents<T>(body: (tx: HistoryTx) => Step<WithEvents<T>>, afterCommit?: (committed: Committed<T>) => void): Promise<Committed<T>> {
    return this.run(
      body,
      async (client, { result, events }) => {
        const routes = events.length > 0 ? await this.routesFor(client) : [];
        return { result, stored: await commitWithEvents(client, events, routes, await clusterFactsIn(client, events, routes)) };
      },
      afterCommit,
      async (client) => {
        const [, generation] = await Promise.all([client.query('BEGIN'), client.query<{ generation: number }>(READ_GENERATION)]);
        this.generations.set(client, generation.rows[0]?.generation);
      },
    );
  }

  /** The routes as of the generation this transaction read at BEGIN (read again, inside it, when they changed). */
  private async routesFor(client: pg.PoolClient): Promise<readonly Route[]> {
    const generation = this.generations.get(client);
    if (this.routes.isStale(generation)) this.routes.update((await client.query<RouteRow>(READ_ROUTES)).rows);
    return this.routes.current();
  }

  /** BEGIN (or `begin`), the body, then `commit` (which sends COMMIT); retried on serialization failure or deadlock. */
  private async run<B, R>(
    body: (tx: HistoryTx) => Step<B>,
    commit: (client: pg.PoolClient, value: B) => Promise<R>,
    afterCommit?: (result: R) => void,
    begin: (client: pg.PoolClient) => Promise<unknown> = (client) => client.query('BEGIN'),
  ): Promise<R> {
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch (error) {
        throw unavailable(error);
      }
      const giveBack = watchLentConnection(client);
      let broken: Error | undefined;
      try {
        await begin(client);
        const result = await commit(client, await drive(body(txOn(client))));
        for (const listener of this.commitListeners) listener();
        afterCommit?.(result);
        return result;
      } catch (error) {
        if (isDatabaseUnreachable(error)) {
          broken = error as Error;
          throw unavailable(error);
        }
        await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
        if (isRetriable(error) && attempt < RETRIES) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
          continue;
        }
        throw unavailable(error);
      } finally {
        // A connection that failed is destroyed rather than returned to the pool.
        const failed = giveBack();
        client.release(broken ?? failed);
      }
    }
  }

  async checkWritable(): Promise<void> {
    try {
      await this.pool.query(
        'INSERT INTO "WriteProbe" ("holder", "checkedAt") VALUES ($1, $2) ON CONFLICT ("holder") DO UPDATE SET "checkedAt" = EXCLUDED."checkedAt"',
        [HOLDER, isoOf(new Date())],
      );
    } catch (error) {
      // /readyz shows this to anyone: the code, never the driver's message (it names host and port).
      const code = (error as { code?: unknown } | null)?.code;
      const message = isDatabaseUnreachable(error)
        ? databaseUnreachableMessage(error)
        : `the database cannot be written${typeof code === 'string' ? ` (${code})` : ''}`;
      throw new UnavailableError(message, { cause: error });
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
