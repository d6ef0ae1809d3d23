import type { GateAttemptRow, GateDecisionRow, GateRow, RunRow, WaveRow, WindowPolicyRow } from '../domain/historyPort.js';
import { dateOf, type Sql, sqlDate, sqlDateOrNull } from './Sql.js';

/**
 * The staged-rollout tables (issue 30, ADR 0065): a rollout's frozen run and waves, its gates and their decisions.
 * Statements shared by both stores (`?` placeholders; PostgreSQL numbers them), and the SQLite side of them.
 */

export const INSERT_RUN =
  'INSERT INTO "RolloutRun" ("rolloutId", "strategy", "excluded", "failurePolicy", "unreachable", "startedBy", "createdAt") VALUES (?, ?, ?, ?, ?, ?, ?)';
export const INSERT_WAVE = `INSERT INTO "RolloutWave" ("rolloutId", "ordinal", "name", "clusters", "maxConcurrency", "maxFailures", "minSuccessMs", "mandatory",
  "remainder", "beforeGate", "afterGate", "progressDeadlineSeconds") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
export const FIND_RUN =
  'SELECT "rolloutId", "strategy", "excluded", "failurePolicy", "unreachable", "startedBy", "createdAt" FROM "RolloutRun" WHERE "rolloutId" = ?';
export const WAVES_OF = `SELECT "rolloutId", "ordinal", "name", "clusters", "maxConcurrency", "maxFailures", "minSuccessMs", "mandatory", "remainder",
  "beforeGate", "afterGate", "state", "reason", "startedAt", "finishedAt", "progressDeadlineSeconds" FROM "RolloutWave" WHERE "rolloutId" = ? ORDER BY "ordinal"`;
export const UPDATE_WAVE = `UPDATE "RolloutWave" SET "state" = ?, "reason" = ?, "startedAt" = COALESCE(?, "startedAt"), "finishedAt" = COALESCE(?, "finishedAt")
  WHERE "rolloutId" = ? AND "ordinal" = ?`;
export const INSERT_GATE = `INSERT INTO "RolloutGate" ("id", "rolloutId", "key", "type", "config", "state", "reason", "openedAt", "endedAt")
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT ("rolloutId", "key") DO NOTHING`;
export const UPDATE_GATE = 'UPDATE "RolloutGate" SET "state" = ?, "reason" = ?, "endedAt" = COALESCE(?, "endedAt") WHERE "id" = ?';
export const GATES_OF = `SELECT "id", "rolloutId", "key", "type", "config", "state", "reason", "openedAt", "endedAt" FROM "RolloutGate"
  WHERE "rolloutId" = ? ORDER BY "openedAt", "id"`;
export const INSERT_GATE_DECISION = 'INSERT INTO "GateDecision" ("gateId", "tokenId", "role", "decision", "comment", "at") VALUES (?, ?, ?, ?, ?, ?)';
export const GATE_DECISIONS = 'SELECT "id", "gateId", "tokenId", "role", "decision", "comment", "at" FROM "GateDecision" WHERE "gateId" = ? ORDER BY "id"';

export const INSERT_GATE_ATTEMPT = `INSERT INTO "GateAttempt" ("gateId", "seq", "startedAt", "at", "answer", "afterMs", "reason")
  VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT ("gateId", "seq") DO NOTHING`;
/** Only the gate's latest attempt, and only forward in time (two leaders' looks extend it once each, in any order). */
export const EXTEND_GATE_ATTEMPT = `UPDATE "GateAttempt" SET "at" = ? WHERE "gateId" = ? AND "seq" = ? AND "at" < ?
  AND NOT EXISTS (SELECT 1 FROM "GateAttempt" AS later WHERE later."gateId" = ? AND later."seq" > ?)`;
export const GATE_ATTEMPTS = 'SELECT "gateId", "seq", "startedAt", "at", "answer", "afterMs", "reason" FROM "GateAttempt" WHERE "gateId" = ? ORDER BY "seq"';

export const INSERT_WINDOW =
  'INSERT INTO "MaintenanceWindow" ("name", "kind", "definition", "createdAt", "updatedAt") VALUES (?, ?, ?, ?, ?) ON CONFLICT ("name") DO NOTHING';
export const UPDATE_WINDOW = 'UPDATE "MaintenanceWindow" SET "kind" = ?, "definition" = ?, "updatedAt" = ? WHERE "name" = ?';
export const DELETE_WINDOW = 'DELETE FROM "MaintenanceWindow" WHERE "name" = ?';
export const WINDOWS = 'SELECT "name", "kind", "definition", "createdAt", "updatedAt", "announced" FROM "MaintenanceWindow" ORDER BY "name"';

type Stored<T> = {
  [K in keyof T]: T[K] extends Date ? Date | string : T[K] extends Date | null ? Date | string | null : T[K] extends boolean ? boolean | number : T[K];
};

/** A wave's values for INSERT_WAVE; `flag` stores a boolean (SQLite: 0/1, PostgreSQL: the boolean itself). */
export function waveValues<B>(w: WaveRow, flag: (value: boolean) => B): (string | number | B | null)[] {
  return [
    w.rolloutId,
    w.ordinal,
    w.name,
    w.clusters,
    w.maxConcurrency,
    w.maxFailures,
    w.minSuccessMs,
    flag(w.mandatory),
    flag(w.remainder),
    w.beforeGate,
    w.afterGate,
    w.progressDeadlineSeconds,
  ];
}

export function runOfRow(row: Stored<RunRow>, date: (v: Date | string) => Date): RunRow {
  return { ...row, createdAt: date(row.createdAt) };
}

export function waveOfRow(row: Stored<WaveRow>, date: (v: Date | string) => Date): WaveRow {
  return {
    ...row,
    ordinal: Number(row.ordinal),
    progressDeadlineSeconds: row.progressDeadlineSeconds === null ? null : Number(row.progressDeadlineSeconds),
    mandatory: Boolean(row.mandatory),
    remainder: Boolean(row.remainder),
    startedAt: row.startedAt === null ? null : date(row.startedAt),
    finishedAt: row.finishedAt === null ? null : date(row.finishedAt),
  };
}

export function gateOfRow(row: Stored<GateRow>, date: (v: Date | string) => Date): GateRow {
  return { ...row, openedAt: date(row.openedAt), endedAt: row.endedAt === null ? null : date(row.endedAt) };
}

export function decisionOfRow(row: Stored<GateDecisionRow>, date: (v: Date | string) => Date): GateDecisionRow {
  return { ...row, id: Number(row.id), at: date(row.at) };
}

export function attemptOfRow(row: Stored<GateAttemptRow>, date: (v: Date | string) => Date): GateAttemptRow {
  return { ...row, seq: Number(row.seq), afterMs: row.afterMs === null ? null : Number(row.afterMs), startedAt: date(row.startedAt), at: date(row.at) };
}

/** A gate attempt's values for INSERT_GATE_ATTEMPT, dates as the store writes them. */
export function attemptValues<D>(a: GateAttemptRow, date: (value: Date) => D): (string | number | D | null)[] {
  return [a.gateId, a.seq, date(a.startedAt), date(a.at), a.answer, a.afterMs, a.reason];
}

const sqliteDate = (v: Date | string) => (typeof v === 'string' ? dateOf(v) : v);

export function runOf(sql: Sql, rolloutId: string): { run: RunRow; waves: WaveRow[] } | undefined {
  const run = sql.get<Stored<RunRow>>(FIND_RUN, rolloutId);
  if (!run) return undefined;
  return { run: runOfRow(run, sqliteDate), waves: sql.all<Stored<WaveRow>>(WAVES_OF, rolloutId).map((row) => waveOfRow(row, sqliteDate)) };
}

export function gatesOf(sql: Sql, rolloutId: string): GateRow[] {
  return sql.all<Stored<GateRow>>(GATES_OF, rolloutId).map((row) => gateOfRow(row, sqliteDate));
}

export function gateDecisions(sql: Sql, gateId: string): GateDecisionRow[] {
  return sql.all<Stored<GateDecisionRow>>(GATE_DECISIONS, gateId).map((row) => decisionOfRow(row, sqliteDate));
}

export function gateAttempts(sql: Sql, gateId: string): GateAttemptRow[] {
  return sql.all<Stored<GateAttemptRow>>(GATE_ATTEMPTS, gateId).map((row) => attemptOfRow(row, sqliteDate));
}

export function insertGateAttempt(sql: Sql, a: GateAttemptRow): boolean {
  return sql.run(INSERT_GATE_ATTEMPT, ...attemptValues(a, sqlDate)).changes > 0;
}

export function extendGateAttempt(sql: Sql, gateId: string, seq: number, at: Date): boolean {
  return sql.run(EXTEND_GATE_ATTEMPT, sqlDate(at), gateId, seq, sqlDate(at), gateId, seq).changes > 0;
}

export function insertRun(sql: Sql, run: RunRow, waves: readonly WaveRow[]): void {
  sql.run(INSERT_RUN, run.rolloutId, run.strategy, run.excluded, run.failurePolicy, run.unreachable, run.startedBy, sqlDate(run.createdAt));
  for (const wave of waves) sql.run(INSERT_WAVE, ...waveValues(wave, (b) => (b ? 1 : 0)));
}

export function updateWave(
  sql: Sql,
  rolloutId: string,
  ordinal: number,
  state: string,
  reason: string | null,
  startedAt: Date | null,
  finishedAt: Date | null,
): void {
  sql.run(UPDATE_WAVE, state, reason, sqlDateOrNull(startedAt), sqlDateOrNull(finishedAt), rolloutId, ordinal);
}

export function insertGate(sql: Sql, g: GateRow): boolean {
  return sql.run(INSERT_GATE, g.id, g.rolloutId, g.key, g.type, g.config, g.state, g.reason, sqlDate(g.openedAt), sqlDateOrNull(g.endedAt)).changes > 0;
}

export function updateGate(sql: Sql, id: string, state: string, reason: string, endedAt: Date | null): void {
  sql.run(UPDATE_GATE, state, reason, sqlDateOrNull(endedAt), id);
}

export function insertGateDecision(sql: Sql, d: Omit<GateDecisionRow, 'id'>): void {
  sql.run(INSERT_GATE_DECISION, d.gateId, d.tokenId, d.role, d.decision, d.comment, sqlDate(d.at));
}

export function windowOfRow(row: Stored<WindowPolicyRow>, date: (v: Date | string) => Date): WindowPolicyRow {
  return { ...row, createdAt: date(row.createdAt), updatedAt: date(row.updatedAt) };
}

export function windowPolicies(sql: Sql): WindowPolicyRow[] {
  return sql.all<Stored<WindowPolicyRow>>(WINDOWS).map((row) => windowOfRow(row, sqliteDate));
}

export function insertWindowPolicy(sql: Sql, row: WindowPolicyRow): boolean {
  return sql.run(INSERT_WINDOW, row.name, row.kind, row.definition, sqlDate(row.createdAt), sqlDate(row.updatedAt)).changes > 0;
}

export function updateWindowPolicy(sql: Sql, row: Omit<WindowPolicyRow, 'createdAt'>): boolean {
  return sql.run(UPDATE_WINDOW, row.kind, row.definition, sqlDate(row.updatedAt), row.name).changes > 0;
}

export function announceWindow(sql: Sql, name: string, from: string | null, to: string): boolean {
  return sql.run('UPDATE "MaintenanceWindow" SET "announced" = ? WHERE "name" = ? AND "announced" IS ?', to, name, from).changes > 0;
}

export function deleteWindowPolicy(sql: Sql, name: string): boolean {
  return sql.run(DELETE_WINDOW, name).changes > 0;
}
