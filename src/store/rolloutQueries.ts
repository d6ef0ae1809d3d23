import { sqlDate, type Sql, type SqlValue } from './Sql.js';
import type { RolloutPosition, RolloutQueryFilter, TargetsOnly } from '../domain/historyPort.js';
import { rolloutColumns, rolloutFromRaw, TARGET_COLUMNS, targetFromRaw, type RolloutRow, type TargetRow } from './rolloutRows.js';

/**
 * The API's reads of rollouts and targets as prepared SQL (issue 17: through Prisma, a rollouts page cost 22 queries
 * of ~0.8 ms of compilation each on the event loop). Every filter but `search` is served by an index; a test
 * (test/store/queryPlans.test.ts) runs EXPLAIN QUERY PLAN on each and fails when one stops using it.
 */

/** The two SQL dialects the statements are written for; they differ only in the substring search. */
export type Dialect = 'sqlite' | 'postgresql';

function whereOf(filter: RolloutQueryFilter, before?: RolloutPosition, dialect: Dialect = 'sqlite'): { clause: string; params: SqlValue[] } {
  const conditions: string[] = [];
  const params: SqlValue[] = [];
  if (filter.kind) {
    conditions.push('r."kind" = ?');
    params.push(filter.kind);
  }
  if (filter.states && filter.states.length > 0) {
    conditions.push(`r."state" IN (${filter.states.map(() => '?').join(', ')})`);
    params.push(...filter.states);
  }
  if (filter.targetName) {
    conditions.push('r."id" IN (SELECT t."rolloutId" FROM "RolloutTarget" t WHERE t."name" = ?)');
    params.push(filter.targetName);
  }
  if (filter.clusters && filter.clusters.length > 0) {
    // Per rollout, its targets by the (rolloutId, cluster, namespace, name) key: a page of newest rollouts probes each
    // one's key rather than scanning every target of the history for the cluster.
    conditions.push(`EXISTS (SELECT 1 FROM "RolloutTarget" t WHERE t."rolloutId" = r."id" AND t."cluster" IN (${filter.clusters.map(() => '?').join(', ')}))`);
    params.push(...filter.clusters);
  }
  if (filter.wave !== undefined) {
    // Per rollout, its waves by the (rolloutId, ordinal) key, as `clusters` probes its targets.
    conditions.push('EXISTS (SELECT 1 FROM "RolloutWave" w WHERE w."rolloutId" = r."id" AND w."name" = ?)');
    params.push(filter.wave);
  }
  if (filter.version !== undefined) {
    conditions.push('(r."toVersion" = ? OR r."fromVersion" = ?)');
    params.push(filter.version, filter.version);
  }
  if (filter.createdAfter) {
    conditions.push('r."createdAt" >= ?');
    params.push(sqlDate(filter.createdAfter));
  }
  if (filter.createdBefore) {
    conditions.push('r."createdAt" < ?');
    params.push(sqlDate(filter.createdBefore));
  }
  const search = filter.search?.trim().toLowerCase();
  if (search) {
    // instr() has no wildcards (LIKE would treat % and _ as such); lower() folds ASCII, as LIKE did.
    const columns = ['toVersion', 'fromVersion', 'causeActor', 'causeCommit', 'causeMessage', 'id'];
    const position = dialect === 'sqlite' ? 'instr' : 'strpos';
    conditions.push(`(${columns.map((c) => `${position}(lower(r."${c}"), ?) > 0`).join(' OR ')})`);
    params.push(...columns.map(() => search));
  }
  if (before) {
    conditions.push('(r."createdAt" < ? OR (r."createdAt" = ? AND r."id" < ?))');
    const at = sqlDate(before.createdAt);
    params.push(at, at, before.id);
  }
  return { clause: conditions.length ? `WHERE ${conditions.join(' AND ')}` : '', params };
}

/** The statement behind listRollouts (exported for the query-plan test). */
export function rolloutListStatement(
  filter: RolloutQueryFilter,
  before: RolloutPosition | undefined,
  limit: number,
  dialect: Dialect = 'sqlite',
): { text: string; params: SqlValue[] } {
  const { clause, params } = whereOf(filter, before, dialect);
  params.push(limit);
  return { text: `SELECT ${LIST_COLUMNS} FROM "Rollout" r ${clause} ORDER BY r."createdAt" DESC, r."id" DESC LIMIT ?`, params };
}

/** Named, in RolloutRow's order (rolloutFromRaw): `r.*` would hand back whatever columns a later migration adds. */
const LIST_COLUMNS = rolloutColumns('r.');

export function listRollouts(sql: Sql, filter: RolloutQueryFilter, before: RolloutPosition | undefined, limit: number): RolloutRow[] {
  const { text, params } = rolloutListStatement(filter, before, limit);
  return sql.rawAll(text, params).map(rolloutFromRaw);
}

/** The statement behind countRollouts (exported for the query-plan test). */
export function rolloutCountStatement(filter: RolloutQueryFilter, dialect: Dialect = 'sqlite'): { text: string; params: SqlValue[] } {
  const { clause, params } = whereOf(filter, undefined, dialect);
  return { text: `SELECT COUNT(*) AS n FROM "Rollout" r ${clause}`, params };
}

