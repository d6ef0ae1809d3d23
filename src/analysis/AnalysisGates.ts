import { randomUUID } from 'node:crypto';
import type { GateProgress } from '../domain/waves/progress.js';
import { ConflictError, NotFoundError } from '../errors.js';
import type { Clock } from '../util/clock.js';
import {
  AnalysisDetached,
  type AnalysisDecision,
  type AnalysisRunnerDeps,
  AnalysisTakenOver,
  assertMeasurable,
  recordedArgs,
  runQueries,
  resumeAnalysis,
} from './AnalysisRunner.js';
import { latestAttemptProgress } from './gate.js';
import type { AnalysisMetrics } from './metrics.js';
import type { AnalysisRunRecord, AnalysisStore } from './model.js';
import type { PrometheusClient } from './PrometheusClient.js';
import { type AnalysisTemplate, parseAnalysisTemplate, type ResolvedArgs } from './template.js';

/**
 * Analysis as a rollout's gate (issue 33, ADR 0067): the service the staged-run engine (issue 30) asks to open, read,
 * retry and cancel the analysis of one gate, and to continue the runs a previous leader left measuring.
 *
 * Everything it answers comes from the store, never from memory: `progress` reads the gate's latest attempt, so a new
 * leader (or another replica) gives the same answer; `resume` continues every gate's run still RUNNING from its
 * recorded measurements (none lost, none taken twice: each measurement has its number, kept once). The only state in
 * memory is which runs this process is measuring, so that it never measures one twice itself.
 */

/** Which gate of which rollout an analysis decides. */
export interface AnalysisGateRef {
  rolloutId: string;
  /** The gate's position in the run (`before:<wave>`, `after:<wave>`, or one the engine names between targets). */
  gateKey: string;
  cluster: string;
  /** `namespace/name` of the target measured, or null for a wave or the whole rollout. */
  target: string | null;
  wave: number | null;
}

export interface AnalysisGatesDeps {
  store: AnalysisStore;
  clock: Clock;
  /** The client for a metric's `address`, or rollplane's configured Prometheus when it has none (undefined: none). */
  prometheus(address: string | undefined): PrometheusClient | undefined;
  metrics?: AnalysisMetrics;
  logger?: { info(details: object, message: string): void; warn(details: object, message: string): void };
  /** Called once this process recorded a run's end (the engine looks at the gate again). */
  onEnded?(run: AnalysisRunRecord): void;
  newId?: () => string;
}

interface Driving {
  controller: AbortController;
  /** Settles when this process stops measuring the run (decided, cancelled, let go, taken over, failed). */
  done: Promise<AnalysisDecision | undefined>;
}

/** Attempts one analysis gate may have (its first and its retries): each keeps its resolved queries. */
export const MAX_GATE_ATTEMPTS = 20;

export class AnalysisGates {
  private readonly driving = new Map<string, Driving>();
  private closed = false;
  /** Stood down (this replica stopped leading): measures nothing until `resume`. */
  private down = false;

  constructor(private readonly deps: AnalysisGatesDeps) {}

  /**
   * Opens the gate's analysis: records attempt 1 and starts measuring it. Opening a gate that already has a run
   * (another call, another leader) starts nothing new and returns its latest attempt — measured here if it is still
   * RUNNING and no one here measures it. Refused with UNAVAILABLE, before anything is recorded, when a metric has no
   * Prometheus to ask.
   */
  async open(ref: AnalysisGateRef, template: AnalysisTemplate, args: ResolvedArgs): Promise<AnalysisRunRecord> {
    const latest = await this.latest(ref);
    if (latest) {
      if (latest.phase === 'RUNNING') this.drive(latest);
      return latest;
    }
    return this.start(ref, template, args, 1, null);
  }

