import { afterAll, expect, it } from 'vitest';
import type pg from 'pg';
import { openPgHistoryStore } from '../../../src/store/postgres/open.js';
import { PgRateLimiter } from '../../../src/store/postgres/PgRateLimiter.js';
import { describeWithPostgres } from '../../helpers/postgres.js';

describeWithPostgres('the shared rate limit on PostgreSQL', (server) => {
  const pools: pg.Pool[] = [];
  afterAll(async () => {
    for (const pool of pools) await pool.end();
  });
  /** Three pools on one database, as three replicas have. */
  const replicas = async (n: number) => {
    const url = await server().createDatabase();
    const opened: pg.Pool[] = [];
    for (let i = 0; i < n; i++) opened.push((await openPgHistoryStore(url, { poolSize: 4 })).pool);
    pools.push(...opened);
    return opened;
  };

  it('grants exactly the burst to one caller across three replicas racing, and says how long to wait', async () => {
    const [a, b, c] = await replicas(3);
    // 1 per minute refills nothing worth a unit while the test runs: what is granted is the burst, exactly.
    const limiters = [a!, b!, c!].map((pool) => new PgRateLimiter(pool, 1, 10));
    const waits = await Promise.all(Array.from({ length: 60 }, (_, i) => limiters[i % 3]!.take('token:tok_race')));
    expect(waits.filter((w) => w === 0)).toHaveLength(10);
    const refused = waits.filter((w) => w > 0);
    expect(refused).toHaveLength(50);
    // One unit at 1 per minute: at most a minute away.
    expect(Math.max(...refused)).toBeLessThanOrEqual(60_000);
    // Another caller has its own bucket.
    expect(await limiters[1]!.take('token:tok_other')).toBe(0);
  });

  it('refills with time at the configured rate, up to the burst, and takes a large amount only whole', async () => {
    const [pool] = await replicas(1);
    const limiter = new PgRateLimiter(pool!, 6, 2);
    expect(await limiter.take('k')).toBe(0);
    expect(await limiter.take('k')).toBe(0);
    const wait = await limiter.take('k');
    // 6 per minute: one unit every 10 s.
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(10_000);
    // 15 s pass (the bucket's clock moved back instead of waiting): 1.5 units, so one take and not two.
    await pool!.query(`UPDATE "RateBucket" SET "refilledAt" = "refilledAt" - 15000 WHERE "key" = 'k'`);
    expect(await limiter.take('k')).toBe(0);
    expect(await limiter.take('k')).toBeGreaterThan(0);
    // A long idle time refills to the burst, not beyond.
    await pool!.query(`UPDATE "RateBucket" SET "refilledAt" = "refilledAt" - 3600000 WHERE "key" = 'k'`);
    expect(await limiter.take('k')).toBe(0);
    expect(await limiter.take('k')).toBe(0);
    expect(await limiter.take('k')).toBeGreaterThan(0);
    // An amount above the burst is capped to the burst (as in process): a full bucket grants it once.
    expect(await limiter.take('big', 50)).toBe(0);
    expect(await limiter.take('big', 1)).toBeGreaterThan(0);
  });

  const bucketKeys = async (pool: pg.Pool) => (await pool.query<{ key: string }>('SELECT "key" FROM "RateBucket" ORDER BY "key"')).rows.map((r) => r.key);

  it('prunes the buckets that are full again and keeps the others, whose budget stays what it was', async () => {
    const [pool] = await replicas(1);
    // 6 per minute, burst 2: one unit every 10 s.
    const limiter = new PgRateLimiter(pool!, 6, 2);
    for (const key of ['idle', 'idle', 'busy', 'busy', 'fresh']) expect(await limiter.take(key)).toBe(0);
    // 'idle' was emptied 25 s ago (full again), 'busy' 10 s ago (one unit of two), 'fresh' just took one (one left).
    await pool!.query(`UPDATE "RateBucket" SET "refilledAt" = "refilledAt" - 25000 WHERE "key" = 'idle'`);
    await pool!.query(`UPDATE "RateBucket" SET "refilledAt" = "refilledAt" - 10000 WHERE "key" = 'busy'`);
    expect(await limiter.prune()).toBe(1);
    expect(await bucketKeys(pool!)).toEqual(['busy', 'fresh']);
    // The kept buckets grant what they held, not more: one unit each, then a wait.
    expect(await limiter.take('busy')).toBe(0);
    expect(await limiter.take('busy')).toBeGreaterThan(0);
    expect(await limiter.take('fresh')).toBe(0);
    expect(await limiter.take('fresh')).toBeGreaterThan(0);
    // The pruned one starts full, as it was.
    expect(await limiter.take('idle')).toBe(0);
    expect(await limiter.take('idle')).toBe(0);
    expect(await limiter.take('idle')).toBeGreaterThan(0);
  });

  it('prunes from a take at most once per interval, without waiting for it', async () => {
    const [pool] = await replicas(1);
    let now = 0;
    const limiter = new PgRateLimiter(pool!, 6, 2, { pruneIntervalMs: 60_000, now: () => now });
    const fullAgain = async (key: string) => {
      await limiter.take(key);
      await pool!.query(`UPDATE "RateBucket" SET "refilledAt" = "refilledAt" - 60000 WHERE "key" = $1`, [key]);
    };
    await fullAgain('a');
    expect(limiter.lastPrune).toBeUndefined(); // the interval has not passed since the limiter started
    now = 60_000;
    await limiter.take('b');
    expect(await limiter.lastPrune).toBe(1);
    expect(await bucketKeys(pool!)).toEqual(['b']);
    await fullAgain('c');
    const first = limiter.lastPrune;
    now = 100_000; // 40 s after the last prune: none
    await limiter.take('b');
    expect(limiter.lastPrune).toBe(first);
    expect(await bucketKeys(pool!)).toEqual(['b', 'c']);
    now = 120_000;
    await limiter.take('b');
    expect(limiter.lastPrune).not.toBe(first);
    expect(await limiter.lastPrune).toBe(1);
    expect(await bucketKeys(pool!)).toEqual(['b']);
  });

  it('never grants more than the burst while prunes race with the takes on three replicas', async () => {
    const [a, b, c] = await replicas(3);
    // 1 per minute: after its first take the bucket is never full again during the test, so no prune may delete it.
    const limiters = [a!, b!, c!].map((pool) => new PgRateLimiter(pool, 1, 10, { pruneIntervalMs: 0 }));
    const takes = Array.from({ length: 60 }, (_, i) => limiters[i % 3]!.take('token:tok_pruned'));
    const prunes = Array.from({ length: 30 }, (_, i) => limiters[i % 3]!.prune());
    const [waits] = await Promise.all([Promise.all(takes), Promise.all(prunes), ...limiters.map((l) => l.lastPrune)]);
    expect(waits.filter((w) => w === 0)).toHaveLength(10);
    expect(await bucketKeys(a!)).toEqual(['token:tok_pruned']);
  });
});
