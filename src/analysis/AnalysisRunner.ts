/**
 * Runs one analysis: a template with its arguments resolved, against one rollout (a target of one cluster, or a wave),
 * to a decision — SUCCESSFUL, FAILED, INCONCLUSIVE or ERROR — by Argo Rollouts' rules (ADR 0061):
 *
 * - each metric's first measurement after `initialDelay`, then one `interval` after the previous one ended, until it
 *   has `count` counted measurements (Successful, Failed or Inconclusive; errors are not counted), or is decided;
 * - a metric is FAILED when its failed measurements exceed `failureLimit`, INCONCLUSIVE when its inconclusive ones
 *   exceed `inconclusiveLimit`, ERROR when its consecutive errors exceed `consecutiveErrorLimit`, SUCCESSFUL at `count`;
 *   an error is measured again after `interval` (10 s without one, as Argo);
 * - the run is the worst of its metrics (Successful < Inconclusive < Error < Failed); once a metric that is not a dry
 *   run is Failed, Error or Inconclusive, no further measurement starts and the metrics not yet decided count as
 *   Successful (Argo's termination);
 * - a dry-run metric is measured and recorded as any other, and never decides the run.
 *
 * Every measurement is written to the store as it is taken, with its resolved query (kept once per run, runQueries), values, condition, threshold,
 * verdict and times, numbered per metric (`seq`); the run's row is written at the start and at the decision. Time
 * comes from the injected Clock.
 *
 * Two processes may drive the same run for a moment (a leader that was not quite dead, and its successor): the store
 * keeps one measurement per number and none once the run ended, so the one that finds its measurement's number taken
 * stops without deciding (AnalysisTakenOver) and the other goes on (ADR 0067).
 */
import { randomUUID } from 'node:crypto';
import { type Clock, sleep } from '../util/clock.js';
import { NotFoundError } from '../errors.js';
import { AnalysisUnavailableError } from './errors.js';
import { applyNoData, BASELINE_WORSE, compareWithBaseline, judge } from './judge.js';
import { type AnalysisMetrics, countDecision, holdSeries } from './metrics.js';
import type { AnalysisEnd, AnalysisOutcome, AnalysisPhase, AnalysisRunRecord, AnalysisStore, MeasurementVerdict, RunQuery } from './model.js';
import { PrometheusError, type PrometheusClient } from './PrometheusClient.js';
import { type AnalysisMetric, type AnalysisTemplate, parseAnalysisTemplate, type ResolvedArgs, resolveArgs } from './template.js';

/** Argo's DefaultErrorRetryInterval: when a metric without an interval must measure again. */
export const RETRY_WITHOUT_INTERVAL_MS = 10_000;

export interface AnalysisRunInput {
  template: AnalysisTemplate;
  /** The built-in arguments (version, cluster, namespace, name, wave) for this run. */
  args: ResolvedArgs;
  rolloutId: string;
  cluster: string;
  /** `namespace/name`, or null for a wave or the whole rollout. */
  target: string | null;
  wave: number | null;
  /** The run this one retries. */
  previousRunId?: string | null;
  /** The rollout's gate this run decides, and its attempt (1, then one more per retry). */
  gateKey?: string | null;
  attempt?: number;
}

export interface AnalysisRunnerDeps {
  store: AnalysisStore;
  clock: Clock;
  /** The client for a metric's `address`, or rollplane's configured Prometheus when it has none (undefined: none). */
  prometheus(address: string | undefined): PrometheusClient | undefined;
  metrics?: AnalysisMetrics;
  /**
   * Stops the run: no further measurement; it is recorded ERROR with the reason — unless the reason is an
   * AnalysisDetached, which records nothing (this process lets go of the run; another continues it).
   */
  signal?: AbortSignal;
  newId?: () => string;
}

export interface AnalysisDecision {
  run: AnalysisRunRecord;
  /** CANCELLED only when someone cancelled the run while this process measured it. */
  phase: AnalysisEnd;
  message: string | null;
  metricPhases: Record<string, AnalysisPhase>;
}