  /** The gate's state from its latest attempt as recorded (analysisGateProgress); WAITING "not started" without one. */
  async progress(ref: Pick<AnalysisGateRef, 'rolloutId' | 'gateKey'>, options: { errorFails?: boolean } = {}): Promise<GateProgress> {
    return latestAttemptProgress(await this.latest(ref), options);
  }

  /**
   * Measures the gate again (argo-rollouts#2897: a retried analysis re-runs): a new attempt, linked to the one it
   * retries, with the same template and arguments. NOT_FOUND when the gate never opened, CONFLICT while its latest
   * attempt is still measuring. Two retries of the same attempt at once record one new attempt.
   */
  async retry(ref: AnalysisGateRef): Promise<AnalysisRunRecord> {
    const latest = await this.latest(ref);
    if (!latest) throw new NotFoundError(`gate ${ref.gateKey} of rollout ${ref.rolloutId} has no analysis to retry`);
    if (latest.phase === 'RUNNING') {
      throw new ConflictError(`gate ${ref.gateKey} of rollout ${ref.rolloutId}: analysis ${latest.id} (attempt ${latest.attempt}) is still measuring`);
    }
    // Each attempt keeps its resolved queries (up to 2 × 32 KB a metric): retried without end, one gate grew the history
    // by 2 MB a retry, 128 MB a minute at one token's mutation budget (attack 24, H2).
    if (latest.attempt >= MAX_GATE_ATTEMPTS) {
      throw new ConflictError(
        `gate ${ref.gateKey} of rollout ${ref.rolloutId} was measured ${latest.attempt} times, the most one gate is: resume the rollout to accept the gate, or abort it`,
        { details: { attempts: latest.attempt } },
      );
    }
    return this.start(ref, parseAnalysisTemplate(latest.template, latest.args), latest.args, latest.attempt + 1, latest.id);
  }

  /**
   * Stops the gate's running analysis undecided, recording why (`CANCELLED`, e.g. "superseded by rollout …"). A gate
   * whose latest attempt already ended is left as it is and returned; one that never opened gives undefined.
   */
  async cancel(ref: Pick<AnalysisGateRef, 'rolloutId' | 'gateKey'>, reason: string): Promise<AnalysisRunRecord | undefined> {
    const latest = await this.latest(ref);
    if (latest?.phase !== 'RUNNING') return latest;
    // Let go here first, so that no measurement of ours lands after the cancellation; another process's would be
    // refused by the store, as the run is no longer RUNNING.
    await this.letGo(latest.id, `cancelled: ${reason}`);
    const finishedAt = new Date(this.deps.clock.wallNow());
    await this.deps.store.finishRun(latest.id, { phase: 'CANCELLED', message: reason, metricPhases: latest.metricPhases, finishedAt });
    const ended = (await this.deps.store.findRun(latest.id))!;
    if (ended.phase === 'CANCELLED') this.deps.onEnded?.(ended);
    return ended;
  }

  /**
   * Cancels every gate run of the rollout still measuring, recording why (its rollout ended: aborted, superseded,
   * failed elsewhere). Returns the runs it cancelled.
   */
  async cancelRollout(rolloutId: string, reason: string): Promise<AnalysisRunRecord[]> {
    const running = (await this.deps.store.runsOf(rolloutId)).filter((run) => run.phase === 'RUNNING' && run.gateKey !== null);
    const cancelled: AnalysisRunRecord[] = [];
    for (const run of running) {
      const ended = await this.cancel({ rolloutId, gateKey: run.gateKey! }, reason);
      if (ended?.phase === 'CANCELLED') cancelled.push(ended);
    }
    return cancelled;
  }

  /**
   * Continues every gate's run left RUNNING (a leader's start-up, or after a driver failed): each from its recorded
   * measurements. Returns the runs it picked up; those already measured here are skipped.
   */
  async resume(): Promise<AnalysisRunRecord[]> {
    this.assertOpen();
    this.down = false;
    const picked: AnalysisRunRecord[] = [];
    for (const run of await this.deps.store.runningGateRuns()) {
      if (this.driving.has(run.id)) continue;
      this.drive(run);
      picked.push(run);
    }
    return picked;
  }

