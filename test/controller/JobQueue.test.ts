import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TerminalError } from '../../src/controller/errors.js';
import { FakeClock } from '../../src/controller/FakeClock.js';
import { JobQueue } from '../../src/controller/JobQueue.js';
import { JobWorker } from '../../src/controller/JobWorker.js';
import { type Database, openDatabase } from '../../src/store/db.js';

let dir: string;
let url: string;
let db: Database;
const opened: Database[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'rollplane-jobs-'));
  url = `file:${path.join(dir, 'jobs.db')}`;
  db = await openDatabase(url);
  opened.push(db);
});

afterEach(async () => {
  for (const d of opened.splice(0)) await d.close();
  rmSync(dir, { recursive: true, force: true });
});

async function sideEffects(key: string): Promise<number> {
  return db.prisma.event.count({ where: { type: 'JobSideEffect', name: key } });
}

function effectFor(key: string) {
  return async (tx: Parameters<NonNullable<Parameters<JobQueue['complete']>[2]>>[0]) => {
    await tx.event.create({ data: { type: 'JobSideEffect', name: key } });
  };
}

describe('JobQueue', () => {
  it('enqueues idempotently by (queue, key)', async () => {
    const jobs = new JobQueue({ prisma: db.prisma, queue: 'steps' });
    const a = await jobs.enqueue('rollout-1/step-1', { payload: { n: 1 } });
    const b = await jobs.enqueue('rollout-1/step-1', { payload: { n: 2 } });
    expect(b.id).toBe(a.id);
    expect(JSON.parse(b.payload)).toEqual({ n: 1 });
    const other = new JobQueue({ prisma: db.prisma, queue: 'other' });
    expect((await other.enqueue('rollout-1/step-1')).id).not.toBe(a.id);
    expect(await jobs.list()).toHaveLength(1);
    const racing = await Promise.all(Array.from({ length: 10 }, () => jobs.enqueue('rollout-1/step-2')));
    expect(new Set(racing.map((j) => j.id)).size).toBe(1);
  });

  it('never gives one job to two claimers in one process', async () => {
    const a = new JobQueue({ prisma: db.prisma, queue: 'q', workerId: 'a' });
    const b = new JobQueue({ prisma: db.prisma, queue: 'q', workerId: 'b' });
    for (let i = 0; i < 20; i++) await a.enqueue(`k${i}`);
    const claims = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).claim()));
    const got = claims.filter((c) => c !== undefined).map((c) => c.key);
    expect(new Set(got).size).toBe(got.length);
    for (let more = await a.claim(); more; more = await a.claim()) got.push(more.key);
    expect(got.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`).sort());
  });

  it('never gives one job to two claimer processes; each job completes exactly once', async () => {
    const jobs = new JobQueue({ prisma: db.prisma, queue: 'q' });
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
    for (const k of keys) await jobs.enqueue(k);
    const runChild = (workerId: string) =>
      new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures/jobClaimer.ts'), url, 'q', workerId], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (err += d));
        child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`${workerId} exited ${code}: ${err}`))));
      });
    const [x, y] = await Promise.all([runChild('x'), runChild('y')]);
    expect([...x, ...y].sort()).toEqual([...keys].sort());
    expect(new Set([...x, ...y]).size).toBe(keys.length);
    for (const k of keys) expect(await sideEffects(k)).toBe(1);
    expect(await jobs.list({ state: 'DONE' })).toHaveLength(keys.length);
  });

  it('does not hand out a job before runAt', async () => {
    const clock = new FakeClock(0, Date.now());
    const jobs = new JobQueue({ prisma: db.prisma, queue: 'q', clock });
    await jobs.enqueue('later', { runAt: new Date(clock.wallNow() + 60_000) });
    expect(await jobs.claim()).toBeUndefined();
    await clock.advance(60_000);
    expect((await jobs.claim())?.key).toBe('later');
  });

  it('completes once: a second completion and a stale claimer are no-ops, and their effects roll back', async () => {
    const clock = new FakeClock(0, Date.now());
    const first = new JobQueue({ prisma: db.prisma, queue: 'q', workerId: 'first', visibilityTimeoutMs: 1000, clock });
    const second = new JobQueue({ prisma: db.prisma, queue: 'q', workerId: 'second', visibilityTimeoutMs: 1000, clock });
    await first.enqueue('k');
    const stale = (await first.claim())!;
    expect(await second.claim()).toBeUndefined();
    await clock.advance(1001);
    const current = (await second.claim())!;
    expect(current.attempts).toBe(2);
    expect(await first.heartbeat(stale)).toBe(false);
    expect(await first.complete(stale, 'stale', effectFor('k'))).toBe(false);
    expect(await sideEffects('k')).toBe(0);
    expect(await second.complete(current, { ok: true }, effectFor('k'))).toBe(true);
    expect(await second.complete(current, { ok: true }, effectFor('k'))).toBe(false);
    expect(await sideEffects('k')).toBe(1);
    const row = (await second.get('k'))!;
    expect(row.state).toBe('DONE');
    expect(JSON.parse(row.result!)).toEqual({ ok: true });
    expect(await second.claim()).toBeUndefined();
  });

  it('keeps a claim alive with heartbeats', async () => {
    const clock = new FakeClock(0, Date.now());
    const a = new JobQueue({ prisma: db.prisma, queue: 'q', workerId: 'a', visibilityTimeoutMs: 1000, clock });
    const b = new JobQueue({ prisma: db.prisma, queue: 'q', workerId: 'b', visibilityTimeoutMs: 1000, clock });
    await a.enqueue('k');
    const job = (await a.claim())!;
    for (let i = 0; i < 5; i++) {
      await clock.advance(600);
      expect(await a.heartbeat(job)).toBe(true);
      expect(await b.claim()).toBeUndefined();
    }
  });

  it('retries a failed job with backoff and marks it FAILED after maxAttempts', async () => {
    const clock = new FakeClock(0, Date.now());
    const jobs = new JobQueue({ prisma: db.prisma, queue: 'q', maxAttempts: 3, retryDelayMs: (n) => n * 1000, clock });
    await jobs.enqueue('k');
    let job = (await jobs.claim())!;
    expect(await jobs.fail(job, new Error('first'))).toBe(true);
    expect(await jobs.claim()).toBeUndefined();
    await clock.advance(1000);
    job = (await jobs.claim())!;
    expect(job.attempts).toBe(2);
    await jobs.fail(job, 'second');
    await clock.advance(2000);
    job = (await jobs.claim())!;
    await jobs.fail(job, new Error('third'));
    const row = (await jobs.get('k'))!;
    expect(row.state).toBe('FAILED');
    expect(row.lastError).toBe('third');
    expect(row.attempts).toBe(3);
  });
});

describe('JobWorker', () => {
  it('runs handlers, retries thrown errors and fails TerminalErrors permanently', async () => {
    const clock = new FakeClock(0, Date.now());
    const jobs = new JobQueue({ prisma: db.prisma, queue: 'q', retryDelayMs: () => 0, clock });
    await jobs.enqueue('ok');
    await jobs.enqueue('flaky');
    await jobs.enqueue('bad');
    const seen: string[] = [];
    const worker = new JobWorker({
      jobs,
      clock,
      handler: async (job, ctx) => {
        seen.push(job.key);
        if (job.key === 'flaky' && job.attempts === 1) throw new Error('transient');
        if (job.key === 'bad') throw new TerminalError('cannot ever work');
        await ctx.complete({ key: job.key }, effectFor(job.key));
      },
    });
    while (await worker.runOnce());
    expect([...seen].sort()).toEqual(['bad', 'flaky', 'flaky', 'ok']);
    expect((await jobs.get('ok'))!.state).toBe('DONE');
    expect((await jobs.get('flaky'))!.state).toBe('DONE');
    expect((await jobs.get('bad'))!).toMatchObject({ state: 'FAILED', lastError: 'cannot ever work' });
    expect(await sideEffects('flaky')).toBe(1);
  });

  it('runs jobs concurrently in one process, each completing once with its effect', async () => {
    const jobs = new JobQueue({ prisma: db.prisma, queue: 'q' });
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
    for (const k of keys) await jobs.enqueue(k);
    let running = 0;
    let maxRunning = 0;
    const worker = new JobWorker({
      jobs,
      concurrency: 4,
      pollIntervalMs: 10,
      handler: async (job, ctx) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        await ctx.complete({ ok: true }, effectFor(job.key));
      },
    });
    worker.start();
    try {
      for (let i = 0; i < 1000 && (await jobs.list({ state: 'DONE' })).length < keys.length; i++) await new Promise((r) => setTimeout(r, 10));
    } finally {
      await worker.stop();
    }
    expect((await jobs.list({ state: 'DONE' })).map((j) => j.key).sort()).toEqual([...keys].sort());
    for (const k of keys) expect(await sideEffects(k)).toBe(1);
    expect(maxRunning).toBeGreaterThan(1);
    expect(maxRunning).toBeLessThanOrEqual(4);
  });

  it('resumes a job whose process was SIGKILLed mid-handler and completes it exactly once', async () => {
    const jobs = new JobQueue({ prisma: db.prisma, queue: 'steps', workerId: 'parent' });
    await jobs.enqueue('rollout-7/step-3');
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures/jobChild.ts'), url, 'steps', '2000'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d) => {
          out += d;
          if (out.includes('CLAIMED rollout-7/step-3 1')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`child exited early (${code}): ${stderr}`)));
      });
      const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    const row = (await jobs.get('rollout-7/step-3'))!;
    expect(row).toMatchObject({ state: 'RUNNING', claimedBy: 'child', attempts: 1 });
    // The dead child's claim still holds: nobody may take the job before it expires.
    expect(await jobs.claim()).toBeUndefined();

    // The restarted process: its clock is past the dead claim's visibility timeout.
    const later = new FakeClock(0, Date.now() + 2_001);
    const restarted = new JobQueue({ prisma: db.prisma, queue: 'steps', workerId: 'restarted', clock: later });
    const runs: number[] = [];
    const worker = new JobWorker({
      jobs: restarted,
      clock: later,
      handler: async (job, ctx) => {
        runs.push(job.attempts);
        await ctx.complete({ done: true }, effectFor(job.key));
      },
    });
    expect(await worker.runOnce()).toBe(true);
    expect(await worker.runOnce()).toBe(false);
    expect(runs).toEqual([2]);
    expect(await db.prisma.event.count({ where: { type: 'JobHandlerStarted', name: 'rollout-7/step-3' } })).toBe(1);
    expect(await sideEffects('rollout-7/step-3')).toBe(1);
    expect((await restarted.get('rollout-7/step-3'))!).toMatchObject({ state: 'DONE', claimedBy: null, attempts: 2 });
  });
});
