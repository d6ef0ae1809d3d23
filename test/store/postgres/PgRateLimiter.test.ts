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
});
