import { dateOf, dateOrNull, sqlDate, sqlDateOrNull, type Sql, type SqlValue } from './Sql.js';
import { LOCAL_CLUSTER } from '../domain/clusters/model.js';
import type { IdempotencyKeyRef, NewRevision, NewRolloutRow, NewTargetRow, RevisionRow, RolloutRow, TargetRow } from '../domain/historyPort.js';

/**
 * The history's hot-path statements on Rollout, RolloutTarget and Revision (prepared SQL on rollplane's own
 * connection; see Sql.ts). Rows come back in the shape of the schema's models (prisma/models), as the port declares them.
 * Everything here is synchronous and meant to run inside `Sql.transaction`.
 */

export type Raw<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

export function rolloutOf(raw: Raw<RolloutRow>): RolloutRow {
  return {
    ...raw,
    createdAt: dateOf(raw.createdAt),
    updatedAt: dateOf(raw.updatedAt),
    startedAt: dateOrNull(raw.startedAt),
    finishedAt: dateOrNull(raw.finishedAt),
  };
}

export function targetOf(raw: Raw<TargetRow>): TargetRow {
  return { ...raw, admittedAt: dateOrNull(raw.admittedAt), finishedAt: dateOrNull(raw.finishedAt), updatedAt: dateOf(raw.updatedAt) };
}

const ROLLOUT_COLUMN_NAMES = [
  'id',
  'kind',
  'state',
  'fromVersion',
  'toVersion',
  'selector',
  'strategy',
  'causeActor',
  'causeRunUrl',
  'causeCommit',
  'causeMessage',
  'idempotencyKey',
  'rollbackOfId',
  'message',
  'engineState',
  'createdAt',
  'updatedAt',
  'startedAt',
  'finishedAt',
  'idempotencyScope',
  'startedBy',
] as const satisfies readonly (keyof RolloutRow)[];

/**
 * The Rollout columns in RolloutRow's order, for raw-mode reads (`Sql.rawAll`): a row comes back as an array and
 * `rolloutFromRaw` builds the object in one step, without better-sqlite3's named-key object and a spread of it.
 * `prefix` is a table alias (`r.`) for statements that join.
 */
export function rolloutColumns(prefix = ''): string {
  return ROLLOUT_COLUMN_NAMES.map((c) => `${prefix}"${c}"`).join(', ');
}

/** A row of `SELECT ${rolloutColumns()}` in raw mode. */
export function rolloutFromRaw(v: readonly unknown[]): RolloutRow {
  return {
    id: v[0] as string,
    kind: v[1] as string,
    state: v[2] as string,
    fromVersion: v[3] as string | null,
    toVersion: v[4] as string | null,
    selector: v[5] as string,
    strategy: v[6] as string,
    causeActor: v[7] as string | null,
    causeRunUrl: v[8] as string | null,
    causeCommit: v[9] as string | null,
    causeMessage: v[10] as string | null,
    idempotencyKey: v[11] as string | null,
    rollbackOfId: v[12] as string | null,
    message: v[13] as string | null,
    engineState: v[14] as string,
    createdAt: dateOf(v[15] as string),
    updatedAt: dateOf(v[16] as string),
    startedAt: dateOrNull(v[17] as string | null),
    finishedAt: dateOrNull(v[18] as string | null),
    idempotencyScope: v[19] as string,
    startedBy: v[20] as string | null,
  };
}

const TARGET_COLUMN_NAMES = [
  'id',
  'rolloutId',
  'kind',
  'namespace',
  'name',
  'ordinal',
  'state',
  'fromVersion',
  'toVersion',
  'attempts',
  'skipReason',
  'error',
  'admittedAt',
  'finishedAt',
  'updatedAt',
  'cluster',
] as const satisfies readonly (keyof TargetRow)[];

/** The RolloutTarget columns in TargetRow's order, for raw-mode reads (see rolloutColumns). */
export const TARGET_COLUMNS = TARGET_COLUMN_NAMES.map((c) => `"${c}"`).join(', ');

/** A row of `SELECT ${TARGET_COLUMNS}` in raw mode. */
export function targetFromRaw(v: readonly unknown[]): TargetRow {
  return {
    id: v[0] as string,
    rolloutId: v[1] as string,
    kind: v[2] as string,
    namespace: v[3] as string,
    name: v[4] as string,
    ordinal: v[5] as number,
    state: v[6] as string,
    fromVersion: v[7] as string | null,
    toVersion: v[8] as string,
    attempts: v[9] as number,
    skipReason: v[10] as string | null,
    error: v[11] as string | null,
    admittedAt: dateOrNull(v[12] as string | null),
    finishedAt: dateOrNull(v[13] as string | null),
    updatedAt: dateOf(v[14] as string),
    cluster: v[15] as string,
  };
}

