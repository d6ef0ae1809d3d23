import { randomUUID } from 'node:crypto';
import type { Job, Prisma, PrismaClient } from '../store/generated/client.js';
import { type Clock, systemClock } from './clock.js';
import { describeError } from './errors.js';

/**
 * Durable jobs: rollout steps that must survive a crash, stored as rows of the `Job` table.
 *
 * Contract (exactly-once to completion):
 * - `enqueue` is idempotent by (queue, key): enqueueing a key that already exists returns the existing job.
 * - `claim` hands a due job to one claimer for a visibility timeout. It is a compare-and-set on (id, state, attempts):
 *   two claimers, in this process or another, never both get the same claim. A claim that is not completed, failed
 *   or extended in time (the process was SIGKILLed, hung or lost its database) expires and the job is claimed again;
 *   each claim increments `attempts`, which also fences out the earlier claimer.
 * - `complete` counts only for the current claim (same claimer and attempt, still RUNNING); a second completion, or
 *   one from a claimer whose claim was taken over, is a no-op returning false. Side effects passed to `complete` run
 *   in the same database transaction as the state change, so they are recorded exactly once.
 * - A handler may therefore START more than once (after a crash or an expired claim) but the job COMPLETES once.
 *   Handlers must be idempotent for effects outside the database (Kubernetes calls: converge to a state, never
 *   "increment"), and should put database effects into `complete`'s transaction.
 * Use one Database (one SQLite connection) per process: better-sqlite3 waits for locks synchronously, so two
 * connections writing from the same thread block each other until the busy timeout. Across processes it is fine.
 */
export type JobState = 'PENDING' | 'RUNNING' | 'DONE' | 'FAILED';

export type JobRecord = Job;

/** A job as held by its claimer; the fencing token is (claimedBy, attempts). */
export interface ClaimedJob extends Job {
  state: 'RUNNING';
  claimedBy: string;
}

export type JobTransaction = Prisma.TransactionClient;

export interface JobQueueOptions {
  prisma: PrismaClient;
  /** Name of the queue; jobs of other queues are invisible. */
  queue: string;
  /** Identity of this claimer (process); default a random id. */
  workerId?: string;
  /** How long a claim lasts without heartbeat; default 30 s. */
  visibilityTimeoutMs?: number;
  /** After this many attempts a failing job becomes FAILED; default 10. */
  maxAttempts?: number;
  /** Delay before retrying after the n-th failed attempt; default 1 s · 2^(n-1), at most 5 min. */
  retryDelayMs?: (attempts: number) => number;
  clock?: Clock;
}

export interface EnqueueOptions {
  payload?: unknown;
  /** Not claimable before this time. */
  runAt?: Date;
}

export class JobQueue {
  readonly queue: string;
  readonly workerId: string;
  readonly visibilityTimeoutMs: number;
  private readonly prisma: PrismaClient;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: (attempts: number) => number;
  private readonly clock: Clock;

  constructor(options: JobQueueOptions) {
    this.prisma = options.prisma;
    this.queue = options.queue;
    this.workerId = options.workerId ?? `worker-${randomUUID()}`;
    this.visibilityTimeoutMs = options.visibilityTimeoutMs ?? 30_000;
    this.maxAttempts = options.maxAttempts ?? 10;
    this.retryDelayMs = options.retryDelayMs ?? ((n) => Math.min(1000 * 2 ** Math.max(0, n - 1), 300_000));
    this.clock = options.clock ?? systemClock;
  }

  /** Creates the job, or returns the one already enqueued under (queue, key) unchanged. */
  async enqueue(key: string, options: EnqueueOptions = {}): Promise<JobRecord> {
    const now = this.now();
    try {
      return await this.upsert(key, options, now);
    } catch (error) {
      // Two enqueuers raced past the upsert's read: the unique (queue, key) index made one fail; the job exists.
      if ((error as { code?: string }).code === 'P2002') {
        const existing = await this.get(key);
        if (existing) return existing;
      }
      throw error;
    }
  }

  private upsert(key: string, options: EnqueueOptions, now: Date): Promise<JobRecord> {
    return this.prisma.job.upsert({
      where: { queue_key: { queue: this.queue, key } },
      create: {
        id: randomUUID(),
        queue: this.queue,
        key,
        payload: JSON.stringify(options.payload ?? {}),
        state: 'PENDING',
        runAt: options.runAt ?? now,
        createdAt: now,
        updatedAt: now,
      },
      update: {},
    });
  }

