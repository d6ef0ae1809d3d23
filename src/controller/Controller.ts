import type { Registry } from 'prom-client';
import { type Clock, systemClock } from '../util/clock.js';
import { describeError, isTerminalError } from './errors.js';
import type { HotHistogram, HotValue } from './hotMetrics.js';
import { type ControllerMetrics, controllerMetrics } from './metrics.js';
import { defaultControllerRateLimiter, type RateLimiter } from './rateLimiters.js';
import { keyOf, type Request, requestOf } from './request.js';
import { WorkQueue } from './WorkQueue.js';

export { TerminalError, isTerminalError } from './errors.js';
export { keyOf, requestOf, type Request } from './request.js';

export interface Result {
  /** Reconcile again after this many ms (the key's backoff is reset). */
  requeueAfterMs?: number;
  /** Reconcile again after the rate limiter's delay, without counting as an error. */
  requeue?: boolean;
}

/**
 * Makes the world match the desired state of one object. Level-based: it gets only a key and must re-read what it
 * needs (from informer caches). Throwing (anything) means "retry with backoff"; throwing a TerminalError means
 * "do not retry". The signal aborts when the controller stops (lost leadership or shutdown).
 */
export interface Reconciler {
  reconcile(request: Request, signal: AbortSignal): Promise<Result | void>;
}

/** Something that can enqueue the current state of the world when a controller starts (e.g. an informer cache). */
export interface Source {
  resync(enqueue: (key: string) => void): void;
}

export interface ControllerLogger {
  error(obj: object, msg: string): void;
  debug?(obj: object, msg: string): void;
}

export interface ControllerOptions {
  name: string;
  reconciler: Reconciler;
  /** Concurrent reconciles; default 1. One key is never reconciled by two workers at once. */
  workers?: number;
  /** A fresh limiter for every start; default `defaultControllerRateLimiter()` on the controller's clock. */
  newRateLimiter?: () => RateLimiter;
  clock?: Clock;
  registry?: Registry;
  logger?: ControllerLogger;
  /** Remembered last errors (for snapshots); the oldest key is dropped beyond this; default 1000. */
  maxLastErrors?: number;
}

export interface LastError {
  message: string;
  terminal: boolean;
  /** Wall-clock ISO time. */
  at: string;
}

export interface ControllerSnapshot {
  name: string;
  running: boolean;
  workers: number;
  depth: number;
  delayed: number;
  inFlight: string[];
  retries: Record<string, number>;
  lastErrors: Record<string, LastError>;
}

/** What one reconcile came to; `handleOutcome` turns it into queue operations. */
export type Outcome =
  | { kind: 'success' }
  | { kind: 'requeue' }
  | { kind: 'requeueAfter'; ms: number }
  | { kind: 'error'; error: unknown }
  | { kind: 'terminal'; error: unknown };

/** Yield to the event loop after this many back-to-back reconciles so I/O and timers are not starved. */
const YIELD_EVERY = 512;

/**
 * Runs a Reconciler over a WorkQueue with N workers, with controller-runtime's result semantics. Can be started
 * and stopped repeatedly (leader election): each start gets a fresh queue and rate limiter and resyncs its sources.
 */
export class Controller {
  readonly name: string;
  readonly workers: number;
  private readonly reconciler: Reconciler;
  private readonly clock: Clock;
  private readonly registry: Registry | undefined;
  private readonly newRateLimiter: () => RateLimiter;
  private readonly logger: ControllerLogger | undefined;
  /** Metric children bound to this controller's labels (label lookup per reconcile is the hot path's main cost). */
  private readonly mc:
    | {
        total: Record<'success' | 'error' | 'requeue' | 'requeue_after', HotValue>;
        errors: HotValue;
        terminal: HotValue;
        time: HotHistogram;
        active: HotValue;
      }
    | undefined;
  private readonly maxLastErrors: number;
  private readonly sources: Source[] = [];
  private readonly lastErrors = new Map<string, LastError>();
  /** The current run; `workers` settles when every worker has returned. */
  private run: { queue: WorkQueue; abort: AbortController; workers: Promise<unknown> } | undefined;
  private lastQueue: WorkQueue | undefined;
  /** The stop() in progress, if any. */
  private stopping: Promise<void> | undefined;

