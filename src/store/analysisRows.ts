import type {
  AnalysisPhase,
  AnalysisRunRecord,
  AnalysisStore,
  MeasurementRecord,
  MeasurementTally,
  MeasurementVerdict,
  NamedTemplate,
  NewAnalysisRun,
  NewMeasurement,
} from '../analysis/model.js';
import { valuesOf, valuesText } from '../analysis/model.js';

/** The analysis tables' statements, shared by both stores (`?` placeholders; PostgreSQL numbers them). */

const RUN_COLUMNS =
  '"id", "rolloutId", "cluster", "target", "wave", "templateName", "template", "args", "phase", "message", "metricPhases", "previousRunId", "gateKey", "attempt", "startedAt", "finishedAt"';
/**
 * A measurement's query and baseline query: "" in its row when it is its run's (AnalysisRunQuery), which is put in its
 * place after the read (withRunQueries); a row written before that table, or whose query differed, keeps its own text
 * (attack 19, F5). Never joined in SQL: the driver then built the run's text once per row, and a run of thousands of
 * measurements of a long query took gigabytes to read (attack 23, G1, G2).
 */
const MEASUREMENT_COLUMNS = `m."id", m."runId", m."metricName", m."seq", m."query", m."result", m."condition", m."threshold", m."verdict",
  m."noData", m."dryRun", m."message", m."baselineQuery", m."baselineResult", m."startedAt", m."finishedAt"`;

/** A gate's attempt is written once (unique rolloutId, gateKey, attempt): a second opener writes nothing. */
export const INSERT_ANALYSIS_RUN = `INSERT INTO "AnalysisRun" ("id", "rolloutId", "cluster", "target", "wave", "templateName", "template", "args", "phase", "previousRunId", "gateKey", "attempt", "startedAt")
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'RUNNING', ?, ?, ?, ?) ON CONFLICT DO NOTHING`;
/** Only a RUNNING run ends: a decision never overwrites a cancellation, nor the reverse. */
export const FINISH_ANALYSIS_RUN = `UPDATE "AnalysisRun" SET "phase" = ?, "message" = ?, "metricPhases" = ?, "finishedAt" = ? WHERE "id" = ? AND "phase" = 'RUNNING'`;
export const FIND_ANALYSIS_RUN = `SELECT ${RUN_COLUMNS} FROM "AnalysisRun" WHERE "id" = ?`;
export const ANALYSIS_RUNS_OF = `SELECT ${RUN_COLUMNS} FROM "AnalysisRun" WHERE "rolloutId" = ? ORDER BY "startedAt", "id"`;
export const GATE_RUNS = `SELECT ${RUN_COLUMNS} FROM "AnalysisRun" WHERE "rolloutId" = ? AND "gateKey" = ? ORDER BY "attempt"`;
export const RUNNING_GATE_RUNS = `SELECT ${RUN_COLUMNS} FROM "AnalysisRun" WHERE "phase" = 'RUNNING' AND "gateKey" IS NOT NULL ORDER BY "startedAt", "id"`;
/**
 * A measurement is written only into a RUNNING run and only once per (run, metric, seq): a leader that was not quite
 * dead and its successor cannot both record measurement n, nor anyone record one after the run ended. The run id is
 * bound twice (the row, and the RUNNING check).
 */
export const INSERT_MEASUREMENT = `INSERT INTO "AnalysisMeasurement" ("runId", "metricName", "seq", "query", "result", "condition", "threshold", "verdict", "noData", "dryRun", "message", "baselineQuery", "baselineResult", "startedAt", "finishedAt")
  SELECT ?, ?, ?, ${runsOwn('query')}, ?, ?, ?, ?, ?, ?, ?, ${runsOwn('baselineQuery')}, ?, ?, ? WHERE EXISTS (SELECT 1 FROM "AnalysisRun" WHERE "id" = ? AND "phase" = 'RUNNING')
  ON CONFLICT DO NOTHING RETURNING "id"`;