export function countRollouts(sql: Sql, filter: RolloutQueryFilter): number {
  const { text, params } = rolloutCountStatement(filter);
  return sql.get<{ n: number }>(text, ...params)!.n;
}

/** How many targets of the rollout are in each state. */
export function targetStateCounts(sql: Sql, rolloutId: string): Map<string, number> {
  const rows = sql.all<{ state: string; n: number }>('SELECT "state", COUNT(*) AS n FROM "RolloutTarget" WHERE "rolloutId" = ? GROUP BY "state"', rolloutId);
  return new Map(rows.map((r) => [r.state, r.n]));
}

/**
 * How many targets of each of the rollouts are in each state, in one grouped statement (a page of rollouts asks for
 * the progress of every row; one statement per row was most of a rollouts page's cost). Rollouts without targets are
 * absent from the result. The statement's text depends only on how many ids there are (at most a page's size).
 */
export function targetStateCountsOf(sql: Sql, rolloutIds: readonly string[]): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  if (rolloutIds.length === 0) return out;
  const { text, params } = targetStateCountsStatement(rolloutIds);
  for (const [rolloutId, state, n] of sql.rawAll(text, params) as [string, string, number][]) {
    let counts = out.get(rolloutId);
    if (!counts) {
      counts = new Map();
      out.set(rolloutId, counts);
    }
    counts.set(state, n);
  }
  return out;
}

/** The statement behind targetStateCountsOf (exported for the query-plan test). */
export function targetStateCountsStatement(rolloutIds: readonly string[]): { text: string; params: SqlValue[] } {
  return {
    text: `SELECT "rolloutId", "state", COUNT(*) AS n FROM "RolloutTarget" WHERE "rolloutId" IN (${rolloutIds.map(() => '?').join(', ')}) GROUP BY "rolloutId", "state"`,
    params: [...rolloutIds],
  };
}

/** A page of a rollout's targets in admission order, after `afterOrdinal`, optionally in one state. */
export function targetPage(sql: Sql, rolloutId: string, state: string | undefined, afterOrdinal: number | undefined, limit: number): TargetRow[] {
  const { text, params } = targetPageStatement(rolloutId, state, afterOrdinal, limit);
  return sql.rawAll(text, params).map(targetFromRaw);
}

/**
 * The statement behind targetPage (exported for the query-plan test): it walks (rolloutId, ordinal) or
 * (rolloutId, state, ordinal), so a page of a rollout with thousands of targets reads a page, not a sort of them all.
 */
export function targetPageStatement(
  rolloutId: string,
  state: string | undefined,
  afterOrdinal: number | undefined,
  limit: number,
): { text: string; params: SqlValue[] } {
  return state
    ? { text: TARGET_PAGE_IN_STATE, params: [rolloutId, state, afterOrdinal ?? -1, limit] }
    : { text: TARGET_PAGE, params: [rolloutId, afterOrdinal ?? -1, limit] };
}

const TARGET_PAGE = `SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE "rolloutId" = ? AND "ordinal" > ? ORDER BY "ordinal" LIMIT ?`;
const TARGET_PAGE_IN_STATE = `SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE "rolloutId" = ? AND "state" = ? AND "ordinal" > ? ORDER BY "ordinal" LIMIT ?`;

/**
 * targetPage and countTargets over some of the targets only: those in some clusters (a staged run's wave:
 * Rollout.targets(wave)), or changed to or from one version. The clusters go as one JSON parameter: a wave may hold
 * hundreds, beyond what a list of placeholders should carry.
 */
export function targetPageOf(
  sql: Sql,
  rolloutId: string,
  state: string | undefined,
  only: TargetsOnly,
  afterOrdinal: number | undefined,
  limit: number,
): { rows: TargetRow[]; totalCount: number } {
  const where = [
    '"rolloutId" = ?',
    ...(state ? ['"state" = ?'] : []),
    ...(only.clusters ? ['"cluster" IN (SELECT value FROM json_each(?))'] : []),
    ...(only.version !== undefined ? ['("toVersion" = ? OR "fromVersion" = ?)'] : []),
  ].join(' AND ');
  const params: SqlValue[] = [
    rolloutId,
    ...(state ? [state] : []),
    ...(only.clusters ? [JSON.stringify(only.clusters)] : []),
    ...(only.version !== undefined ? [only.version, only.version] : []),
  ];
  const rows = sql
    .rawAll(`SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE ${where} AND "ordinal" > ? ORDER BY "ordinal" LIMIT ?`, [...params, afterOrdinal ?? -1, limit])
    .map(targetFromRaw);
  return { rows, totalCount: sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM "RolloutTarget" WHERE ${where}`, ...params)!.n };
}

export function countTargets(sql: Sql, rolloutId: string, state: string | undefined): number {
  return state
    ? sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM "RolloutTarget" WHERE "rolloutId" = ? AND "state" = ?', rolloutId, state)!.n
    : sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM "RolloutTarget" WHERE "rolloutId" = ?', rolloutId)!.n;
}

export type { RolloutPosition, RolloutQueryFilter };
