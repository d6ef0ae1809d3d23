import type pg from 'pg';
import type { AnalysisRunRecord, AnalysisStore, MeasurementRecord, NewAnalysisRun, NewMeasurement } from '../../analysis/model.js';
import { valuesText } from '../../analysis/model.js';
import {
  ANALYSIS_RUNS_OF,
  type AnalysisRunRow,
  analysisRunOf,
  FIND_ANALYSIS_RUN,
  FINISH_ANALYSIS_RUN,
  INSERT_ANALYSIS_RUN,
  INSERT_MEASUREMENT,
  MEASUREMENTS_OF,
  type MeasurementRow,
  measurementOf,
} from '../analysisRows.js';
import { isoOf, numbered } from './pool.js';

const date = (value: Date | string) => (typeof value === 'string' ? new Date(value) : value);

/** Analysis runs and measurements on PostgreSQL, on the history's pg pool. */
export class PgAnalysisStore implements AnalysisStore {
  constructor(private readonly pool: Pick<pg.Pool, 'query'>) {}

  async createRun(run: NewAnalysisRun): Promise<AnalysisRunRecord> {
    const { id, rolloutId, cluster, target, wave, templateName, template, args, previousRunId, startedAt } = run;
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
      isoOf(startedAt),
    ]);
    return (await this.findRun(id))!;
  }

  async addMeasurement(m: NewMeasurement): Promise<MeasurementRecord> {
    const result = await this.pool.query<{ id: number }>(numbered(INSERT_MEASUREMENT), [
      m.runId,
      m.metricName,
      m.query,
      valuesText(m.values),
      m.condition,
      m.threshold,
      m.verdict,
      m.noData,
      m.dryRun,
      m.message,
      m.baselineQuery,
      m.baselineValues === null ? null : valuesText(m.baselineValues),
      isoOf(m.startedAt),
      isoOf(m.finishedAt),
    ]);
    return { ...m, id: Number(result.rows[0]!.id) };
  }

  async finishRun(id: string, end: Parameters<AnalysisStore['finishRun']>[1]): Promise<void> {
    await this.pool.query(numbered(FINISH_ANALYSIS_RUN), [end.phase, end.message, JSON.stringify(end.metricPhases), isoOf(end.finishedAt), id]);
  }

  async runsOf(rolloutId: string): Promise<AnalysisRunRecord[]> {
    return (await this.pool.query<AnalysisRunRow>(numbered(ANALYSIS_RUNS_OF), [rolloutId])).rows.map((row) => analysisRunOf(row, date));
  }

  async findRun(id: string): Promise<AnalysisRunRecord | undefined> {
    const row = (await this.pool.query<AnalysisRunRow>(numbered(FIND_ANALYSIS_RUN), [id])).rows[0];
    return row && analysisRunOf(row, date);
  }

  async measurementsOf(runId: string): Promise<MeasurementRecord[]> {
    return (await this.pool.query<MeasurementRow>(numbered(MEASUREMENTS_OF), [runId])).rows.map((row) => measurementOf(row, date));
  }
}