  constructor(options: ControllerOptions) {
    this.name = options.name;
    this.reconciler = options.reconciler;
    this.workers = Math.max(1, options.workers ?? 1);
    this.clock = options.clock ?? systemClock;
    this.registry = options.registry;
    this.newRateLimiter = options.newRateLimiter ?? (() => defaultControllerRateLimiter({ clock: this.clock }));
    this.logger = options.logger;
    this.maxLastErrors = options.maxLastErrors ?? 1000;
    const m: ControllerMetrics | undefined = options.registry ? controllerMetrics(options.registry) : undefined;
    if (m) {
      const name = this.name;
      m.maxConcurrent.child(name).value = this.workers;
      this.mc = {
        total: {
          success: m.reconcileTotal.child(name, 'success'),
          error: m.reconcileTotal.child(name, 'error'),
          requeue: m.reconcileTotal.child(name, 'requeue'),
          requeue_after: m.reconcileTotal.child(name, 'requeue_after'),
        },
        errors: m.reconcileErrors.child(name),
        terminal: m.terminalErrors.child(name),
        time: m.reconcileTime.child(name),
        active: m.activeWorkers.child(name),
      };
    }
  }

  get running(): boolean {
    return this.run !== undefined;
  }

  /** The queue of the current (or last) run; undefined before the first start. */
  get queue(): WorkQueue | undefined {
    return this.run?.queue ?? this.lastQueue;
  }

  /** Registers a source to resync on every start (and at once if running). */
  watch(source: Source): void {
    this.sources.push(source);
    if (this.run) source.resync((key) => this.run?.queue.add(key));
  }

  /**
   * Queues every key its sources list, now, also those waiting out a back-off (they run at once; one that succeeds is
   * forgotten by the rate limiter). For when a shared dependency is back after an outage that made every key fail and
   * back off, up to a minute each. Ignored while stopped.
   */
  resync(): void {
    const run = this.run;
    if (!run) return;
    for (const s of this.sources) s.resync((key) => run.queue.add(key));
  }

  /** Enqueues a key (or request); ignored while stopped — sources resync on the next start. */
  enqueue(request: Request | string): void {
    this.run?.queue.add(typeof request === 'string' ? request : keyOf(request));
  }

  enqueueAfter(request: Request | string, ms: number): void {
    this.run?.queue.addAfter(typeof request === 'string' ? request : keyOf(request), ms);
  }

  /**
   * Starts the workers on a fresh queue. If the previous run is still draining (stop() not finished: a reconcile
   * ignoring its abort signal), keys are queued at once but handed out only after it has finished, so a key is never
   * reconciled by an old and a new worker at the same time.
   */
  start(): void {
    if (this.run) return;
    const queue = new WorkQueue({ name: this.name, rateLimiter: this.newRateLimiter(), clock: this.clock, registry: this.registry });
    const abort = new AbortController();
    const launch = (): Promise<unknown> => Promise.all(Array.from({ length: this.workers }, () => this.worker(queue, abort.signal)));
    const workers = this.stopping ? this.stopping.then(() => (abort.signal.aborted ? undefined : launch())) : launch();
    this.run = { queue, abort, workers };
    this.lastQueue = queue;
    for (const s of this.sources) s.resync((key) => queue.add(key));
  }

  /** Aborts in-flight reconciles, stops handing out keys, and resolves once every worker has returned. */
  async stop(): Promise<void> {
    const run = this.run;
    if (!run) return this.stopping;
    this.run = undefined;
    run.abort.abort(new Error(`controller ${this.name} stopping`));
    const previous = this.stopping;
    const stopped = (async () => {
      await previous;
      await run.queue.shutDownWithDrain();
      await run.workers;
    })();
    this.stopping = stopped;
    try {
      await stopped;
    } finally {
      if (this.stopping === stopped) this.stopping = undefined;
    }
  }