const FIND_ROLLOUT = `SELECT ${rolloutColumns()} FROM "Rollout" WHERE "id" = ?`;

export function findRollout(sql: Sql, id: string): RolloutRow | undefined {
  const raw = sql.rawGet(FIND_ROLLOUT, [id]);
  return raw ? rolloutFromRaw(raw) : undefined;
}

export function findRolloutByIdempotencyKey(sql: Sql, { scope, key }: IdempotencyKeyRef): RolloutRow | undefined {
  const raw = sql.get<Raw<RolloutRow>>('SELECT * FROM "Rollout" WHERE "idempotencyScope" = ? AND "idempotencyKey" = ?', scope, key);
  return raw ? rolloutOf(raw) : undefined;
}

/**
 * Inserts a rollout in state PENDING. One whose idempotency key is already taken is not inserted: returns undefined
 * and changes nothing (the unique index on "idempotencyKey" decides, so it holds for any number of writers).
 */
/**
 * A new rollout's values in the order both stores' INSERTs list the columns (id, kind, fromVersion, toVersion,
 * selector, strategy, the cause's four fields, idempotencyKey, rollbackOfId, idempotencyScope, startedBy); state, engineState and
 * the dates follow.
 */
export function newRolloutValues(row: NewRolloutRow): SqlValue[] {
  return [
    row.id,
    row.kind,
    row.fromVersion,
    row.toVersion,
    row.selector,
    row.strategy,
    row.causeActor,
    row.causeRunUrl,
    row.causeCommit,
    row.causeMessage,
    row.idempotencyKey,
    row.rollbackOfId,
    row.idempotencyScope,
    row.startedBy,
  ];
}

export function insertRolloutIfKeyFree(sql: Sql, row: NewRolloutRow, now: Date): RolloutRow | undefined {
  const { changes } = sql.run(
    `INSERT INTO "Rollout" ("id", "kind", "state", "fromVersion", "toVersion", "selector", "strategy", "causeActor", "causeRunUrl",
       "causeCommit", "causeMessage", "idempotencyKey", "rollbackOfId", "idempotencyScope", "startedBy", "engineState", "createdAt",
       "updatedAt")
     VALUES (?, ?, 'PENDING', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', ?, ?) ON CONFLICT ("idempotencyScope", "idempotencyKey") DO NOTHING`,
    ...newRolloutValues(row),
    sqlDate(now),
    sqlDate(now),
  );
  return changes === 0 ? undefined : findRollout(sql, row.id)!;
}

/** Sets state and message; `startedAt`/`finishedAt` only when given (undefined leaves them). */
export function updateRolloutState(
  sql: Sql,
  id: string,
  change: { state: string; message: string | null; startedAt?: Date; finishedAt?: Date },
  now: Date,
): RolloutRow {
  sql.run(
    `UPDATE "Rollout" SET "state" = ?, "message" = ?, "startedAt" = COALESCE(?, "startedAt"), "finishedAt" = COALESCE(?, "finishedAt"),
       "updatedAt" = ? WHERE "id" = ?`,
    change.state,
    change.message,
    sqlDateOrNull(change.startedAt),
    sqlDateOrNull(change.finishedAt),
    sqlDate(now),
    id,
  );
  return findRollout(sql, id)!;
}

export function updateEngineState(sql: Sql, id: string, engineState: string, now: Date): void {
  sql.run('UPDATE "Rollout" SET "engineState" = ?, "updatedAt" = ? WHERE "id" = ?', engineState, sqlDate(now), id);
}

export function insertTargets(sql: Sql, rows: readonly NewTargetRow[], now: Date): void {
  const insert = `INSERT INTO "RolloutTarget" ("id", "rolloutId", "kind", "cluster", "namespace", "name", "ordinal", "state", "fromVersion",
      "toVersion", "attempts", "skipReason", "finishedAt", "updatedAt") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)`;
  const updatedAt = sqlDate(now);
  for (const row of rows) {
    sql.run(
      insert,
      row.id,
      row.rolloutId,
      row.kind,
      row.cluster ?? LOCAL_CLUSTER,
      row.namespace,
      row.name,
      row.ordinal,
      row.state,
      row.fromVersion,
      row.toVersion,
      row.skipReason,
      sqlDateOrNull(row.finishedAt),
      updatedAt,
    );
  }
}