  /** Runs measured by this process now. */
  measuring(): string[] {
    return [...this.driving.keys()];
  }

  /** Resolves once this process stops measuring the run (at once when it does not measure it). */
  async settled(runId: string): Promise<void> {
    await this.driving.get(runId)?.done;
  }

  /**
   * Stops measuring everything, recording nothing, until `resume` (this replica stopped leading): the runs stay
   * RUNNING for whoever leads next.
   */
  async standDown(): Promise<void> {
    this.down = true;
    await Promise.all([...this.driving.keys()].map((id) => this.letGo(id, 'this process stopped leading')));
  }

  /**
   * Stops measuring everything, recording nothing (shutting down): the runs stay RUNNING for the next
   * leader's `resume`. Nothing can be opened, retried or resumed afterwards.
   */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.driving.keys()].map((id) => this.letGo(id, 'this process let go of the analysis')));
  }

  private async latest(ref: Pick<AnalysisGateRef, 'rolloutId' | 'gateKey'>): Promise<AnalysisRunRecord | undefined> {
    return (await this.deps.store.gateRuns(ref.rolloutId, ref.gateKey)).at(-1);
  }

  private async start(
    ref: AnalysisGateRef,
    template: AnalysisTemplate,
    args: ResolvedArgs,
    attempt: number,
    previousRunId: string | null,
  ): Promise<AnalysisRunRecord> {
    this.assertOpen();
    assertMeasurable(template, args, this.runnerDeps());
    const run = await this.deps.store.createRun({
      id: (this.deps.newId ?? randomUUID)(),
      rolloutId: ref.rolloutId,
      gateKey: ref.gateKey,
      attempt,
      cluster: ref.cluster,
      target: ref.target,
      wave: ref.wave,
      templateName: template.name,
      template: template.source,
      args: recordedArgs(template, args),
      queries: runQueries(template, args),
      previousRunId,
      startedAt: new Date(this.deps.clock.wallNow()),
    });
    // Another leader may have recorded this attempt first: then it is that run, continued here only if RUNNING.
    if (run.phase === 'RUNNING') this.drive(run);
    return run;
  }

  private drive(run: AnalysisRunRecord): void {
    if (this.closed || this.down || this.driving.has(run.id)) return;
    const controller = new AbortController();
    const done = resumeAnalysis(run.id, this.runnerDeps(controller.signal)).then(
      (decision) => {
        if (decision.run.phase !== 'RUNNING') this.deps.onEnded?.(decision.run);
        return decision;
      },
      (error: unknown) => {
        if (error instanceof AnalysisDetached) return undefined;
        if (error instanceof AnalysisTakenOver) this.deps.logger?.info({ runId: run.id }, error.message);
        // The run stays RUNNING in the store: the next resume() continues it from its measurements.
        else this.deps.logger?.warn({ err: error, runId: run.id }, 'analysis stopped measuring; the next resume continues it');
        return undefined;
      },
    );
    const driving: Driving = { controller, done };
    this.driving.set(run.id, driving);
    void done.finally(() => {
      if (this.driving.get(run.id) === driving) this.driving.delete(run.id);
    });
  }

  private async letGo(runId: string, why: string): Promise<void> {
    const driving = this.driving.get(runId);
    if (!driving) return;
    driving.controller.abort(new AnalysisDetached(why));
    await driving.done;
  }

  private runnerDeps(signal?: AbortSignal): AnalysisRunnerDeps {
    const { store, clock, prometheus, metrics } = this.deps;
    return { store, clock, prometheus, ...(metrics ? { metrics } : {}), ...(signal ? { signal } : {}) };
  }

  private assertOpen(): void {
    if (this.closed) throw new ConflictError('analysis gates are closed: this process no longer leads');
  }
}
