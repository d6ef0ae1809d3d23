import type { NamedTargetUpdate, NewRevision } from '../../domain/historyPort.js';
import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
import { isoOf } from './pool.js';

/**
 * PostgreSQL's batched target and revision statements (HistoryTx.updateTargets, insertRevisions;
 * HistoryReads.latestRevisions): one statement per batch over `unnest` of parallel arrays, where the row-at-a-time
 * steps cost one round trip per target. A 500-target pass of the engine was about 1,000 round trips (find, update)
 * plus three per SUCCEEDED target (latest revision, one or two inserts); it is now three statements.
 * Each input row carries its position (`WITH ORDINALITY`, from 1) so the caller can put the answers back in order.
 */

/**
 * The targets are locked (FOR UPDATE) in the CTE that reads their previous state, so a concurrent writer of one of
 * them waits and this statement's `previousState` is the state it actually changed. `error` is written only where
 * `set_error` is true (updateTarget's "undefined leaves it"), the dates only where given.
 */
export const UPDATE_TARGETS = `
WITH c AS (
  SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::boolean[], $6::text[], $7::int[], $8::timestamp(3)[], $9::timestamp(3)[], $11::text[])
    WITH ORDINALITY AS c(ns, nm, to_state, set_error, new_error, add_attempts, admitted_at, finished_at, cl, ord)
),
old AS (
  SELECT t."id", t."state" AS "previousState", c.*
    FROM "RolloutTarget" t JOIN c ON t."cluster" = c.cl AND t."namespace" = c.ns AND t."name" = c.nm
   WHERE t."rolloutId" = $1
     FOR UPDATE OF t
)
UPDATE "RolloutTarget" t SET
  "state" = old.to_state,
  "error" = CASE WHEN old.set_error THEN old.new_error ELSE t."error" END,
  "attempts" = t."attempts" + old.add_attempts,
  "admittedAt" = COALESCE(old.admitted_at, t."admittedAt"),
  "finishedAt" = COALESCE(old.finished_at, t."finishedAt"),
  "updatedAt" = $10::timestamp(3)
FROM old WHERE t."id" = old."id"
RETURNING old.ord AS ord, old."previousState" AS "previousState", t.*`;

export function updateTargetsParams(rolloutId: string, changes: readonly NamedTargetUpdate[], now: Date): unknown[] {
  return [
    rolloutId,
    changes.map((c) => c.namespace),
    changes.map((c) => c.name),
    changes.map((c) => c.state),
    changes.map((c) => c.error !== undefined),
    changes.map((c) => c.error ?? null),
    changes.map((c) => (c.countAttempt ? 1 : 0)),
    changes.map((c) => isoOf(c.admittedAt)),
    changes.map((c) => isoOf(c.finishedAt)),
    isoOf(now),
    changes.map((c) => c.cluster ?? LOCAL_CLUSTER),
  ];
}

/** The newest revision of each key; LATERAL … LIMIT 1 walks the (cluster, kind, namespace, name, n) index backwards per key. */
export const LATEST_REVISIONS = `
SELECT k.ord AS ord, r."n", r."version"
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS k(kind, ns, nm, cl, ord)
  CROSS JOIN LATERAL (
    SELECT "n", "version" FROM "Revision" WHERE "cluster" = k.cl AND "kind" = k.kind AND "namespace" = k.ns AND "name" = k.nm ORDER BY "n" DESC LIMIT 1
  ) r`;

export const INSERT_REVISIONS = `
INSERT INTO "Revision" ("kind", "namespace", "name", "n", "version", "rolloutId", "appliedAt", "cluster")
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::timestamp(3)[], $8::text[])`;

export function insertRevisionsParams(revisions: readonly (NewRevision & { appliedAt: Date })[]): unknown[] {
  return [
    revisions.map((r) => r.kind),
    revisions.map((r) => r.namespace),
    revisions.map((r) => r.name),
    revisions.map((r) => r.n),
    revisions.map((r) => r.version),
    revisions.map((r) => r.rolloutId),
    revisions.map((r) => isoOf(r.appliedAt)),
    revisions.map((r) => r.cluster ?? LOCAL_CLUSTER),
  ];
}
