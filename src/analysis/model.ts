/**
 * What an analysis run and its measurements are, as recorded (the AnalysisRun and AnalysisMeasurement tables), and the
 * store port that keeps them (src/store/{sqlite,postgres}/*AnalysisStore.ts). Every measurement is kept: nothing
 * here trims, caps or rolls up (Argo keeps 10 per metric; the issue's users could not see why a gate decided).
 */

/** Argo's phases; RUNNING until decided. CANCELLED: stopped undecided by someone, with their reason (ADR 0067). */
export type AnalysisPhase = 'RUNNING' | 'SUCCESSFUL' | 'FAILED' | 'INCONCLUSIVE' | 'ERROR' | 'CANCELLED';
export const ANALYSIS_OUTCOMES = ['SUCCESSFUL', 'FAILED', 'INCONCLUSIVE', 'ERROR'] as const;
export type AnalysisOutcome = (typeof ANALYSIS_OUTCOMES)[number];
/** How a run ended: decided, or cancelled. */
export type AnalysisEnd = Exclude<AnalysisPhase, 'RUNNING'>;

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
  /** The rollout's gate this run decides (`before:<wave>`, …), or null for a run no gate opened. */
  gateKey: string | null;
  /** 1, then one more per retry of the gate. */
  attempt: number;
  startedAt: Date;
  finishedAt: Date | null;
}

export interface MeasurementRecord {
  id: number;
  runId: string;
  metricName: string;
  /** The metric's measurement number in its run (0, 1, …, errors and waits included); unique per run and metric. */
  seq: number;
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

/** A metric's queries with the run's arguments resolved, as each of its measurements sends them. */
export interface RunQuery {
  metricName: string;
  query: string;
  baselineQuery: string | null;
}

export type NewAnalysisRun = Omit<AnalysisRunRecord, 'phase' | 'message' | 'metricPhases' | 'finishedAt' | 'gateKey' | 'attempt'> &
  Partial<Pick<AnalysisRunRecord, 'gateKey' | 'attempt'>> & {
    /**
     * Each metric's queries, kept once with the run: a measurement sending one of them is stored without its text
     * and read back with it (a resolved query can be ~60 KB; attack 19, F5). Without them each keeps its own text.
     */
    queries?: readonly RunQuery[];
  };
export type NewMeasurement = Omit<MeasurementRecord, 'id'>;

export interface AnalysisStore {
  /**
   * Records a RUNNING run. A gate's attempt is recorded once: when the rollout's gate already has a run with this
   * attempt (another leader opened it first), nothing is written and that run is returned — compare the ids.
   */
  createRun(run: NewAnalysisRun): Promise<AnalysisRunRecord>;
  /**
   * Records a measurement while its run is RUNNING and its (metric, seq) is free; otherwise writes nothing and
   * returns undefined: another process took that measurement, or the run ended (decided, cancelled) meanwhile.
   */
  addMeasurement(measurement: NewMeasurement): Promise<MeasurementRecord | undefined>;
  /** Ends a RUNNING run; false (nothing written) when it had already ended. */
  finishRun(id: string, end: { phase: AnalysisEnd; message: string | null; metricPhases: Record<string, AnalysisPhase>; finishedAt: Date }): Promise<boolean>;
  /** A rollout's runs, oldest first. */
  runsOf(rolloutId: string): Promise<AnalysisRunRecord[]>;
  /** A rollout's gate's runs, one per attempt, oldest first. */
  gateRuns(rolloutId: string, gateKey: string): Promise<AnalysisRunRecord[]>;
  /** Every gate's run still RUNNING (a new leader continues them), oldest first. */
  runningGateRuns(): Promise<AnalysisRunRecord[]>;
  findRun(id: string): Promise<AnalysisRunRecord | undefined>;
  /** A run's measurements in the order taken, all of them. */
  measurementsOf(runId: string): Promise<MeasurementRecord[]>;
  /**
   * How far a run is, counted by the database: per metric, its measurements that decided something (not ERROR or
   * WAITING), and the latest measurement's verdict and message (`Rollout.waitingFor` asks on every read: attack 24, H1).
   */
  measurementTally(runId: string): Promise<MeasurementTally>;
}

/** A run's progress without its rows (AnalysisStore.measurementTally). */
export interface MeasurementTally {
  decided: ReadonlyMap<string, number>;
  latest: { verdict: MeasurementVerdict; message: string | null } | undefined;
}

/** An analysis template kept under a name (ADR 0071). */
export interface NamedTemplate {
  name: string;
  /** The template as JSON (parseAnalysisTemplate's `source`). */
  template: string;
  createdAt: Date;
  updatedAt: Date;
}

/** Analysis templates by name: each write changes one row or nothing (false / undefined when it did not apply). */
export interface AnalysisTemplateStore {
  /** Every named template, by name. */
  templates(): Promise<NamedTemplate[]>;
  templateNamed(name: string): Promise<NamedTemplate | undefined>;
  /** False (nothing written) when the name is taken. */
  insertTemplate(template: NamedTemplate): Promise<boolean>;
  /** False (nothing written) when there is no template of that name. */
  updateTemplate(name: string, template: string, updatedAt: Date): Promise<boolean>;
  /** False when there was none. */
  deleteTemplate(name: string): Promise<boolean>;
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