interface MetricState {
  metric: AnalysisMetric;
  client: PrometheusClient;
  phase: AnalysisPhase;
  /** Clock.now() of the next measurement. */
  nextAt: number;
  /** Measurements recorded so far (errors and waits included): the next one's `seq`. */
  taken: number;
  successful: number;
  failed: number;
  inconclusive: number;
  errors: number;
  consecutiveErrors: number;
  /** Wall time of the first of the current streak of no-data answers (noData: WAIT). */
  noDataSince: number | undefined;
  lastMessage: string | null;
  /** A critical baseline comparison failed: the metric fails at once. */
  criticalFailure: string | undefined;
}

const SEVERITY: Record<AnalysisOutcome, number> = { SUCCESSFUL: 0, INCONCLUSIVE: 1, ERROR: 2, FAILED: 3 };

/** An abort reason that lets go of a run without recording anything: a leader stepping down, a run being cancelled. */
export class AnalysisDetached extends Error {
  constructor(why: string) {
    super(why);
    this.name = 'AnalysisDetached';
  }
}

/** This process found a measurement's number taken, or its run ended, in the store: someone else drives (or ended) it. */
export class AnalysisTakenOver extends Error {
  constructor(readonly runId: string) {
    super(`analysis run ${runId} is driven or ended elsewhere: this process stopped measuring it`);
    this.name = 'AnalysisTakenOver';
  }
}

function decided(phase: AnalysisPhase): phase is AnalysisOutcome {
  return phase !== 'RUNNING';
}

/** The run's arguments as recorded: the built-ins given and the template's own values. */
export function recordedArgs(template: AnalysisTemplate, args: ResolvedArgs): Record<string, string> {
  // As resolveArgs resolves them: the run's values over the template's own.
  const out = new Map<string, string>();
  for (const arg of template.args) if (arg.value !== undefined) out.set(arg.name, arg.value);
  for (const [name, value] of Object.entries(args)) if (value !== undefined) out.set(name, value);
  return Object.fromEntries(out);
}

/**
 * Each metric's queries as its measurements send them (the same for the whole run: template and arguments are the
 * run's), kept once with the run. A query that cannot be resolved is sent as written, and such a baseline not at all.
 */
export function runQueries(template: AnalysisTemplate, args: ResolvedArgs): RunQuery[] {
  const resolved = (text: string): string | null => {
    try {
      return resolveArgs(text, template, args);
    } catch {
      return null;
    }
  };
  return template.metrics.map((metric) => ({
    metricName: metric.name,
    query: resolved(metric.query) ?? metric.query,
    baselineQuery: metric.baseline ? resolved(metric.baseline.query) : null,
  }));
}

