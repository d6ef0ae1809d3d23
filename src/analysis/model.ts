/**
 * What an analysis run and its measurements are, as recorded (the AnalysisRun and AnalysisMeasurement tables), and the
 * store port that keeps them (src/store/{sqlite,postgres}/*AnalysisStore.ts). Every measurement is kept: nothing
 * here trims, caps or rolls up (Argo keeps 10 per metric; the issue's users could not see why a gate decided).
 */

/** Argo's phases; RUNNING until decided. */
export type AnalysisPhase = 'RUNNING' | 'SUCCESSFUL' | 'FAILED' | 'INCONCLUSIVE' | 'ERROR';
export const ANALYSIS_OUTCOMES = ['SUCCESSFUL', 'FAILED', 'INCONCLUSIVE', 'ERROR'] as const;
export type AnalysisOutcome = (typeof ANALYSIS_OUTCOMES)[number];

/** A measurement's verdict; WAITING is no data under `noData: WAIT(max)`, not counted, measured again. */
export type MeasurementVerdict = AnalysisOutcome | 'WAITING';

export interface AnalysisRunRecord {
  id: string;
  rolloutId: string;
  cluster: string;
  /** `namespace/name` of the target measured; null for a wave or the whole rollout. */
  target: string | null;
  wave: number | null;
  templateName: string;
  /** The template as submitted (JSON). */
  template: string;
  args: Record<string, string>;
  phase: AnalysisPhase;
  message: string | null;
  metricPhases: Record<string, AnalysisPhase>;
  previousRunId: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

export interface MeasurementRecord {
  id: number;
  runId: string;
  metricName: string;
  query: string;
  /** NaN and ±Inf kept as numbers. */
  values: number[];
  condition: string | null;
  threshold: number | null;
  verdict: MeasurementVerdict;
  noData: boolean;
  dryRun: boolean;
  message: string | null;
  /** The baseline query as sent and its values, when the metric compares with the targets not yet upgraded. */
  baselineQuery: string | null;
  baselineValues: number[] | null;
  startedAt: Date;
  finishedAt: Date;
}

export type NewAnalysisRun = Omit<AnalysisRunRecord, 'phase' | 'message' | 'metricPhases' | 'finishedAt'>;
export type NewMeasurement = Omit<MeasurementRecord, 'id'>;

export interface AnalysisStore {
  createRun(run: NewAnalysisRun): Promise<AnalysisRunRecord>;
  addMeasurement(measurement: NewMeasurement): Promise<MeasurementRecord>;
  finishRun(id: string, end: { phase: AnalysisOutcome; message: string | null; metricPhases: Record<string, AnalysisPhase>; finishedAt: Date }): Promise<void>;
  /** A rollout's runs, oldest first. */
  runsOf(rolloutId: string): Promise<AnalysisRunRecord[]>;
  findRun(id: string): Promise<AnalysisRunRecord | undefined>;
  /** A run's measurements in the order taken, all of them. */
  measurementsOf(runId: string): Promise<MeasurementRecord[]>;
}

/** JSON of values with NaN and ±Inf as Prometheus writes them ("NaN", "+Inf", "-Inf"). */
export function valuesText(values: readonly number[]): string {
  return JSON.stringify(values.map((v) => (Number.isNaN(v) ? 'NaN' : v === Number.POSITIVE_INFINITY ? '+Inf' : v === Number.NEGATIVE_INFINITY ? '-Inf' : v)));
}

export function valuesOf(text: string): number[] {
  try {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed)) return [];
    return parsed.map((v) => (v === 'NaN' ? Number.NaN : v === '+Inf' ? Number.POSITIVE_INFINITY : v === '-Inf' ? Number.NEGATIVE_INFINITY : Number(v)));
  } catch {
    return [];
  }
}