  snapshot(): ControllerSnapshot {
    const q = this.queue;
    return {
      name: this.name,
      running: this.running,
      workers: this.workers,
      depth: this.run ? (q?.len() ?? 0) : 0,
      delayed: this.run ? (q?.delayed() ?? 0) : 0,
      inFlight: q?.inFlight() ?? [],
      retries: this.run ? (q?.retries() ?? {}) : {},
      lastErrors: Object.fromEntries(this.lastErrors),
    };
  }

  private async worker(queue: WorkQueue, signal: AbortSignal): Promise<void> {
    let streak = 0;
    for (;;) {
      let key = queue.tryGet();
      if (key === undefined) {
        streak = 0;
        key = await queue.get();
        if (key === undefined) return;
      } else if (++streak >= YIELD_EVERY) {
        streak = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      try {
        await this.reconcileKey(queue, key, signal);
      } catch (error) {
        // Only a bug in the policy code (or a throwing logger) gets here; the worker must survive it.
        this.logger?.error({ controller: this.name, key, err: error }, 'controller worker failed');
      }
    }
  }

  private async reconcileKey(queue: WorkQueue, key: string, signal: AbortSignal): Promise<void> {
    const m = this.mc;
    const started = m ? this.clock.now() : 0;
    if (m) m.active.value++;
    let outcome: Outcome;
    try {
      // `await` of a non-promise or a sync throw inside reconcile both land in catch.
      const result = await this.reconciler.reconcile(requestOf(key), signal);
      if (result && result.requeueAfterMs !== undefined && result.requeueAfterMs > 0) outcome = { kind: 'requeueAfter', ms: result.requeueAfterMs };
      else if (result?.requeue) outcome = { kind: 'requeue' };
      else outcome = { kind: 'success' };
    } catch (error) {
      outcome = isTerminalError(error) ? { kind: 'terminal', error } : { kind: 'error', error };
    }
    if (m) {
      m.active.value--;
      m.time.observe((this.clock.now() - started) / 1000);
    }
    try {
      this.handleOutcome(queue, key, outcome);
    } finally {
      queue.done(key);
    }
  }

  /** The one place that decides queue policy for a reconcile's outcome (controller-runtime reconcileHandler). */
  handleOutcome(queue: WorkQueue, key: string, outcome: Outcome): void {
    const m = this.mc;
    switch (outcome.kind) {
      case 'success':
        queue.forget(key);
        this.lastErrors.delete(key);
        if (m) m.total.success.value++;
        return;
      case 'requeue':
        queue.addRateLimited(key);
        if (m) m.total.requeue.value++;
        return;
      case 'requeueAfter':
        queue.forget(key);
        queue.addAfter(key, outcome.ms);
        this.lastErrors.delete(key);
        if (m) m.total.requeue_after.value++;
        return;
      case 'error':
        queue.addRateLimited(key);
        this.recordError(key, outcome.error, false);
        if (m) m.errors.value++;
        if (m) m.total.error.value++;
        return;
      case 'terminal':
        queue.forget(key);
        this.recordError(key, outcome.error, true);
        if (m) m.terminal.value++;
        if (m) m.errors.value++;
        if (m) m.total.error.value++;
        return;
      default: {
        const never: never = outcome;
        throw new TypeError(`unknown outcome ${JSON.stringify(never)}`);
      }
    }
  }

  private recordError(key: string, error: unknown, terminal: boolean): void {
    const message = describeError(error);
    this.lastErrors.delete(key);
    this.lastErrors.set(key, { message, terminal, at: new Date(this.clock.wallNow()).toISOString() });
    if (this.lastErrors.size > this.maxLastErrors) {
      const oldest = this.lastErrors.keys().next().value;
      if (oldest !== undefined) this.lastErrors.delete(oldest);
    }
    try {
      this.logger?.error({ controller: this.name, key, terminal, err: error }, 'reconcile failed');
    } catch {
      // A logger failure must not change queue policy.
    }
  }
}
