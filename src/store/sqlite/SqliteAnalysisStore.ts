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
import { dateOf, type Sql, sqlDate, sqlDateOrNull } from '../Sql.js';

const date = (value: Date | string) => (typeof value === 'string' ? dateOf(value) : value);

/** Analysis runs and measurements on SQLite, on rollplane's prepared-statement connection (Sql.ts). */
export class SqliteAnalysisStore implements AnalysisStore, AnalysisTemplateStore {
  constructor(private readonly sql: Sql) {}

  async createRun(run: NewAnalysisRun): Promise<AnalysisRunRecord> {
    const { id, rolloutId, cluster, target, wave, templateName, template, args, previousRunId, gateKey = null, attempt = 1, startedAt } = run;
    this.sql.run(
      INSERT_ANALYSIS_RUN,
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
      sqlDate(startedAt),
    );
    const recorded = await runRecorded(this, run);
    // Only with the run this call recorded: another opener's run has its own.
    if (recorded.id === id) for (const q of run.queries ?? []) this.sql.run(INSERT_RUN_QUERY, id, q.metricName, q.query, q.baselineQuery);
    return recorded;
  }

  async addMeasurement(m: NewMeasurement): Promise<MeasurementRecord | undefined> {
    const row = this.sql.get<{ id: number }>(INSERT_MEASUREMENT, ...measurementParams(m, (b) => (b ? 1 : 0), sqlDate));
    return row && { ...m, id: Number(row.id) };
  }

  async finishRun(id: string, end: Parameters<AnalysisStore['finishRun']>[1]): Promise<boolean> {
    return this.sql.run(FINISH_ANALYSIS_RUN, end.phase, end.message, JSON.stringify(end.metricPhases), sqlDateOrNull(end.finishedAt), id).changes > 0;
  }

  async runsOf(rolloutId: string): Promise<AnalysisRunRecord[]> {
    return this.sql.all<AnalysisRunRow>(ANALYSIS_RUNS_OF, rolloutId).map((row) => analysisRunOf(row, date));
  }

  async gateRuns(rolloutId: string, gateKey: string): Promise<AnalysisRunRecord[]> {
    return this.sql.all<AnalysisRunRow>(GATE_RUNS, rolloutId, gateKey).map((row) => analysisRunOf(row, date));
  }

  async runningGateRuns(): Promise<AnalysisRunRecord[]> {
    return this.sql.all<AnalysisRunRow>(RUNNING_GATE_RUNS).map((row) => analysisRunOf(row, date));
  }

  async findRun(id: string): Promise<AnalysisRunRecord | undefined> {
    const row = this.sql.get<AnalysisRunRow>(FIND_ANALYSIS_RUN, id);
    return row && analysisRunOf(row, date);
  }

  async measurementsOf(runId: string): Promise<MeasurementRecord[]> {
    const measurements = this.sql.all<MeasurementRow>(MEASUREMENTS_OF, runId).map((row) => measurementOf(row, date));
    return withRunQueries(measurements, this.sql.all<RunQueryRow>(RUN_QUERIES_OF, runId));
  }

  async measurementTally(runId: string): Promise<MeasurementTally> {
    return tallyOf(
      this.sql.all<{ metricName: string; n: number }>(DECIDED_BY_METRIC, runId),
      this.sql.get<{ verdict: string; message: string | null }>(LATEST_MEASUREMENT, runId),
    );
  }

  async templates(): Promise<NamedTemplate[]> {
    return this.sql.all<TemplateRow>(TEMPLATES).map((row) => namedTemplateOf(row, date));
  }

  async templateNamed(name: string): Promise<NamedTemplate | undefined> {
    const row = this.sql.get<TemplateRow>(TEMPLATE_NAMED, name);
    return row && namedTemplateOf(row, date);
  }

  async insertTemplate(t: NamedTemplate): Promise<boolean> {
    return this.sql.run(INSERT_TEMPLATE, t.name, t.template, sqlDate(t.createdAt), sqlDate(t.updatedAt)).changes > 0;
  }

  async updateTemplate(name: string, template: string, updatedAt: Date): Promise<boolean> {
    return this.sql.run(UPDATE_TEMPLATE, template, sqlDate(updatedAt), name).changes > 0;
  }

  async deleteTemplate(name: string): Promise<boolean> {
    return this.sql.run(DELETE_TEMPLATE, name).changes > 0;
  }
}