export const MEASUREMENTS_OF = `SELECT ${MEASUREMENT_COLUMNS} FROM "AnalysisMeasurement" m WHERE m."runId" = ? ORDER BY m."id"`;
/** A run's decided measurements by metric, and its latest: MeasurementTally, counted by the database. */
export const DECIDED_BY_METRIC = `SELECT "metricName", COUNT(*) AS n FROM "AnalysisMeasurement" WHERE "runId" = ? AND "verdict" NOT IN ('ERROR', 'WAITING') GROUP BY "metricName"`;
export const LATEST_MEASUREMENT = `SELECT "verdict", "message" FROM "AnalysisMeasurement" WHERE "runId" = ? ORDER BY "id" DESC LIMIT 1`;

export function tallyOf(
  decided: readonly { metricName: string; n: number | string }[],
  latest: { verdict: string; message: string | null } | undefined,
): MeasurementTally {
  return {
    decided: new Map(decided.map((row) => [row.metricName, Number(row.n)])),
    latest: latest && { verdict: latest.verdict as MeasurementVerdict, message: latest.message },
  };
}

/** A run's resolved queries, by metric: read once beside its measurements. */
export const RUN_QUERIES_OF = `SELECT "metricName", "query", "baselineQuery" FROM "AnalysisRunQuery" WHERE "runId" = ?`;

export interface RunQueryRow {
  metricName: string;
  query: string;
  baselineQuery: string | null;
}

/**
 * The measurements with their run's queries where their rows say "" (the run's own): the same string for every row of
 * a metric, not a copy per row.
 */
export function withRunQueries(measurements: MeasurementRecord[], queries: readonly RunQueryRow[]): MeasurementRecord[] {
  if (queries.length === 0) return measurements;
  const byMetric = new Map(queries.map((q) => [q.metricName, q]));
  for (const m of measurements) {
    const own = byMetric.get(m.metricName);
    if (!own) continue;
    if (m.query === '') m.query = own.query;
    if (m.baselineQuery === '' && own.baselineQuery !== null) m.baselineQuery = own.baselineQuery;
  }
  return measurements;
}
/** A run's metric's queries as resolved when it was recorded: written once, before any measurement. */
export const INSERT_RUN_QUERY = `INSERT INTO "AnalysisRunQuery" ("runId", "metricName", "query", "baselineQuery") VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`;

/**
 * "" when the bound text is the run's recorded one for the metric, else the text (NULL stays NULL). Binds run id,
 * metric name and the text twice: see measurementParams.
 */
function runsOwn(column: 'query' | 'baselineQuery'): string {
  return `CASE WHEN EXISTS (SELECT 1 FROM "AnalysisRunQuery" WHERE "runId" = ? AND "metricName" = ? AND "${column}" = ?) THEN '' ELSE ? END`;
}

/** INSERT_MEASUREMENT's parameters in order; `bool` and `date` as each driver takes them. */
export function measurementParams<B, D>(m: NewMeasurement, bool: (value: boolean) => B, date: (value: Date) => D): (B | D | string | number | null)[] {
  const baselineResult = m.baselineValues === null ? null : valuesText(m.baselineValues);
  return [
    m.runId,
    m.metricName,
    m.seq,
    ...[m.runId, m.metricName, m.query, m.query],
    valuesText(m.values),
    m.condition,
    m.threshold,
    m.verdict,
    bool(m.noData),
    bool(m.dryRun),
    m.message,
    ...[m.runId, m.metricName, m.baselineQuery, m.baselineQuery],
    baselineResult,
    date(m.startedAt),
    date(m.finishedAt),
    m.runId,
  ];
}