  /**
   * Claims the next due job (pending, or running with an expired claim), oldest first. Undefined when none is due,
   * or (rarely) when other claimers won every race for the due ones; callers poll again either way.
   */
  async claim(): Promise<ClaimedJob | undefined> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const now = this.now();
      const candidate = await this.prisma.job.findFirst({
        where: {
          queue: this.queue,
          runAt: { lte: now },
          OR: [{ state: 'PENDING' }, { state: 'RUNNING', claimedUntil: { lt: now } }],
        },
        orderBy: [{ runAt: 'asc' }, { createdAt: 'asc' }],
      });
      if (!candidate) return undefined;
      const claimedUntil = new Date(now.getTime() + this.visibilityTimeoutMs);
      // Compare-and-set: only succeeds if nobody claimed (or completed) the job since we read it.
      const won = await this.prisma.job.updateMany({
        where: {
          id: candidate.id,
          state: candidate.state,
          attempts: candidate.attempts,
          ...(candidate.state === 'RUNNING' ? { claimedUntil: { lt: now } } : {}),
        },
        data: { state: 'RUNNING', claimedBy: this.workerId, claimedUntil, attempts: { increment: 1 }, updatedAt: now },
      });
      if (won.count === 1) {
        return { ...candidate, state: 'RUNNING', claimedBy: this.workerId, claimedUntil, attempts: candidate.attempts + 1, updatedAt: now };
      }
    }
    return undefined;
  }

  /** Extends the claim by the visibility timeout; false when the claim was lost (expired and taken, or finished). */
  async heartbeat(job: ClaimedJob): Promise<boolean> {
    const now = this.now();
    const claimedUntil = new Date(now.getTime() + this.visibilityTimeoutMs);
    const res = await this.prisma.job.updateMany({ where: this.fence(job), data: { claimedUntil, updatedAt: now } });
    if (res.count === 1) job.claimedUntil = claimedUntil;
    return res.count === 1;
  }

  /**
   * Marks the job DONE if `job` is still the current claim, running `effect` in the same transaction. Returns false
   * (and rolls `effect` back) when the claim is no longer current: completed already, or taken over.
   */
  async complete(job: ClaimedJob, result?: unknown, effect?: (tx: JobTransaction) => Promise<void>): Promise<boolean> {
    const now = this.now();
    try {
      await this.prisma.$transaction(async (tx) => {
        const res = await tx.job.updateMany({
          where: this.fence(job),
          data: {
            state: 'DONE',
            result: result === undefined ? null : JSON.stringify(result),
            completedAt: now,
            claimedBy: null,
            claimedUntil: null,
            lastError: null,
            updatedAt: now,
          },
        });
        if (res.count !== 1) throw new StaleClaim();
        if (effect) await effect(tx);
      });
      return true;
    } catch (error) {
      if (error instanceof StaleClaim) return false;
      throw error;
    }
  }

  /**
   * Records a failed attempt: back to PENDING after the retry delay, or FAILED once attempts reach maxAttempts (or
   * when `permanent`). False when the claim was no longer current.
   */
  async fail(job: ClaimedJob, error: unknown, permanent = false): Promise<boolean> {
    const now = this.now();
    const giveUp = permanent || job.attempts >= this.maxAttempts;
    const res = await this.prisma.job.updateMany({
      where: this.fence(job),
      data: {
        state: giveUp ? 'FAILED' : 'PENDING',
        lastError: describeError(error),
        runAt: giveUp ? undefined : new Date(now.getTime() + this.retryDelayMs(job.attempts)),
        claimedBy: null,
        claimedUntil: null,
        completedAt: giveUp ? now : undefined,
        updatedAt: now,
      },
    });
    return res.count === 1;
  }

  async get(key: string): Promise<JobRecord | undefined> {
    return (await this.prisma.job.findUnique({ where: { queue_key: { queue: this.queue, key } } })) ?? undefined;
  }

  async list(filter: { state?: JobState; limit?: number } = {}): Promise<JobRecord[]> {
    return this.prisma.job.findMany({
      where: { queue: this.queue, ...(filter.state ? { state: filter.state } : {}) },
      orderBy: [{ createdAt: 'asc' }],
      take: filter.limit ?? 1000,
    });
  }

  private fence(job: ClaimedJob): Prisma.JobWhereInput {
    return { id: job.id, state: 'RUNNING', claimedBy: job.claimedBy, attempts: job.attempts };
  }

  private now(): Date {
    return new Date(this.clock.wallNow());
  }
}

class StaleClaim extends Error {}
