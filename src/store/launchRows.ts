import { LOCAL_CLUSTER } from '../domain/clusters/model.js';
import { dateOf, sqlDate, type Sql } from './Sql.js';
import type { CoveredTarget, IdempotencyKeyRef, IdempotencyRecord, RevisionEntry } from '../domain/historyPort.js';

/**
 * SQLite statements behind the port's launch-side reads and writes (idempotency records, the engine's work list,
 * revision listings, targets covered by active rollouts). Synchronous, like the rest of the hot path (Sql.ts).
 */

export function findIdempotencyRecord(sql: Sql, { scope, key }: IdempotencyKeyRef): IdempotencyRecord | undefined {
  const raw = sql.get<Omit<IdempotencyRecord, 'createdAt'> & { createdAt: string }>(
    'SELECT * FROM "IdempotencyKey" WHERE "scope" = ? AND "key" = ?',
    scope,
    key,
  );
  return raw ? { ...raw, createdAt: dateOf(raw.createdAt) } : undefined;
}

/** Inserts the record unless the key has one already (the first request's record stays). */
export function insertIdempotencyRecord(sql: Sql, record: Omit<IdempotencyRecord, 'createdAt'>, now: Date): void {
  sql.run(
    'INSERT INTO "IdempotencyKey" ("scope", "key", "operation", "requestHash", "rolloutId", "createdAt") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT ("scope", "key") DO NOTHING',
    record.scope,
    record.key,
    record.operation,
    record.requestHash,
    record.rolloutId,
    sqlDate(now),
  );
}

/** Active rollouts, and ended ones whose engine bookkeeping is not marked finished; oldest first. */
export const ROLLOUTS_NEEDING_ENGINE = `SELECT "id" FROM "Rollout"
  WHERE "state" IN ('PENDING', 'PROGRESSING', 'PAUSED') OR "engineState" NOT LIKE '%"finished":true%'
  ORDER BY "createdAt", "id"`;

export function rolloutIdsNeedingEngine(sql: Sql): string[] {
  return sql.all<{ id: string }>(ROLLOUTS_NEEDING_ENGINE).map((r) => r.id);
}

export function revisionPage(
  sql: Sql,
  kind: string,
  namespace: string,
  name: string,
  beforeN: number | undefined,
  limit: number,
  cluster = LOCAL_CLUSTER,
): RevisionEntry[] {
  return sql
    .all<Omit<RevisionEntry, 'appliedAt'> & { appliedAt: string }>(
      'SELECT "n", "version", "rolloutId", "appliedAt" FROM "Revision" WHERE "cluster" = ? AND "kind" = ? AND "namespace" = ? AND "name" = ? AND "n" < ? ORDER BY "n" DESC LIMIT ?',
      cluster,
      kind,
      namespace,
      name,
      beforeN ?? Number.MAX_SAFE_INTEGER,
      limit,
    )
    .map((r) => ({ ...r, appliedAt: dateOf(r.appliedAt) }));
}

export function coveredTargets(sql: Sql, kind: string, targetStates: readonly string[], rolloutStates: readonly string[]): CoveredTarget[] {
  return sql.all<CoveredTarget>(
    `SELECT t."rolloutId", t."cluster", t."namespace", t."name" FROM "RolloutTarget" t JOIN "Rollout" r ON r."id" = t."rolloutId"
      WHERE t."kind" = ? AND t."state" IN (SELECT value FROM json_each(?)) AND r."state" IN (SELECT value FROM json_each(?))`,
    kind,
    JSON.stringify(targetStates),
    JSON.stringify(rolloutStates),
  );
}

/**
 * Active rollouts with a target in the cluster: the active ones by the state index, then each one's targets by its
 * (rolloutId, ordinal) index until one is in the cluster. Only active rollouts' targets are looked at.
 */
export const ACTIVE_ROLLOUTS_IN_CLUSTER = `SELECT r."id" FROM "Rollout" r
  WHERE r."state" IN ('PENDING', 'PROGRESSING', 'PAUSED')
    AND EXISTS (SELECT 1 FROM "RolloutTarget" t WHERE t."rolloutId" = r."id" AND t."cluster" = ?)
  ORDER BY r."createdAt", r."id"`;

export function activeRolloutIdsInCluster(sql: Sql, cluster: string): string[] {
  return sql.all<{ id: string }>(ACTIVE_ROLLOUTS_IN_CLUSTER, cluster).map((r) => r.id);
}

/**
 * The clusters a rollout's targets are in, each once, by name: a loose index scan of the (rolloutId, cluster, …) unique
 * index, one seek per cluster, so a rollout of 10,000 pools in two clusters costs two seeks, not 10,000 rows.
 */
export const CLUSTERS_OF_ROLLOUT = `WITH RECURSIVE c("cluster") AS (
    SELECT MIN("cluster") FROM "RolloutTarget" WHERE "rolloutId" = ?
    UNION ALL
    SELECT (SELECT MIN(t."cluster") FROM "RolloutTarget" t WHERE t."rolloutId" = ? AND t."cluster" > c."cluster") FROM c WHERE c."cluster" IS NOT NULL
  )
  SELECT "cluster" FROM c WHERE "cluster" IS NOT NULL`;

export function clustersOfRollout(sql: Sql, rolloutId: string): string[] {
  return sql.all<{ cluster: string }>(CLUSTERS_OF_ROLLOUT, rolloutId, rolloutId).map((r) => r.cluster);
}

export type { CoveredTarget, IdempotencyRecord, RevisionEntry };