/** Named templates (ADR 0071): one row per name. */
export const TEMPLATES = 'SELECT "name", "template", "createdAt", "updatedAt" FROM "AnalysisTemplate" ORDER BY "name"';
export const TEMPLATE_NAMED = 'SELECT "name", "template", "createdAt", "updatedAt" FROM "AnalysisTemplate" WHERE "name" = ?';
export const INSERT_TEMPLATE = 'INSERT INTO "AnalysisTemplate" ("name", "template", "createdAt", "updatedAt") VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING';
export const UPDATE_TEMPLATE = 'UPDATE "AnalysisTemplate" SET "template" = ?, "updatedAt" = ? WHERE "name" = ?';
export const DELETE_TEMPLATE = 'DELETE FROM "AnalysisTemplate" WHERE "name" = ?';

export interface TemplateRow {
  name: string;
  template: string;
  createdAt: Date | string;
  updatedAt: Date | string;
}

export function namedTemplateOf(row: TemplateRow, date: (v: Date | string) => Date): NamedTemplate {
  return { name: row.name, template: row.template, createdAt: date(row.createdAt), updatedAt: date(row.updatedAt) };
}

/** After INSERT_ANALYSIS_RUN: the run recorded or, for a gate's attempt another opener recorded first, that run. */
export async function runRecorded(store: Pick<AnalysisStore, 'findRun' | 'gateRuns'>, run: NewAnalysisRun): Promise<AnalysisRunRecord> {
  const created = await store.findRun(run.id);
  if (created || !run.gateKey) return created!;
  const attempt = run.attempt ?? 1;
  return (await store.gateRuns(run.rolloutId, run.gateKey)).find((r) => r.attempt === attempt)!;
}

export interface AnalysisRunRow {
  id: string;
  rolloutId: string;
  cluster: string;
  target: string | null;
  wave: number | null;
  templateName: string;
  template: string;
  args: string;
  phase: string;
  message: string | null;
  metricPhases: string;
  previousRunId: string | null;
  gateKey: string | null;
  attempt: number | string;
  startedAt: Date | string;
  finishedAt: Date | string | null;
}

export interface MeasurementRow {
  id: number;
  runId: string;
  metricName: string;
  seq: number | string;
  query: string;
  result: string;
  condition: string | null;
  threshold: number | null;
  verdict: string;
  noData: boolean | number;
  dryRun: boolean | number;
  message: string | null;
  baselineQuery: string | null;
  baselineResult: string | null;
  startedAt: Date | string;
  finishedAt: Date | string;
}

function objectOf<T>(text: string): Record<string, T> {
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, T>;
  } catch {}
  return {};
}

export function analysisRunOf(row: AnalysisRunRow, date: (value: Date | string) => Date): AnalysisRunRecord {
  return {
    id: row.id,
    rolloutId: row.rolloutId,
    cluster: row.cluster,
    target: row.target,
    wave: row.wave === null ? null : Number(row.wave),
    templateName: row.templateName,
    template: row.template,
    args: objectOf<string>(row.args),
    phase: row.phase as AnalysisPhase,
    message: row.message,
    metricPhases: objectOf<AnalysisPhase>(row.metricPhases),
    previousRunId: row.previousRunId,
    gateKey: row.gateKey,
    attempt: Number(row.attempt),
    startedAt: date(row.startedAt),
    finishedAt: row.finishedAt === null ? null : date(row.finishedAt),
  };
}

export function measurementOf(row: MeasurementRow, date: (value: Date | string) => Date): MeasurementRecord {
  return {
    id: Number(row.id),
    runId: row.runId,
    metricName: row.metricName,
    seq: Number(row.seq),
    query: row.query,
    values: valuesOf(row.result),
    condition: row.condition,
    threshold: row.threshold === null ? null : Number(row.threshold),
    verdict: row.verdict as MeasurementVerdict,
    noData: Boolean(row.noData),
    dryRun: Boolean(row.dryRun),
    message: row.message,
    baselineQuery: row.baselineQuery,
    baselineValues: row.baselineResult === null ? null : valuesOf(row.baselineResult),
    startedAt: date(row.startedAt),
    finishedAt: date(row.finishedAt),
  };
}