function conditionText(metric: AnalysisMetric): string | null {
  const parts = [
    metric.successCondition && `success: ${metric.successCondition.text}`,
    metric.failureCondition && `failure: ${metric.failureCondition.text}`,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join('; ') : null;
}

function thresholdOf(metric: AnalysisMetric): number | null {
  return metric.successCondition?.threshold ?? metric.failureCondition?.threshold ?? null;
}

/** Argo's assessMetricStatus, for a metric whose last measurement is finished. */
function assess(state: MetricState): { phase: AnalysisPhase; why: string | null } {
  const { metric } = state;
  if (state.criticalFailure) return { phase: 'FAILED', why: `critical baseline comparison failed` };
  if (state.failed > metric.failureLimit) return { phase: 'FAILED', why: `failed (${state.failed}) > failureLimit (${metric.failureLimit})` };
  if (state.inconclusive > metric.inconclusiveLimit) {
    return { phase: 'INCONCLUSIVE', why: `inconclusive (${state.inconclusive}) > inconclusiveLimit (${metric.inconclusiveLimit})` };
  }
  if (state.consecutiveErrors > metric.consecutiveErrorLimit) {
    return { phase: 'ERROR', why: `consecutive errors (${state.consecutiveErrors}) > consecutiveErrorLimit (${metric.consecutiveErrorLimit})` };
  }
  const counted = state.successful + state.failed + state.inconclusive;
  if (counted >= metric.count) return { phase: 'SUCCESSFUL', why: `count (${metric.count}) reached` };
  return { phase: 'RUNNING', why: null };
}

function newStates(template: AnalysisTemplate, args: ResolvedArgs, deps: AnalysisRunnerDeps): MetricState[] {
  return template.metrics.map((metric) => {
    const client = deps.prometheus(metric.address ? resolveArgs(metric.address, template, args) : undefined);
    if (!client) {
      throw new AnalysisUnavailableError(
        'PROMETHEUS_NOT_CONFIGURED',
        `metric ${JSON.stringify(metric.name)} gives no provider.prometheus.address and rollplane has no Prometheus configured`,
      );
    }
    return {
      metric,
      client,
      phase: 'RUNNING',
      nextAt: deps.clock.now() + metric.initialDelayMs,
      taken: 0,
      successful: 0,
      failed: 0,
      inconclusive: 0,
      errors: 0,
      consecutiveErrors: 0,
      noDataSince: undefined,
      lastMessage: null,
      criticalFailure: undefined,
    };
  });
}

/** Throws AnalysisUnavailableError (PROMETHEUS_NOT_CONFIGURED) when a metric has no Prometheus to ask: check before recording a run. */
export function assertMeasurable(template: AnalysisTemplate, args: ResolvedArgs, deps: AnalysisRunnerDeps): void {
  newStates(template, args, deps);
}

/** Counts one finished measurement into its metric and decides the metric's phase (both when measuring and replaying). */
function count(state: MetricState, verdict: MeasurementVerdict, message: string | null): void {
  state.lastMessage = message;
  if (verdict === 'ERROR') {
    state.errors++;
    state.consecutiveErrors++;
  } else if (verdict !== 'WAITING') {
    state.consecutiveErrors = 0;
    if (verdict === 'SUCCESSFUL') state.successful++;
    else if (verdict === 'FAILED') state.failed++;
    else state.inconclusive++;
  }
  const { phase, why } = assess(state);
  state.phase = phase;
  if (why && phase !== 'SUCCESSFUL') state.lastMessage = `${why}${message ? `; last: ${message}` : ''}`;
}

/** Wait after a measurement: the interval; after an error or no data being waited out, the interval or 10 s. */
function pauseAfter(metric: AnalysisMetric, verdict: MeasurementVerdict): number | undefined {
  return verdict === 'ERROR' || verdict === 'WAITING' ? (metric.intervalMs ?? RETRY_WITHOUT_INTERVAL_MS) : metric.intervalMs;
}

/**
 * Records a new run and measures it to its decision. For a gate's attempt another process already recorded, that
 * run is continued instead (as resumeAnalysis): a gate's attempt is one run, whoever opened it first.
 */
export async function runAnalysis(input: AnalysisRunInput, deps: AnalysisRunnerDeps): Promise<AnalysisDecision> {
  const { template } = input;
  const states = newStates(template, input.args, deps);
  const id = (deps.newId ?? randomUUID)();
  const run = await deps.store.createRun({
    id,
    rolloutId: input.rolloutId,
    cluster: input.cluster,
    target: input.target,
    wave: input.wave,
    templateName: template.name,
    template: template.source,
    args: recordedArgs(template, input.args),
    queries: runQueries(template, input.args),
    previousRunId: input.previousRunId ?? null,
    gateKey: input.gateKey ?? null,
    attempt: input.attempt ?? 1,
    startedAt: new Date(deps.clock.wallNow()),
  });
  if (run.id !== id) return continueRun(run, deps);
  return drive(run, template, input.args, states, deps);
}

/**
 * Continues a run another process started (a leader killed mid-analysis): its recorded measurements are counted as
 * they were decided, none is taken again, and the next is due where the schedule put it (at once when overdue). A run
 * already decided is returned as recorded.
 */
export async function resumeAnalysis(runId: string, deps: AnalysisRunnerDeps): Promise<AnalysisDecision> {
  const run = await deps.store.findRun(runId);
  if (!run) throw new NotFoundError(`analysis run ${runId} does not exist`);
  return continueRun(run, deps);
}

/** The decision of a run that ended: as recorded. */
function recorded(run: AnalysisRunRecord): AnalysisDecision {
  return { run, phase: run.phase as AnalysisEnd, message: run.message, metricPhases: run.metricPhases };
}

async function continueRun(run: AnalysisRunRecord, deps: AnalysisRunnerDeps): Promise<AnalysisDecision> {
  if (run.phase !== 'RUNNING') return recorded(run);
  const template = parseAnalysisTemplate(run.template, run.args);
  const states = newStates(template, run.args, deps);
  const byName = new Map(states.map((state) => [state.metric.name, state]));
  const wallNow = deps.clock.wallNow();
  const dueIn = (wall: number) => deps.clock.now() + Math.max(0, wall - wallNow);
  for (const state of states) state.nextAt = dueIn(run.startedAt.getTime() + state.metric.initialDelayMs);
  for (const m of await deps.store.measurementsOf(run.id)) {
    const state = byName.get(m.metricName);
    if (!state) continue;
    if (m.noData) state.noDataSince ??= m.startedAt.getTime();
    else state.noDataSince = undefined;
    if (m.verdict === 'FAILED' && state.metric.baseline?.critical && m.message?.includes(BASELINE_WORSE)) state.criticalFailure = m.message;
    state.taken = Math.max(state.taken, m.seq + 1);
    count(state, m.verdict, m.message);
    const again = pauseAfter(state.metric, m.verdict);
    state.nextAt = again === undefined ? Number.POSITIVE_INFINITY : dueIn(m.finishedAt.getTime() + again);
  }
  return drive(run, template, run.args, states, deps);
}

/** Measures each metric when due until the run is decided, then records the decision; its series go with it. */
async function drive(
  run: AnalysisRunRecord,
  template: AnalysisTemplate,
  args: ResolvedArgs,
  states: MetricState[],
  deps: AnalysisRunnerDeps,
): Promise<AnalysisDecision> {
  const release = holdSeries(
    deps.metrics,
    states.map(({ metric }) => ({ template: template.name, metric: metric.name })),
  );
  try {
    return await measureToDecision(run, template, args, states, deps);
  } finally {
    release();
  }
}

async function measureToDecision(
  run: AnalysisRunRecord,
  template: AnalysisTemplate,
  args: ResolvedArgs,
  states: MetricState[],
  deps: AnalysisRunnerDeps,
): Promise<AnalysisDecision> {
  const { store, clock } = deps;
  const labels = (metric: AnalysisMetric) => ({ template: template.name, metric: metric.name });
  for (const { metric } of states) {
    const threshold = thresholdOf(metric);
    if (threshold !== null) deps.metrics?.threshold.set(labels(metric), threshold);
  }

  const measure = async (state: MetricState): Promise<void> => {
    const { metric } = state;
    const startedAt = clock.wallNow();
    let query = metric.query;
    let verdict: MeasurementVerdict;
    let values: number[] = [];
    let message: string | null = null;
    let noData = false;
    let baselineQuery: string | null = null;
    let baselineValues: number[] | null = null;
    const ask = (q: string) => state.client.query(q, { timeoutMs: metric.timeoutMs, ...(deps.signal ? { signal: deps.signal } : {}) });
    try {
      query = resolveArgs(metric.query, template, args);
      const judgement = judge(metric, await ask(query));
      values = judgement.values;
      message = judgement.message;
      if (metric.baseline && (judgement.verdict === 'SUCCESSFUL' || judgement.verdict === 'INCONCLUSIVE' || judgement.verdict === 'FAILED')) {
        // The same measure over the targets not yet upgraded: a move the bad way fails the measurement.
        baselineQuery = resolveArgs(metric.baseline.query, template, args);
        const comparison = compareWithBaseline(metric.baseline, values, await ask(baselineQuery));
        baselineValues = comparison.baselineValues;
        message = message ? `${message}; ${comparison.message}` : comparison.message;
        if (comparison.outcome === 'NO_DATA') judgement.verdict = 'NO_DATA';
        else if (comparison.outcome === 'FAIL') {
          judgement.verdict = 'FAILED';
          if (metric.baseline.critical) state.criticalFailure = comparison.message;
        }
      }
      if (judgement.verdict === 'NO_DATA') {
        noData = true;
        state.noDataSince ??= startedAt;
        const decision = applyNoData(metric.noData, state.noDataSince, clock.wallNow());
        verdict = decision.verdict;
        message = `${message} (${decision.because})`;
      } else {
        state.noDataSince = undefined;
        verdict = judgement.verdict;
      }
    } catch (error) {
      if (deps.signal?.aborted) throw error;
      verdict = 'ERROR';
      message = error instanceof PrometheusError ? `${error.reason}: ${error.message}` : `cannot measure: ${(error as Error).message}`;
    }
    const finishedAt = clock.wallNow();
    const kept = await store.addMeasurement({
      runId: run.id,
      metricName: metric.name,
      seq: state.taken,
      query,
      values,
      condition: conditionText(metric),
      threshold: thresholdOf(metric),
      verdict,
      noData,
      dryRun: metric.dryRun,
      message,
      baselineQuery,
      baselineValues,
      startedAt: new Date(startedAt),
      finishedAt: new Date(finishedAt),
    });
    if (!kept) throw new AnalysisTakenOver(run.id);
    state.taken++;
    if (values.length > 0) deps.metrics?.value.set(labels(metric), values[0]!);
    count(state, verdict, message);
    const again = pauseAfter(metric, verdict);
    state.nextAt = again === undefined ? Number.POSITIVE_INFINITY : clock.now() + again;
  };

  const gating = (s: MetricState) => !s.metric.dryRun;
  let stopped: string | undefined;
  try {
    for (;;) {
      const terminating = states.some((s) => gating(s) && (s.phase === 'FAILED' || s.phase === 'ERROR' || s.phase === 'INCONCLUSIVE'));
      const open = states.filter((s) => !decided(s.phase));
      if (terminating) for (const s of open) s.phase = 'SUCCESSFUL';
      if (terminating || open.length === 0) break;
      const next = Math.min(...open.map((s) => s.nextAt));
      if (next > clock.now()) await sleep(clock, next - clock.now(), deps.signal);
      const due = open.filter((s) => s.nextAt <= clock.now());
      const settled = await Promise.allSettled(due.map(measure));
      const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) throw failure.reason;
    }
  } catch (error) {
    if (!deps.signal?.aborted || deps.signal.reason instanceof AnalysisDetached) throw error;
    stopped = `stopped before deciding: ${String((deps.signal.reason as Error)?.message ?? deps.signal.reason ?? 'cancelled')}`;
  }

  const metricPhases = Object.fromEntries(states.map((s) => [s.metric.name, s.phase]));
  let phase: AnalysisOutcome = 'SUCCESSFUL';
  let message: string | null = stopped ?? null;
  if (stopped) phase = 'ERROR';
  else {
    for (const s of states.filter(gating)) {
      const p = s.phase as AnalysisOutcome;
      if (SEVERITY[p] > SEVERITY[phase]) {
        phase = p;
        message = `metric ${JSON.stringify(s.metric.name)}: ${s.lastMessage ?? p}`;
      }
    }
  }
  const finishedAt = new Date(clock.wallNow());
  if (!(await store.finishRun(run.id, { phase, message, metricPhases, finishedAt }))) {
    // Ended meanwhile (cancelled, or decided by another process): that record stands.
    const ended = await store.findRun(run.id);
    if (!ended) throw new NotFoundError(`analysis run ${run.id} does not exist`);
    return recorded(ended);
  }
  countDecision(deps.metrics, phase);
  return { run: { ...run, phase, message, metricPhases, finishedAt }, phase, message, metricPhases };
}