/** Every target of a rollout, in admission order. */
export function targetsOf(sql: Sql, rolloutId: string): TargetRow[] {
  return sql.rawAll(`SELECT ${TARGET_COLUMNS} FROM "RolloutTarget" WHERE "rolloutId" = ? ORDER BY "ordinal"`, [rolloutId]).map(targetFromRaw);
}

export function targetsInState(sql: Sql, rolloutId: string, state: string): TargetRow[] {
  return sql.all<Raw<TargetRow>>('SELECT * FROM "RolloutTarget" WHERE "rolloutId" = ? AND "state" = ? ORDER BY "ordinal"', rolloutId, state).map(targetOf);
}

export function findTarget(sql: Sql, rolloutId: string, namespace: string, name: string, cluster = LOCAL_CLUSTER): TargetRow | undefined {
  const raw = sql.get<Raw<TargetRow>>(
    'SELECT * FROM "RolloutTarget" WHERE "rolloutId" = ? AND "cluster" = ? AND "namespace" = ? AND "name" = ?',
    rolloutId,
    cluster,
    namespace,
    name,
  );
  return raw ? targetOf(raw) : undefined;
}

/**
 * One target's new state. `error` undefined leaves the error as it is; `admittedAt`/`finishedAt` are set only when
 * given; `countAttempt` adds one to `attempts`.
 */
export function updateTarget(
  sql: Sql,
  id: string,
  change: { state: string; error?: string | null; countAttempt?: boolean; admittedAt?: Date; finishedAt?: Date },
  now: Date,
): TargetRow {
  sql.run(
    `UPDATE "RolloutTarget" SET "state" = ?, "error" = CASE WHEN ? THEN ? ELSE "error" END, "attempts" = "attempts" + ?,
       "admittedAt" = COALESCE(?, "admittedAt"), "finishedAt" = COALESCE(?, "finishedAt"), "updatedAt" = ? WHERE "id" = ?`,
    change.state,
    change.error !== undefined ? 1 : 0,
    change.error ?? null,
    change.countAttempt ? 1 : 0,
    sqlDateOrNull(change.admittedAt),
    sqlDateOrNull(change.finishedAt),
    sqlDate(now),
    id,
  );
  return targetOf(sql.get<Raw<TargetRow>>('SELECT * FROM "RolloutTarget" WHERE "id" = ?', id)!);
}

/** PENDING → CANCELLED for a rollout that ended; returns the targets it cancelled. */
/** HistoryTx.noteWaiting: only rows still PROGRESSING (an outcome the engine recorded meanwhile stays). */
export function noteWaiting(
  sql: Sql,
  rolloutId: string,
  cluster: string,
  target: { namespace: string; name: string } | undefined,
  error: string | null,
  now: Date,
): number {
  const update = `UPDATE "RolloutTarget" SET "error" = ?, "updatedAt" = ? WHERE "rolloutId" = ? AND "cluster" = ? AND "state" = 'PROGRESSING'`;
  if (!target) return sql.run(update, error, sqlDate(now), rolloutId, cluster).changes;
  return sql.run(`${update} AND "namespace" = ? AND "name" = ?`, error, sqlDate(now), rolloutId, cluster, target.namespace, target.name).changes;
}

export function cancelPendingTargets(sql: Sql, rolloutId: string, now: Date): TargetRow[] {
  const pending = targetsInState(sql, rolloutId, 'PENDING');
  if (pending.length > 0) {
    sql.run(
      `UPDATE "RolloutTarget" SET "state" = 'CANCELLED', "finishedAt" = ?, "updatedAt" = ? WHERE "rolloutId" = ? AND "state" = 'PENDING'`,
      sqlDate(now),
      sqlDate(now),
      rolloutId,
    );
  }
  return pending;
}

export function latestRevision(sql: Sql, kind: string, namespace: string, name: string, cluster = LOCAL_CLUSTER): RevisionRow | undefined {
  return sql.get<RevisionRow>(
    'SELECT "n", "version" FROM "Revision" WHERE "cluster" = ? AND "kind" = ? AND "namespace" = ? AND "name" = ? ORDER BY "n" DESC LIMIT 1',
    cluster,
    kind,
    namespace,
    name,
  );
}

export function insertRevision(sql: Sql, revision: NewRevision, now: Date): void {
  sql.run(
    'INSERT INTO "Revision" ("cluster", "kind", "namespace", "name", "n", "version", "rolloutId", "appliedAt") VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    revision.cluster ?? LOCAL_CLUSTER,
    revision.kind,
    revision.namespace,
    revision.name,
    revision.n,
    revision.version,
    revision.rolloutId,
    sqlDate(now),
  );
}

export type { NewRolloutRow, NewTargetRow, RevisionRow, RolloutRow, TargetRow };
