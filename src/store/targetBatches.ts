import { LOCAL_CLUSTER } from '../domain/clusters/model.js';
import { AppError, ErrorCode } from '../errors.js';
import type { NamedTargetUpdate, NewRevision, RevisionKey, RevisionRow, UpdatedTarget } from '../domain/historyPort.js';
import { findTarget, insertRevision, latestRevision, updateTarget } from './rolloutRows.js';
import type { Sql } from './Sql.js';

/**
 * The batched target and revision steps of the history port (HistoryTx.updateTargets, insertRevisions;
 * HistoryReads.latestRevisions). On SQLite they are the row-at-a-time statements in a loop: each is a prepared
 * statement of a few µs inside the caller's transaction, so one statement per batch would save nothing worth its
 * complexity. PostgreSQL's versions (store/postgres/PgHistoryStore.ts) are one statement per batch, because there
 * every statement is a round trip.
 */

/**
 * Both stores refuse a batch that names one target twice: one statement cannot apply two changes to one row in
 * order (PostgreSQL's UPDATE … FROM applies one of them, unspecified which), so the contract forbids it everywhere.
 */
export function checkDistinctTargets(changes: readonly { cluster?: string; namespace: string; name: string }[]): void {
  const seen = new Set<string>();
  for (const { cluster, namespace, name } of changes) {
    // A cluster other than local prefixes the key; local's is the key as it read before clusters (ADR 0054).
    const key = cluster === undefined || cluster === LOCAL_CLUSTER ? `${namespace}/${name}` : `${cluster}:${namespace}/${name}`;
    if (seen.has(key)) {
      throw new AppError(ErrorCode.Internal, `updateTargets: target ${key} appears twice in one batch (split it into two calls)`, {
        details: { namespace, name },
      });
    }
    seen.add(key);
  }
}

export function updateTargets(sql: Sql, rolloutId: string, changes: readonly NamedTargetUpdate[], now: Date): (UpdatedTarget | undefined)[] {
  checkDistinctTargets(changes);
  return changes.map(({ cluster, namespace, name, ...change }) => {
    const row = findTarget(sql, rolloutId, namespace, name, cluster);
    return row ? { previousState: row.state, target: updateTarget(sql, row.id, change, now) } : undefined;
  });
}

export function latestRevisions(sql: Sql, keys: readonly RevisionKey[]): (RevisionRow | undefined)[] {
  return keys.map((k) => latestRevision(sql, k.kind, k.namespace, k.name, k.cluster));
}

export function insertRevisions(sql: Sql, revisions: readonly (NewRevision & { appliedAt: Date })[]): void {
  for (const { appliedAt, ...revision } of revisions) insertRevision(sql, revision, appliedAt);
}
