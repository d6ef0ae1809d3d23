import { type Clock, sleep, systemClock, type TimerHandle } from './clock.js';
import { isTerminalError } from './errors.js';
import type { ClaimedJob, JobQueue, JobTransaction } from './JobQueue.js';

export interface JobContext {
  /** Aborts when the worker stops or the claim is lost (a heartbeat found it taken over). */
  signal: AbortSignal;
  /**
   * Completes the job now, running `effect` in the completion's transaction (exactly once). Returns false when the
   * claim was no longer current. If the handler returns without calling it, the worker completes with the result.
   */
  complete(result?: unknown, effect?: (tx: JobTransaction) => Promise<void>): Promise<boolean>;
}

/** Throw TerminalError to fail the job permanently; anything else is retried with backoff. */
export type JobHandler = (job: ClaimedJob, context: JobContext) => Promise<unknown>;

export interface JobWorkerOptions {
  jobs: JobQueue;
  handler: JobHandler;
  /** How long to wait when no job is due; default 1 s. */
  pollIntervalMs?: number;
  /** Jobs handled at once; default 1. */
  concurrency?: number;
  clock?: Clock;
  onError?: (error: unknown, job?: ClaimedJob) => void;
}

/**
 * Claims due jobs and runs the handler, extending the claim every third of the visibility timeout while it runs.
 * `stop()` aborts running handlers and waits for them; their jobs stay claimed and are retried after the claim expires
 * (or at once by a worker that claims after expiry), exactly as after a crash.
 */
export class JobWorker {
  private readonly jobs: JobQueue;
  private readonly handler: JobHandler;
  private readonly pollIntervalMs: number;
  private readonly concurrency: number;
  private readonly clock: Clock;
  private readonly onError: (error: unknown, job?: ClaimedJob) => void;
  private abort: AbortController | undefined;
  private loops: Promise<void>[] = [];

  constructor(options: JobWorkerOptions) {
    this.jobs = options.jobs;
    this.handler = options.handler;
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.concurrency = Math.max(1, options.concurrency ?? 1);
    this.clock = options.clock ?? systemClock;
    this.onError = options.onError ?? (() => {});
  }

  start(): void {
    if (this.abort) return;
    const abort = new AbortController();
    this.abort = abort;
    for (let i = 0; i < this.concurrency; i++) this.loops.push(this.loop(abort.signal));
  }

  async stop(): Promise<void> {
    const abort = this.abort;
    if (!abort) return;
    this.abort = undefined;
    abort.abort(new Error('job worker stopping'));
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** Claims and runs at most one job; true when one was run. Exposed for tests and one-shot use. */
  async runOnce(signal: AbortSignal = new AbortController().signal): Promise<boolean> {
    const job = await this.jobs.claim();
    if (!job) return false;
    await this.runJob(job, signal);
    return true;
  }

  private async loop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let ran = false;
      try {
        ran = await this.runOnce(signal);
      } catch (error) {
        this.onError(error);
      }
      if (!ran) await sleep(this.clock, this.pollIntervalMs, signal).catch(() => {});
    }
  }

  private async runJob(job: ClaimedJob, outer: AbortSignal): Promise<void> {
    const lost = new AbortController();
    const signal = AbortSignal.any([outer, lost.signal]);
    let timer: TimerHandle | undefined;
    let finished = false;
    const beat = (): void => {
      if (finished) return;
      timer = this.clock.setTimeout(() => {
        this.jobs.heartbeat(job).then(
          (ok) => (ok ? beat() : lost.abort(new Error(`claim on job ${job.id} lost`))),
          (error) => {
            this.onError(error, job);
            beat();
          },
        );
      }, this.jobs.visibilityTimeoutMs / 3);
    };
    beat();
    let completed = false;
    const context: JobContext = {
      signal,
      complete: async (result, effect) => {
        completed = true;
        return this.jobs.complete(job, result, effect);
      },
    };
    try {
      const result = await this.handler(job, context);
      // Fenced: a no-op if the claim was lost meanwhile.
      if (!completed) await this.jobs.complete(job, result);
    } catch (error) {
      if (outer.aborted) return; // stopping: leave the claim to expire, as a crash would
      this.onError(error, job);
      await this.jobs.fail(job, error, isTerminalError(error));
    } finally {
      finished = true;
      if (timer) this.clock.clearTimeout(timer);
    }
  }
}
