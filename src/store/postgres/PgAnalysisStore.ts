import type pg from 'pg';
import type {
  AnalysisRunRecord,
  AnalysisStore,
  AnalysisTemplateStore,
  MeasurementRecord,
  MeasurementTally,
  NamedTemplate,
  NewAnalysisRun,
  NewMeasurement,
} from '../../analysis/model.js';
import {
  ANALYSIS_RUNS_OF,
  type AnalysisRunRow,
  analysisRunOf,
  FIND_ANALYSIS_RUN,
  FINISH_ANALYSIS_RUN,
  GATE_RUNS,
  INSERT_ANALYSIS_RUN,
  INSERT_MEASUREMENT,
  INSERT_RUN_QUERY,
  measurementParams,
  DECIDED_BY_METRIC,
  LATEST_MEASUREMENT,
  MEASUREMENTS_OF,
  RUN_QUERIES_OF,
  tallyOf,
  type RunQueryRow,
  withRunQueries,
  type MeasurementRow,
  measurementOf,
  DELETE_TEMPLATE,
  INSERT_TEMPLATE,
  namedTemplateOf,
  RUNNING_GATE_RUNS,
  runRecorded,
  TEMPLATE_NAMED,
  TEMPLATES,
  type TemplateRow,
  UPDATE_TEMPLATE,
} from '../analysisRows.js';
import { isoOf, numbered } from './pool.js';

const date = (value: Date | string) => (typeof value === 'string' ? new Date(value) : value);

/** Analysis runs and measurements on PostgreSQL, on the history's pg pool. */
export class PgAnalysisStore implements AnalysisStore, AnalysisTemplateStore {
  constructor(private readonly pool: Pick<pg.Pool, 'query'>) {}

  async createRun(run: NewAnalysisRun): Promise<AnalysisRunRecord> {
    const { id, rolloutId, cluster, target, wave, templateName, template, args, previousRunId, gateKey = null, attempt = 1, startedAt } = run;
    await this.pool.query(numbered(INSERT_ANALYSIS_RUN), [
      id,
      rolloutId,
      cluster,
      target,
      wave,
      templateName,
      template,
      JSON.stringify(args),
      previousRunId,
      gateKey,
      attempt,
      isoOf(startedAt),
    ]);
    const recorded = await runRecorded(this, run);
    // Only with the run this call recorded: another opener's run has its own.
    if (recorded.id === id) {
      for (const q of run.queries ?? []) await this.pool.query(numbered(INSERT_RUN_QUERY), [id, q.metricName, q.query, q.baselineQuery]);
    }
    return recorded;
  }

  async addMeasurement(m: NewMeasurement): Promise<MeasurementRecord | undefined> {
    const result = await this.pool.query<{ id: number }>(
      numbered(INSERT_MEASUREMENT),
      measurementParams(m, (b) => b, isoOf),
    );
    const row = result.rows[0];
    return row && { ...m, id: Number(row.id) };
  }

  async finishRun(id: string, end: Parameters<AnalysisStore['finishRun']>[1]): Promise<boolean> {
    const result = await this.pool.query(numbered(FINISH_ANALYSIS_RUN), [end.phase, end.message, JSON.stringify(end.metricPhases), isoOf(end.finishedAt), id]);
    return (result.rowCount ?? 0) > 0;
  }

  async runsOf(rolloutId: string): Promise<AnalysisRunRecord[]> {
    return (await this.pool.query<AnalysisRunRow>(numbered(ANALYSIS_RUNS_OF), [rolloutId])).rows.map((row) => analysisRunOf(row, date));
  }

  async gateRuns(rolloutId: string, gateKey: string): Promise<AnalysisRunRecord[]> {
    return (await this.pool.query<AnalysisRunRow>(numbered(GATE_RUNS), [rolloutId, gateKey])).rows.map((row) => analysisRunOf(row, date));
  }

  async runningGateRuns(): Promise<AnalysisRunRecord[]> {
    return (await this.pool.query<AnalysisRunRow>(RUNNING_GATE_RUNS)).rows.map((row) => analysisRunOf(row, date));
  }

  async findRun(id: string): Promise<AnalysisRunRecord | undefined> {
    const row = (await this.pool.query<AnalysisRunRow>(numbered(FIND_ANALYSIS_RUN), [id])).rows[0];
    return row && analysisRunOf(row, date);
  }

  async measurementsOf(runId: string): Promise<MeasurementRecord[]> {
    const measurements = (await this.pool.query<MeasurementRow>(numbered(MEASUREMENTS_OF), [runId])).rows.map((row) => measurementOf(row, date));
    return withRunQueries(measurements, (await this.pool.query<RunQueryRow>(numbered(RUN_QUERIES_OF), [runId])).rows);
  }

  async measurementTally(runId: string): Promise<MeasurementTally> {
    const [decided, latest] = await Promise.all([
      this.pool.query<{ metricName: string; n: string }>(numbered(DECIDED_BY_METRIC), [runId]),
      this.pool.query<{ verdict: string; message: string | null }>(numbered(LATEST_MEASUREMENT), [runId]),
    ]);
    return tallyOf(decided.rows, latest.rows[0]);
  }

  async templates(): Promise<NamedTemplate[]> {
    return (await this.pool.query<TemplateRow>(TEMPLATES)).rows.map((row) => namedTemplateOf(row, date));
  }

  async templateNamed(name: string): Promise<NamedTemplate | undefined> {
    const row = (await this.pool.query<TemplateRow>(numbered(TEMPLATE_NAMED), [name])).rows[0];
    return row && namedTemplateOf(row, date);
  }

  async insertTemplate(t: NamedTemplate): Promise<boolean> {
    return ((await this.pool.query(numbered(INSERT_TEMPLATE), [t.name, t.template, isoOf(t.createdAt), isoOf(t.updatedAt)])).rowCount ?? 0) > 0;
  }

  async updateTemplate(name: string, template: string, updatedAt: Date): Promise<boolean> {
    return ((await this.pool.query(numbered(UPDATE_TEMPLATE), [template, isoOf(updatedAt), name])).rowCount ?? 0) > 0;
  }

  async deleteTemplate(name: string): Promise<boolean> {
    return ((await this.pool.query(numbered(DELETE_TEMPLATE), [name])).rowCount ?? 0) > 0;
  }
}
